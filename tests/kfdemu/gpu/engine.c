/* SPDX-License-Identifier: MIT */
/*
 * The model thread: what the command processors of the node's GPUs do.
 * It sleeps on the node strobe until a doorbell rings or the next modelled
 * event is due, fetches AQL packets from the applications' rings, runs them
 * through the time model (model.c), reports read indices back as the CP's
 * rptr report does, and finishes the ioctls kernel/ parked on a preemption.
 */
#include <errno.h>
#include <stddef.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "emu-signal.h"
#include "gpu-internal.h"
#include "preempt-cost.h"

/* Packets consumed per queue per wake-up, so one queue with a ring full of
 * barriers cannot hold node->lock for long. */
#define MAX_PACKETS_PER_FETCH 256u

struct emu_node_hw *emu_node_hw_of(struct emu_node *node)
{
        return node->n_gpus > 0 && node->gpus[0].hw ? node->gpus[0].hw->node_hw : NULL;
}

unsigned emu_gpu_slot(const struct emu_gpu *gpu)
{
        return (unsigned)(gpu - gpu->node->gpus);
}

static struct emu_queue_hw *queue_hw_of(struct emu_model_queue *mq)
{
        return (struct emu_queue_hw *)mq;
}

/* The CP's rptr report, then the completion strobe (the stand-in for the
 * completion signal's interrupt). A dead process's memory is gone: the
 * write fails and nobody waits for the strobe, both harmless. */
static void report_read_index(struct emu_node_hw *nh, struct emu_queue_hw *qh)
{
        struct emu_queue *q = qh->q;

        (void)emu_gpu_vm_write(q, q->read_pointer_address, &qh->read_index, sizeof(qh->read_index));
        emu_completion_strobe_bump(nh, qh->frame, q->doorbell_slot);
}

/* The end of a packet that carries a completion signal (emu-signal.h):
 * its modelled start and end, then the value decremented, before the read
 * index is reported. Only the GPU writes the value while the packet is in
 * flight, so reading and writing it back is the decrement. A signal with
 * an event mailbox then gets its event id written there (the slot of the
 * process's signal page) and the interrupt that makes kfd set the event.
 * A signal the process no longer maps is skipped, as a dead process's read
 * index is. */
static void signal_completion(const struct emu_queue *q, uint64_t signal, uint64_t start_ns, uint64_t end_ns)
{
        const uint64_t stamps[2] = { start_ns, end_ns };
        struct emu_amd_signal s;
        uint64_t event_id;

        if (!signal)
                return;
        _Static_assert(offsetof(struct emu_amd_signal, end_ts) ==
                       offsetof(struct emu_amd_signal, start_ts) + sizeof(uint64_t), "start_ts, end_ts adjacent");
        if (emu_gpu_vm_write(q, signal + offsetof(struct emu_amd_signal, start_ts), stamps, sizeof(stamps)) < 0 ||
            emu_gpu_vm_read(q, &s, signal, offsetof(struct emu_amd_signal, reserved1)) < 0)
                return;
        s.value--;
        if (emu_gpu_vm_write(q, signal + offsetof(struct emu_amd_signal, value), &s.value, sizeof(s.value)) < 0 ||
            !s.event_mailbox_ptr)
                return;
        event_id = s.event_id;
        if (emu_gpu_vm_write(q, s.event_mailbox_ptr, &event_id, sizeof(event_id)) == 0)
                emu_signal_event_interrupt(q->process, s.event_id);
}

/* What keeps the CP from running a queue: the debugger's suspension, the
 * HQD reset that took it off the runlist, an eviction, or a hung CP. */
static bool queue_held(const struct emu_queue *q)
{
        return q->is_suspended || q->is_reset || q->is_evicted || q->gpu->cp_hung;
}

static uint64_t ring_slots(const struct emu_queue *q)
{
        return q->ring_size / EMU_AQL_PACKET_SIZE;
}

static uint64_t doorbell_value(struct emu_node_hw *nh, const struct emu_queue_hw *qh)
{
        return __atomic_load_n(emu_doorbell_word(nh, qh->frame, qh->q->doorbell_slot), __ATOMIC_ACQUIRE);
}

