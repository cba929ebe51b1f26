/* SPDX-License-Identifier: MIT */
/*
 * The GPU time model: processor sharing of the device's workgroup slots
 * between the dispatches of its queues, with admission at workgroup-round
 * boundaries, suspension that keeps progress (CWSR), and preemption stalls.
 * README.md, "The GPU time model", is the description; this file is the
 * arithmetic.
 */
#include <math.h>
#include <stddef.h>

#include "gpu-model.h"

/* Below half a nanosecond of alone-time left, a dispatch has finished:
 * completion times are rounded up to whole nanoseconds. */
#define DONE_EPSILON_NS 0.5

void emu_model_init(struct emu_model *m, const struct emu_model_params *params, uint64_t now)
{
        *m = (struct emu_model){ .params = *params, .now = now };
}

static bool is_mapped(const struct emu_model *m, const struct emu_model_queue *q)
{
        return m->n_slices <= 1 || q->slice == m->active_slice;
}

static bool has_work(const struct emu_model_queue *q)
{
        return q->busy && !q->done && !q->suspended;
}

static bool is_running(const struct emu_model *m, const struct emu_model_queue *q)
{
        return has_work(q) && is_mapped(m, q) && m->now >= q->blocked_until && m->now >= q->admit_at &&
               m->now >= m->stall_until;
}

static unsigned active_queues_of(const struct emu_model *m, uint32_t owner)
{
        unsigned n = 0;

        for (const struct emu_model_queue *q = m->queues; q; q = q->next)
                n += q->owner == owner && !q->suspended;
        return n;
}

static bool owner_seen_before(const struct emu_model *m, const struct emu_model_queue *q)
{
        for (const struct emu_model_queue *o = m->queues; o != q; o = o->next)
                if (o->owner == q->owner)
                        return true;
        return false;
}

/* The slices an oversubscribed runlist is run in: processes in runlist
 * order, as many per slice as fit the VMIDs and the HQD slots. A process
 * whose queues are all suspended still takes a VMID (pm_calc_rlib_size
 * counts processes_count); its suspended queues take no slot. */
static void assign_slices(struct emu_model *m)
{
        unsigned slice = 0, procs = 0, queues = 0;

        for (struct emu_model_queue *q = m->queues; q; q = q->next) {
                unsigned k;

                if (owner_seen_before(m, q))
                        continue;
                k = active_queues_of(m, q->owner);
                if (procs > 0 && ((m->params.max_procs_per_quantum && procs + 1 > m->params.max_procs_per_quantum) ||
                                  (m->params.hqd_slots && queues + k > m->params.hqd_slots))) {
                        slice++;
                        procs = queues = 0;
                }
                for (struct emu_model_queue *o = q; o; o = o->next)
                        if (o->owner == q->owner)
                                o->slice = slice;
                procs++;
                queues += k;
        }
        if (slice + 1 != m->n_slices || m->active_slice > slice) {
                m->active_slice = 0;
                m->next_switch = m->now + m->params.quantum_ns;
        }
        m->n_slices = slice + 1;
}

static bool slice_has_work(const struct emu_model *m, unsigned slice)
{
        for (const struct emu_model_queue *q = m->queues; q; q = q->next)
                if (q->slice == slice && has_work(q))
                        return true;
        return false;
}

/* The next slice with work after the active one, or the active one. */
static unsigned next_busy_slice(const struct emu_model *m)
{
        for (unsigned i = 1; i < m->n_slices; i++) {
                unsigned s = (m->active_slice + i) % m->n_slices;

                if (slice_has_work(m, s))
                        return s;
        }
        return m->active_slice;
}

/* When the HWS moves to another slice: at the end of the quantum, or at
 * once when the active slice has nothing to run. */
static uint64_t switch_time(const struct emu_model *m)
{
        if (m->n_slices <= 1 || next_busy_slice(m) == m->active_slice)
                return EMU_MODEL_NEVER;
        if (!slice_has_work(m, m->active_slice))
                return m->now;
        return m->next_switch > m->now ? m->next_switch : m->now;
}

void emu_model_add_queue(struct emu_model *m, struct emu_model_queue *q)
{
        q->next = m->queues;
        m->queues = q;
        assign_slices(m);
}

/* Slots still held by the waves of queues suspended since the last
 * unmap: the GPU runs them until the unmap saves them, so nobody else
 * gets those CUs before. */