/* A barrier-AND waits until each of its dependency signals reads 0, a
 * barrier-OR until one of them does; a zero handle is a met dependency for
 * AND and an unmet one for OR (HSA runtime spec; hsa.h
 * hsa_barrier_and_packet_t, hsa_barrier_or_packet_t). A signal the process
 * no longer maps counts as met, so a dying process's queue cannot hang. */
static bool barrier_satisfied(const struct emu_queue *q, const struct emu_aql_dispatch_packet *pkt)
{
        bool any = (pkt->header & 0xff) == EMU_AQL_PACKET_TYPE_BARRIER_OR;
        struct emu_aql_barrier_and_packet barrier;

        _Static_assert(sizeof(barrier) == sizeof(*pkt), "one AQL slot");
        memcpy(&barrier, pkt, sizeof(barrier));
        for (unsigned i = 0; i < EMU_AQL_BARRIER_DEPENDENCIES; i++) {
                int64_t value;
                bool met;

                if (!barrier.dep_signal[i])
                        continue;
                met = emu_gpu_vm_read(q, &value, barrier.dep_signal[i] + offsetof(struct emu_amd_signal, value),
                                      sizeof(value)) < 0 ||
                      value == 0;
                if (met == any)
                        return any;
        }
        return !any;
}

static bool is_barrier(uint16_t header)
{
        return (header & 0xff) == EMU_AQL_PACKET_TYPE_BARRIER_AND || (header & 0xff) == EMU_AQL_PACKET_TYPE_BARRIER_OR;
}

/* Consume the packets below `doorbell`, up to the first kernel dispatch,
 * which goes to the model; barriers complete once their dependencies are
 * satisfied (everything before them on the queue has completed, since the
 * queue runs one packet at a time), unknown packets at once. A barrier
 * still waiting stays unconsumed, holding the read index below the write
 * index while the GPU is idle, and the engine looks at it again every
 * barrier_poll_us. */
static bool fetch_packets(struct emu_gpu *gpu, struct emu_queue_hw *qh, uint64_t doorbell)
{
        struct emu_node_hw *nh = gpu->hw->node_hw;
        struct emu_queue *q = qh->q;
        uint64_t fetched = qh->next_fetch;
        bool reported = false;

        qh->barrier_waiting = false;
        if (ring_slots(q) == 0)
                return false;
        for (unsigned n = 0; n < MAX_PACKETS_PER_FETCH && qh->next_fetch < doorbell && !qh->mq.busy; n++) {
                struct emu_aql_dispatch_packet pkt;
                uint64_t addr = q->ring_base_address + (qh->next_fetch % ring_slots(q)) * EMU_AQL_PACKET_SIZE;

                if (emu_gpu_vm_read(q, &pkt, addr, sizeof(pkt)) < 0)
                        break;
                /* Header still INVALID: the packet is not published yet. */
                if ((pkt.header & 0xff) == EMU_AQL_PACKET_TYPE_INVALID)
                        break;
                if (is_barrier(pkt.header) && !barrier_satisfied(q, &pkt)) {
                        qh->barrier_waiting = true;
                        break;
                }
                qh->next_fetch++;
                if ((pkt.header & 0xff) == EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH) {
                        qh->completion_signal = pkt.completion_signal;
                        qh->started_ns = gpu->hw->model.now;
                        emu_model_start(&gpu->hw->model, &qh->mq, pkt.kernel_object, pkt.grid_size_x);
                        break;
                }
                signal_completion(q, pkt.completion_signal, gpu->hw->model.now, gpu->hw->model.now);
                qh->read_index = qh->next_fetch;
                reported = true;
        }
        if (reported)
                report_read_index(nh, qh);
        return qh->next_fetch != fetched;
}

/* Report the read index of dispatches the CP is done with, which may be
 * before their waves are (read_index_mode), and retire finished ones. */
static bool retire_finished(struct emu_gpu *gpu)
{
        bool retired = false;

        for (struct emu_model_queue *mq = gpu->hw->model.queues; mq; mq = mq->next) {
                struct emu_queue_hw *qh = queue_hw_of(mq);

                if (mq->busy && !mq->done && mq->index_due && qh->read_index != qh->next_fetch) {
                        qh->read_index = qh->next_fetch;
                        report_read_index(gpu->hw->node_hw, qh);
                }
                if (!mq->done)
                        continue;
                /* An empty kernel is done as it starts; the model does not
                 * stamp it. */
                signal_completion(qh->q, qh->completion_signal, qh->started_ns,
                                  mq->duration_ns ? mq->finished_at : qh->started_ns);
                emu_model_retire(&gpu->hw->model, mq);
                qh->read_index = qh->next_fetch;
                report_read_index(gpu->hw->node_hw, qh);
                retired = true;
        }
        return retired;
}

/* The doorbells as they are before the clock is read (see run_gpu). */
static void snapshot_doorbells(struct emu_gpu *gpu)
{
        for (struct emu_model_queue *mq = gpu->hw->model.queues; mq; mq = mq->next)
                queue_hw_of(mq)->doorbell_now = doorbell_value(gpu->hw->node_hw, queue_hw_of(mq));
}

static void note_doorbells(struct emu_gpu *gpu)
{
        for (struct emu_model_queue *mq = gpu->hw->model.queues; mq; mq = mq->next)
                queue_hw_of(mq)->doorbell_seen = queue_hw_of(mq)->doorbell_now;
}

/* Bring a GPU up to the present: what its CPs would have done by then.
 * Every entry point that changes a GPU's queues calls it first, since a
 * real CP reacts to a doorbell within microseconds, long before kfdemu's
 * thread. Returns the time it brought the GPU to; *ret_more (may be NULL)
 * says whether work is left for an immediate second call.
 *
 * The model goes from event to event, and a queue whose dispatch finished
 * at model time t starts its next packet at t if that packet was already
 * published when the thread last looked: a thread that wakes late (a busy
 * host) then delays only what it reports, never the modelled timeline of
 * back-to-back kernels. Packets published since the last look start no
 * earlier than now, since nobody knows when within that gap they came.
 * The doorbells are read before the clock, so a packet never starts
 * before it was published: one published between the two readings waits
 * for the next look (its doorbell's strobe brings it at once). */
static uint64_t run_gpu(struct emu_gpu *gpu, bool *ret_more)
{
        struct emu_model *model = &gpu->hw->model;
        uint64_t now;

        snapshot_doorbells(gpu);
        now = emu_now_ns();
        /* A dispatch of length 0 finishes as it starts: go round while
         * packets are consumed, bounded so a ring of empty kernels cannot
         * hold node->lock for long. */
        for (unsigned round = 0; round < MAX_PACKETS_PER_FETCH; round++) {
                uint64_t t = emu_model_next_event(model);
                bool progress;

                if (t > now)
                        t = now;
                emu_model_advance(model, t);
                progress = retire_finished(gpu);
                for (struct emu_model_queue *mq = model->queues; mq; mq = mq->next) {
                        struct emu_queue_hw *qh = queue_hw_of(mq);

                        if (!mq->busy && !queue_held(qh->q))
                                progress |= fetch_packets(gpu, qh, t == now ? qh->doorbell_now : qh->doorbell_seen);
                }
                if (!progress && t == now) {
                        note_doorbells(gpu);
                        if (ret_more)
                                *ret_more = false;
                        return now;
                }
        }
        note_doorbells(gpu);
        if (ret_more)
                *ret_more = true;    /* more to do: come back at once */
        return now;
}

/* When the CP next looks at a barrier still waiting for its signals. */
static uint64_t next_barrier_poll(const struct emu_gpu *gpu, uint64_t now)
{
        for (struct emu_model_queue *mq = gpu->hw->model.queues; mq; mq = mq->next)
                if (queue_hw_of(mq)->barrier_waiting && !queue_held(queue_hw_of(mq)->q))
                        return now + (uint64_t)(gpu->cfg.barrier_poll_us ? gpu->cfg.barrier_poll_us : 1) * 1000;
        return EMU_MODEL_NEVER;
}