static double leaving_slots(const struct emu_model *m)
{
        double held = 0;

        for (const struct emu_model_queue *q = m->queues; q; q = q->next)
                held += q->leaving_slots;
        return held;
}

/* Max-min fair (water-filling) split of the slots between the running
 * dispatches, each capped at its demand: small kernels that fit beside each
 * other run at full speed, kernels that do not fit share the device. */
static void compute_allocations(struct emu_model *m)
{
        double remaining = fmax((double)m->params.capacity - leaving_slots(m), 0);
        unsigned n_unserved = 0;

        for (struct emu_model_queue *q = m->queues; q; q = q->next) {
                q->alloc = 0;
                if (is_running(m, q))
                        n_unserved++;
        }
        while (n_unserved > 0) {
                double share = remaining / n_unserved;
                bool capped_any = false;

                for (struct emu_model_queue *q = m->queues; q; q = q->next)
                        if (is_running(m, q) && q->alloc == 0 && (double)q->demand <= share) {
                                q->alloc = (double)q->demand;
                                remaining -= q->alloc;
                                n_unserved--;
                                capped_any = true;
                        }
                if (capped_any)
                        continue;
                for (struct emu_model_queue *q = m->queues; q; q = q->next)
                        if (is_running(m, q) && q->alloc == 0)
                                q->alloc = share;
                n_unserved = 0;
        }
        /* Waves back on the CUs are no longer in the save area. */
        for (struct emu_model_queue *q = m->queues; q; q = q->next)
                if (q->alloc > 0)
                        q->saved_slots = 0;
}

static double held_slots(const struct emu_model *m, unsigned *ret_n_running)
{
        double held = 0;
        unsigned n = 0;

        for (const struct emu_model_queue *q = m->queues; q; q = q->next)
                if (q->alloc > 0) {
                        held += q->alloc;
                        n++;
                }
        *ret_n_running = n;
        return held;
}

static void refresh(struct emu_model *m);

/* The HWS's context switch between slices: the outgoing slice's resident
 * waves are saved, the incoming slice's saved ones restored, and nothing
 * runs meanwhile. */
static void switch_slice(struct emu_model *m)
{
        unsigned next = next_busy_slice(m);
        double moved = 0;

        for (struct emu_model_queue *q = m->queues; q; q = q->next) {
                if (q->slice == m->active_slice) {
                        moved += q->alloc;
                        q->saved_slots += q->alloc;
                } else if (q->slice == next) {
                        moved += q->saved_slots;
                }
        }
        m->active_slice = next;
        m->next_switch = m->now + m->params.quantum_ns;
        if (moved > 0 && m->now + (uint64_t)ceil(moved * m->params.cwsr_ns_per_slot) > m->stall_until)
                m->stall_until = m->now + (uint64_t)ceil(moved * m->params.cwsr_ns_per_slot);
        refresh(m);
}

/* Slots the dispatcher can hand a newcomer right now without waiting for
 * anybody's workgroups to finish. */
static bool fits_now(const struct emu_model *m, const struct emu_model_queue *q)
{
        unsigned n_running;
        double free_slots = (double)m->params.capacity - held_slots(m, &n_running) - leaving_slots(m);
        double fair = (double)m->params.capacity / (n_running + 1);

        return free_slots + DONE_EPSILON_NS >= fmin((double)q->demand, fair);
}

/* Wall time until the running dispatch `q` finishes its current round of
 * workgroups, i.e. until the CUs it holds become free for others. */
static uint64_t round_end(const struct emu_model *m, const struct emu_model_queue *q)
{
        double rate = q->alloc / (double)q->demand;
        double left = (double)q->wave_ns - fmod(q->progress_ns, (double)q->wave_ns);

        return m->now + (uint64_t)ceil(left / rate);
}

/* The CP has the next packet of a queue in hand when the dispatch before
 * it ends, so the slots that dispatch frees go to it before anybody else's
 * next round of workgroups. Without this every kernel of a multi-kernel
 * request would wait again behind the offline job. On the real MI308X the
 * ~50-kernel ResNet-18 request waited about once beside ResNet-50
 * training: its P50 there is only a few milliseconds above its P99 alone
 * (docs/evaluation.md §1). */
static bool inherits_slots(const struct emu_model *m, const struct emu_model_queue *q, double fair)
{
        return q->finished_at == m->now && q->finished_slots + DONE_EPSILON_NS >= fmin((double)q->demand, fair);
}

/* A dispatch that arrives while the device is full waits until the first
 * dispatch that holds more than its new fair share ends a round of
 * workgroups: the hardware dispatcher cannot take CUs from running
 * workgroups, only fill the ones that finish. This is what makes a small
 * kernel wait behind a big one on a real GPU. */
static uint64_t admission_time(const struct emu_model *m, const struct emu_model_queue *q)
{
        unsigned n_running;
        uint64_t best = EMU_MODEL_NEVER;
        double fair;

        if (fits_now(m, q))
                return m->now;
        held_slots(m, &n_running);
        fair = (double)m->params.capacity / (n_running + 1);
        if (inherits_slots(m, q, fair))
                return m->now;
        for (const struct emu_model_queue *o = m->queues; o; o = o->next)
                if (o != q && o->alloc > fair) {
                        uint64_t t = round_end(m, o);
                        if (t < best)
                                best = t;
                }
        return best == EMU_MODEL_NEVER ? m->now : best;
}

/* Recompute the split; a waiting dispatch is let in early when the device
 * frees up by other means (a dispatch finished or was suspended). */
static void refresh(struct emu_model *m)
{
        compute_allocations(m);
        for (struct emu_model_queue *q = m->queues; q; q = q->next)
                if (q->busy && !q->done && q->admit_at > m->now && fits_now(m, q)) {
                        q->admit_at = m->now;
                        compute_allocations(m);
                }
}

static bool in_last_round(const struct emu_model_queue *q)
{
        return q->progress_ns + DONE_EPSILON_NS >= q->tail_from_ns;
}

/* When the running dispatch `q` finishes, or, before its last round, when
 * that round starts and its demand drops to the workgroups left. */
static uint64_t phase_end_time(const struct emu_model *m, const struct emu_model_queue *q)
{
        double end = in_last_round(q) ? (double)q->duration_ns : q->tail_from_ns;
        double left;

        if (!q->index_due && q->index_from_ns > q->progress_ns && q->index_from_ns < end)
                end = q->index_from_ns;
        left = end - q->progress_ns;

        if (left <= DONE_EPSILON_NS)
                return m->now;
        return m->now + (uint64_t)ceil(left * (double)q->demand / q->alloc);
}

uint64_t emu_model_next_event(const struct emu_model *m)
{
        uint64_t next = switch_time(m);

        for (const struct emu_model_queue *q = m->queues; q; q = q->next) {
                uint64_t t = EMU_MODEL_NEVER;

                if (!q->busy || q->done || q->suspended)
                        continue;
                if (q->alloc > 0)
                        t = phase_end_time(m, q);
                else if (m->stall_until > m->now)
                        t = m->stall_until;
                else if (q->blocked_until > m->now)
                        t = q->blocked_until;
                else if (q->admit_at > m->now)
                        t = q->admit_at;
                if (t < next)
                        next = t;
        }
        return next;
}

void emu_model_advance(struct emu_model *m, uint64_t now)
{
        if (switch_time(m) <= m->now)
                switch_slice(m);
        while (m->now < now) {
                uint64_t step_end = emu_model_next_event(m);
                double dt;

                if (step_end > now)
                        step_end = now;
                dt = (double)(step_end - m->now);
                for (struct emu_model_queue *q = m->queues; q; q = q->next) {
                        if (q->alloc <= 0)
                                continue;
                        q->progress_ns += dt * q->alloc / (double)q->demand;
                        if (in_last_round(q))
                                q->demand = q->tail_demand;
                        if (q->progress_ns + DONE_EPSILON_NS >= q->index_from_ns)
                                q->index_due = true;
                        if ((double)q->duration_ns - q->progress_ns <= DONE_EPSILON_NS) {
                                q->progress_ns = (double)q->duration_ns;
                                q->done = true;
                                q->finished_at = step_end;
                                q->finished_slots = q->alloc;
                        }
                }
                m->now = step_end;
                refresh(m);
                if (switch_time(m) <= m->now)
                        switch_slice(m);
        }
}