static void complete_due_calls(struct emu_node_hw *nh, uint64_t now)
{
        while (nh->pending_calls && nh->pending_calls->due_ns <= now) {
                struct emu_pending_call *pc = nh->pending_calls;

                nh->pending_calls = pc->next;
                emu_call_complete(pc->call, pc->ret);
                free(pc);
        }
}

/* One pass of the command processors; returns when to look again. */
static uint64_t engine_step(struct emu_node *node, uint64_t now)
{
        struct emu_node_hw *nh = emu_node_hw_of(node);
        uint64_t next = EMU_MODEL_NEVER;

        for (unsigned i = 0; i < node->n_gpus; i++) {
                bool more;
                uint64_t t;

                run_gpu(&node->gpus[i], &more);
                t = more ? now : emu_model_next_event(&node->gpus[i].hw->model);
                if (t < next)
                        next = t;
                t = next_barrier_poll(&node->gpus[i], now);
                if (t < next)
                        next = t;
        }
        complete_due_calls(nh, now);
        if (nh->pending_calls && nh->pending_calls->due_ns < next)
                next = nh->pending_calls->due_ns;
        return next;
}

static void wait_strobe(uint32_t *strobe, uint32_t seen, uint64_t now, uint64_t until)
{
        struct timespec timeout;

        if (until == EMU_MODEL_NEVER) {
                syscall(SYS_futex, strobe, FUTEX_WAIT, seen, NULL, NULL, 0);
                return;
        }
        if (until <= now)
                return;
        timeout = (struct timespec){ .tv_sec = (time_t)((until - now) / 1000000000u),
                                     .tv_nsec = (long)((until - now) % 1000000000u) };
        syscall(SYS_futex, strobe, FUTEX_WAIT, seen, &timeout, NULL, 0);
}

static void *engine_main(void *arg)
{
        struct emu_node *node = arg;
        struct emu_node_hw *nh = emu_node_hw_of(node);

        pthread_mutex_lock(&node->lock);
        while (!nh->stop) {
                /* Read the strobe before looking at the doorbells: a ring
                 * after this point changes it and the wait returns at once. */
                uint32_t seen = __atomic_load_n(emu_node_strobe(nh), __ATOMIC_ACQUIRE);
                uint64_t now = emu_now_ns();
                uint64_t next = engine_step(node, now);

                pthread_mutex_unlock(&node->lock);
                wait_strobe(emu_node_strobe(nh), seen, now, next);
                pthread_mutex_lock(&node->lock);
        }
        pthread_mutex_unlock(&node->lock);
        return NULL;
}

static void queue_hw_free(struct emu_queue *q)
{
        if (q->hw)
                emu_text_cache_free(&q->hw->mqds_text);
        free(q->hw);
        q->hw = NULL;
}

static void free_gpu_hw(struct emu_node *node, struct emu_node_hw *nh)
{
        for (struct emu_process *p = node->processes; p; p = p->next)
                for (struct emu_queue *q = p->queues; q; q = q->next)
                        queue_hw_free(q);
        for (unsigned i = 0; i < node->n_gpus; i++) {
                if (node->gpus[i].hw)
                        emu_text_cache_free(&node->gpus[i].hw->hqds_text);
                free(node->gpus[i].hw);
                node->gpus[i].hw = NULL;
        }
        emu_text_cache_free(&nh->sdma_text);
        while (nh->pending_calls) {
                struct emu_pending_call *pc = nh->pending_calls;

                nh->pending_calls = pc->next;
                free(pc);
        }
        emu_aperture_close(nh);
        free(nh);
}

/* How early the read index moves, as a fraction of a dispatch's time.
 * ROCR-Runtime#105: the CP may advance it any time after the dispatch was
 * initiated; rocm-systems#4341: it may do so before all waves completed.
 * On GC 9.4.3 only XCC 0 reports it (kfd_mqd_manager_v9.c clears
 * NO_UPDATE_RPTR for the master XCC only), so with several XCCs it moves
 * when XCC 0's share of the workgroups is done. */
static double read_index_lead(const struct emu_gpu_config *cfg)
{
        switch (cfg->read_index_mode) {
        case EMU_READ_INDEX_AT_DISPATCH:
                return 1.0;
        case EMU_READ_INDEX_MASTER_XCC:
                return cfg->num_xcc > 1 ? cfg->master_xcc_lead_percent / 100.0 : 0.0;
        case EMU_READ_INDEX_AT_COMPLETION:
                break;
        }
        return 0.0;
}

static void model_params(const struct emu_gpu_config *cfg, struct emu_model_params *ret)
{
        uint64_t capacity = (uint64_t)cfg->cu_count * cfg->wg_slots_per_cu;

        *ret = (struct emu_model_params){
                .capacity = capacity ? capacity : 1,
                .wg_slots_per_cu = cfg->wg_slots_per_cu,
                .cu_count = cfg->cu_count,
                .read_index_lead = read_index_lead(cfg),
                /* The HWS time-slices only a runlist it schedules. */
                .max_procs_per_quantum = cfg->mes || !cfg->hws_time_slicing ? 0 : emu_kfd_vmids(cfg),
                .hqd_slots = cfg->mes || !cfg->hws_time_slicing ? 0 : cfg->hqd_slots,
                .quantum_ns = (uint64_t)cfg->hws_quantum_us * 1000,
                .cwsr_ns_per_slot = emu_cwsr_ns_per_slot(cfg),
        };
}

static int gpu_hw_alloc(struct emu_node *node, struct emu_node_hw *nh)
{
        uint64_t now = emu_now_ns();

        for (unsigned i = 0; i < node->n_gpus; i++) {
                struct emu_gpu_hw *hw = calloc(1, sizeof(*hw));
                struct emu_model_params params;

                if (!hw)
                        return -ENOMEM;
                hw->node_hw = nh;
                model_params(&node->gpus[i].cfg, &params);
                emu_model_init(&hw->model, &params, now);
                node->gpus[i].hw = hw;
        }
        return 0;
}

int emu_gpu_start(struct emu_node *node)
{
        struct emu_node_hw *nh;
        int r;

        if (node->n_gpus == 0)
                return -EINVAL;
        nh = calloc(1, sizeof(*nh));
        if (!nh)
                return -ENOMEM;
        nh->aperture_fd = -1;
        pthread_mutex_lock(&node->lock);
        r = emu_aperture_open(nh);
        if (r >= 0)
                r = gpu_hw_alloc(node, nh);
        if (r >= 0)
                r = emu_render_topology(node);
        if (r >= 0) {
                emu_render_debugfs(node);
                r = -pthread_create(&nh->thread, NULL, engine_main, node);
        }
        if (r < 0)
                free_gpu_hw(node, nh);
        else
                nh->thread_running = true;
        pthread_mutex_unlock(&node->lock);
        return r;
}

void emu_gpu_stop(struct emu_node *node)
{
        struct emu_node_hw *nh;

        pthread_mutex_lock(&node->lock);
        nh = emu_node_hw_of(node);
        if (!nh) {
                pthread_mutex_unlock(&node->lock);
                return;
        }
        nh->stop = true;
        emu_node_strobe_bump(nh);
        pthread_mutex_unlock(&node->lock);
        if (nh->thread_running)
                pthread_join(nh->thread, NULL);
        pthread_mutex_lock(&node->lock);
        free_gpu_hw(node, nh);
        pthread_mutex_unlock(&node->lock);
}

/* The sysfs cu_occupancy of `tgid` on `gpu`. */
int emu_gpu_cu_occupancy(struct emu_gpu *gpu, pid_t tgid)
{
        if (!gpu->hw)
                return 0;
        run_gpu(gpu, NULL);
        return emu_model_cu_occupancy(&gpu->hw->model, (uint32_t)tgid);
}

/* Where the MQD buffers of a GPU's queues start in its GART: invented, the
 * lowest MQD address of the real dump (mi308x-mqds-5queues.txt). */