void emu_model_start(struct emu_model *m, struct emu_model_queue *q, uint64_t duration_ns,
                     uint32_t workgroups)
{
        uint64_t wgs = workgroups ? workgroups : 1;
        uint64_t demand = wgs < m->params.capacity ? wgs : m->params.capacity;
        uint64_t rounds = (wgs + demand - 1) / demand;

        q->busy = true;
        q->done = duration_ns == 0;
        q->duration_ns = duration_ns;
        q->wave_ns = duration_ns / rounds ? duration_ns / rounds : 1;
        /* The tail effect: the last round holds only the workgroups left,
         * and the slots it leaves free take newcomers without a wait. */
        q->tail_demand = wgs - (rounds - 1) * demand;
        q->tail_from_ns = (double)((rounds - 1) * q->wave_ns);
        q->demand = rounds == 1 ? q->tail_demand : demand;
        q->progress_ns = 0;
        q->index_from_ns = (double)duration_ns * (1.0 - m->params.read_index_lead);
        q->index_due = q->done || q->index_from_ns <= DONE_EPSILON_NS;
        q->alloc = 0;
        q->admit_at = m->now;
        q->admit_at = admission_time(m, q);
        refresh(m);
}

void emu_model_retire(struct emu_model *m, struct emu_model_queue *q)
{
        q->busy = false;
        q->done = false;
        q->index_due = false;
        q->alloc = 0;
        refresh(m);
}

void emu_model_remove_queue(struct emu_model *m, struct emu_model_queue *q)
{
        for (struct emu_model_queue **p = &m->queues; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        break;
                }
        q->next = NULL;
        assign_slices(m);
        refresh(m);
}

void emu_model_set_suspended(struct emu_model *m, struct emu_model_queue *q, bool suspended,
                             uint64_t restore_ns)
{
        if (q->suspended == suspended)
                return;
        if (suspended && q->alloc > 0) {
                q->leaving_slots += q->alloc;
                q->saved_slots += q->alloc;
        }
        q->suspended = suspended;
        assign_slices(m);
        if (!suspended && restore_ns == EMU_MODEL_NEVER)
                q->blocked_until = EMU_MODEL_NEVER;
        else if (!suspended && q->busy && m->now + restore_ns > q->blocked_until)
                q->blocked_until = m->now + restore_ns;
        refresh(m);
}

void emu_model_unmap_all(struct emu_model *m, double *ret_saved, double *ret_restored, unsigned *ret_mapped)
{
        double saved = 0, restored = 0;
        unsigned mapped = 0;

        for (struct emu_model_queue *q = m->queues; q; q = q->next) {
                saved += q->leaving_slots;
                q->leaving_slots = 0;
                if (q->suspended)
                        continue;
                /* Mapped by the remap that follows (the device stall). */
                if (q->blocked_until == EMU_MODEL_NEVER)
                        q->blocked_until = m->now;
                saved += q->alloc;
                q->saved_slots += q->alloc;
                /* The HWS maps the whole (chained) runlist but runs only
                 * the active slice: the others stay in their save areas. */
                if (is_mapped(m, q))
                        restored += q->saved_slots;
                mapped++;
        }
        *ret_saved = saved;
        *ret_restored = restored;
        *ret_mapped = mapped;
        refresh(m);
}

double emu_model_unmap_queue(struct emu_model *m, struct emu_model_queue *q)
{
        double saved = q->leaving_slots + (q->suspended ? 0 : q->alloc);

        if (!q->suspended)
                q->saved_slots += q->alloc;
        q->leaving_slots = 0;
        refresh(m);
        return saved;
}

void emu_model_stall_device(struct emu_model *m, uint64_t until)
{
        if (until > m->stall_until)
                m->stall_until = until;
        refresh(m);
}

void emu_model_stall_queue(struct emu_model *m, struct emu_model_queue *q, uint64_t until)
{
        if (until > q->blocked_until)
                q->blocked_until = until;
        refresh(m);
}

int emu_model_cu_occupancy(const struct emu_model *m, uint32_t owner)
{
        double slots = 0;
        double cus;

        for (const struct emu_model_queue *q = m->queues; q; q = q->next)
                if (q->owner == owner)
                        slots += q->alloc;
        if (m->params.wg_slots_per_cu == 0)
                return 0;
        cus = ceil(slots / m->params.wg_slots_per_cu - 1e-9);
        return cus > m->params.cu_count ? (int)m->params.cu_count : (int)cus;
}