#define MQD_GART_BASE 0x006ed000ull

int emu_gpu_queue_created(struct emu_queue *q)
{
        struct emu_gpu_hw *gh = q->gpu->hw;
        struct emu_queue_hw *qh;
        unsigned frame;
        int r;

        if (!gh)
                return -ENODEV;
        r = emu_frame_get(gh->node_hw, q->process->tgid, emu_gpu_slot(q->gpu), &frame);
        if (r < 0)
                return r;
        qh = calloc(1, sizeof(*qh));
        if (!qh)
                return -ENOMEM;
        qh->q = q;
        qh->frame = frame;
        qh->mq.owner = (uint32_t)q->process->tgid;
        qh->logical_xcc_start = gh->logical_xcc_next++;
        /* allocate_mqd: one buffer with an MQD and control stack per XCC. */
        qh->mqd_gpu_addr = MQD_GART_BASE + gh->next_mqd_addr;
        gh->next_mqd_addr += emu_mqd_stride(q) * (q->gpu->cfg.num_xcc ? q->gpu->cfg.num_xcc : 1);
        /* hqd_load takes the write pointer from the queue's memory; the
         * packets before it are not the new queue's work. A doorbell slot
         * reused from a destroyed queue still holds that queue's last
         * index, so it restarts at the new queue's index. */
        if (emu_gpu_vm_read(q, &qh->read_index, q->read_pointer_address, sizeof(qh->read_index)) < 0)
                qh->read_index = 0;
        qh->next_fetch = qh->read_index;
        qh->doorbell_seen = qh->doorbell_now = qh->read_index;
        __atomic_store_n(emu_doorbell_word(gh->node_hw, frame, q->doorbell_slot), qh->read_index, __ATOMIC_RELEASE);

        run_gpu(q->gpu, NULL);
        emu_model_add_queue(&gh->model, &qh->mq);
        emu_model_set_suspended(&gh->model, &qh->mq, queue_held(q), 0);
        q->hw = qh;
        emu_node_strobe_bump(gh->node_hw);
        return 0;
}

void emu_gpu_queue_destroyed(struct emu_queue *q)
{
        struct emu_gpu_hw *gh = q->gpu->hw;

        if (!q->hw)
                return;
        if (gh) {
                run_gpu(q->gpu, NULL);
                emu_model_remove_queue(&gh->model, &q->hw->mq);
                emu_node_strobe_bump(gh->node_hw);
        }
        queue_hw_free(q);
}

/* The flag flipped before kernel/ asks for the unmap, as in
 * suspend_single_queue; the model notes the waves the queue held then, so
 * that the unmap that follows saves them (the GPU still runs them until
 * it). On HWS a returning queue runs once the remap of the execute that
 * follows maps it, and its waves come back then (emu_gpu_hws_preempt
 * charges the restore); MES re-adds it alone. */
void emu_gpu_queue_suspension_changed(struct emu_queue *q)
{
        struct emu_gpu_hw *gh = q->gpu->hw;
        uint64_t restore_ns;

        if (!q->hw || !gh)
                return;
        run_gpu(q->gpu, NULL);
        restore_ns = q->gpu->cfg.mes ? emu_cwsr_restore_ns(&q->gpu->cfg, q->hw->mq.saved_slots) : EMU_MODEL_NEVER;
        emu_model_set_suspended(&gh->model, &q->hw->mq, queue_held(q), restore_ns);
        emu_node_strobe_bump(gh->node_hw);
}

static bool has_waves(const struct emu_model_queue *mq)
{
        return mq->busy && !mq->done && !mq->suspended;
}

bool emu_gpu_queue_has_waves(const struct emu_queue *q)
{
        if (!q->hw || !q->gpu->hw)
                return false;
        run_gpu(q->gpu, NULL);
        return has_waves(&q->hw->mq);
}

/* execute_queues_cpsch: unmap every queue (the HWS saves the resident
 * waves with CWSR), wait for the fence, map the runlist again. The ioctl
 * returns after the unmap; the queues run again only once the runlist is
 * mapped and their waves are restored. */
uint64_t emu_gpu_hws_preempt(struct emu_gpu *gpu, uint32_t grace_period)
{
        struct emu_gpu_hw *gh = gpu->hw;
        struct emu_runlist_change change = { .grace_period = grace_period };
        struct emu_preempt_cost cost;
        uint64_t now;

        if (!gh) {
                emu_preempt_cost(&gpu->cfg, &change, &cost);
                return cost.ioctl_ns;
        }
        now = run_gpu(gpu, NULL);
        emu_model_unmap_all(&gh->model, &change.saved_slots, &change.restored_slots, &change.mapped_queues);
        emu_preempt_cost(&gpu->cfg, &change, &cost);
        emu_model_stall_device(&gh->model, now + cost.stall_ns);
        emu_node_strobe_bump(gh->node_hw);
        return cost.ioctl_ns;
}

void emu_gpu_hws_map(struct emu_gpu *gpu)
{
        struct emu_gpu_hw *gh = gpu->hw;
        struct emu_runlist_change change = { 0 };
        struct emu_preempt_cost cost;
        uint64_t now;

        if (!gh)
                return;
        now = run_gpu(gpu, NULL);
        /* No queue was mapped, so none has waves to save: this maps the
         * returning queues, and the device waits for the remap and their
         * restore, not for an unmap. */
        emu_model_unmap_all(&gh->model, &change.saved_slots, &change.restored_slots, &change.mapped_queues);
        change.saved_slots = 0;
        emu_preempt_cost(&gpu->cfg, &change, &cost);
        emu_model_stall_device(&gh->model, now + (cost.stall_ns - cost.ioctl_ns));
        emu_node_strobe_bump(gh->node_hw);
}

/* MES REMOVE_QUEUE: only this queue is preempted (kfd-interface.md §9.5). */
uint64_t emu_gpu_mes_remove_queue(struct emu_queue *q)
{
        struct emu_gpu_hw *gh = q->gpu->hw;
        uint64_t latency = (uint64_t)EMU_MES_REMOVE_QUEUE_US * 1000;
        double saved;
        uint64_t now;

        if (!gh || !q->hw)
                return latency;
        now = run_gpu(q->gpu, NULL);
        /* MES ignores SUSPEND_QUEUES' grace period; the default stands in
         * for the firmware's own wait before the save. */
        saved = emu_model_unmap_queue(&gh->model, &q->hw->mq);
        latency += emu_cwsr_save_ns(&q->gpu->cfg, saved, EMU_GRACE_PERIOD_DEFAULT);
        emu_model_stall_queue(&gh->model, &q->hw->mq, now + latency);
        emu_node_strobe_bump(gh->node_hw);
        return latency;
}

void emu_gpu_complete_after(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns)
{
        struct emu_node_hw *nh = emu_node_hw_of(node);
        struct emu_pending_call *pc, **pos;

        if (delay_ns == 0 || !nh) {
                emu_call_complete(call, ret);
                return;
        }
        pc = malloc(sizeof(*pc));
        if (!pc) {
                /* No memory to wait with: finish now, early but correct. */
                emu_call_complete(call, ret);
                return;
        }
        *pc = (struct emu_pending_call){ .due_ns = emu_now_ns() + delay_ns, .call = call, .ret = ret };
        for (pos = &nh->pending_calls; *pos && (*pos)->due_ns <= pc->due_ns; pos = &(*pos)->next)
                ;
        pc->next = *pos;
        *pos = pc;
        emu_node_strobe_bump(nh);
}

void emu_gpu_cancel_completion(struct emu_node *node, struct emu_call *call)
{
        struct emu_node_hw *nh = emu_node_hw_of(node);

        if (!nh)
                return;
        for (struct emu_pending_call **pos = &nh->pending_calls; *pos; pos = &(*pos)->next)
                if ((*pos)->call == call) {
                        struct emu_pending_call *pc = *pos;

                        *pos = pc->next;
                        free(pc);
                        return;
                }
}
