/* SPDX-License-Identifier: MIT */
#include "join.h"

#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "cleanup.h"

/* AQL packets are 64 bytes; the log gives ring sizes in packets. */
#define AQL_PACKET_SIZE 64

const char *qf_source_name(enum qf_source s)
{
        switch (s) {
        case QF_SOURCE_SYSFS:
                return "sysfs";
        case QF_SOURCE_SNAPSHOT:
                return "snapshot";
        case QF_SOURCE_MQDS:
                return "mqds";
        case QF_SOURCE_HQDS:
                return "hqds";
        case QF_SOURCE_LOG:
                return "log";
        }
        return "?";
}

void qf_sources_format(unsigned sources, const char *sep, char *buf, size_t size)
{
        size_t len = 0;
        buf[0] = 0;
        for (unsigned bit = 0; bit < QF_SOURCE_COUNT; bit++)
                if (sources & (1U << bit))
                        len += (size_t) snprintf(buf + len, len < size ? size - len : 0, "%s%s", len ? sep : "",
                                                 qf_source_name(1U << bit));
}

/* Where a source's statement came from, for the conflict record. */
struct origin {
        enum qf_source source;
        const char *file;
        unsigned long line;
};

static void merge(struct qf_process *p, const struct qf_queue *q, struct qf_value *field, const char *what,
                  uint64_t v, const struct origin *o)
{
        if (!field->sources) {
                *field = (struct qf_value){ .v = v, .sources = o->source };
                return;
        }
        if (field->v == v) {
                field->sources |= o->source;
                return;
        }
        char said[64];
        qf_sources_format(field->sources, "+", said, sizeof(said));
        char queue[32] = "";
        if (q->queue_id.sources)
                snprintf(queue, sizeof(queue), "queue %llu: ", (unsigned long long) q->queue_id.v);
        qf_diag_add(&p->conflicts, o->file, o->line, "%s%s: %s says 0x%llx, %s said 0x%llx", queue, what,
                    qf_source_name(o->source), (unsigned long long) v, said, (unsigned long long) field->v);
}

static struct qf_process *find_process(struct qf_result *r, bool has_pid, pid_t pid)
{
        for (size_t i = 0; i < r->n_processes; i++)
                if (r->processes[i].has_pid == has_pid && (!has_pid || r->processes[i].pid == pid))
                        return &r->processes[i];
        return NULL;
}

static bool wanted(const struct qf_inputs *in, pid_t pid)
{
        if (in->n_pids == 0)
                return true;
        for (size_t i = 0; i < in->n_pids; i++)
                if (in->pids[i] == pid)
                        return true;
        return false;
}

static struct qf_process *add_process(struct qf_result *r, bool has_pid, pid_t pid)
{
        struct qf_process *p = find_process(r, has_pid, pid);
        if (p)
                return p;
        if (r->n_processes >= QF_MAX_PROCESSES)
                return NULL;
        p = QF_APPEND(r->processes, r->n_processes);
        if (p) {
                p->has_pid = has_pid;
                p->pid = has_pid ? pid : 0;
        }
        return p;
}

static struct qf_process *get_process(struct qf_result *r, const struct qf_inputs *in, pid_t pid)
{
        return wanted(in, pid) ? add_process(r, true, pid) : NULL;
}

/* Log queues no line tied to a process are kept apart from every pid,
 * whichever processes were asked about: the user cannot have excluded
 * them. */
static struct qf_process *get_unknown_process(struct qf_result *r)
{
        return add_process(r, false, 0);
}

static struct qf_queue *new_queue(struct qf_process *p)
{
        /* One queue can appear up to four times when sources cannot be
         * joined (sysfs, an unpaired MQD, the log's two meanings). */
        if (p->n_queues >= QF_MAX_QUEUES_PER_PROCESS * 4)
                return NULL;
        return QF_APPEND(p->queues, p->n_queues);
}

static bool same_address(const struct qf_value *a, uint64_t v)
{
        return a->sources && a->v == v && v != 0;
}

/* A queue of p that one of these addresses identifies. */
static struct qf_queue *find_by_addresses(struct qf_process *p, uint64_t ring_base, uint64_t rptr, uint64_t wptr)
{
        for (size_t i = 0; i < p->n_queues; i++) {
                struct qf_queue *q = &p->queues[i];
                if (same_address(&q->ring_base, ring_base) || same_address(&q->rptr_addr, rptr) ||
                    same_address(&q->wptr_addr, wptr))
                        return q;
        }
        return NULL;
}

static void add_sysfs(struct qf_process *p, const struct qf_sysfs_process *s)
{
        p->sysfs = s;
        p->has_pasid = s->has_pasid;
        p->pasid = s->pasid;
        for (size_t i = 0; i < s->n_queues; i++) {
                struct qf_queue *q = new_queue(p);
                if (!q)
                        return;
                const struct origin o = { QF_SOURCE_SYSFS, "sysfs", 0 };
                q->sources = QF_SOURCE_SYSFS;
                merge(p, q, &q->queue_id, "queue id", s->queues[i].queue_id, &o);
                merge(p, q, &q->gpu_id, "gpu id", s->queues[i].gpu_id, &o);
                merge(p, q, &q->ring_size, "ring size", s->queues[i].size, &o);
                q->has_sysfs_type = true;
                q->sysfs_type = s->queues[i].type;
        }
}

static void add_snapshot(struct qf_process *p, const struct qf_snapshot *snap)
{
        for (size_t i = 0; i < snap->n; i++) {
                const struct qf_snapshot_queue *e = &snap->queues[i];
                struct qf_queue *q = NULL;
                for (size_t k = 0; k < p->n_queues && !q; k++)
                        if (p->queues[k].queue_id.sources && p->queues[k].queue_id.v == e->queue_id)
                                q = &p->queues[k];
                if (!q && !(q = new_queue(p)))
                        return;
                const struct origin o = { QF_SOURCE_SNAPSHOT, "snapshot", 0 };
                q->sources |= QF_SOURCE_SNAPSHOT;
                q->snapshot = e;
                merge(p, q, &q->queue_id, "queue id", e->queue_id, &o);
                merge(p, q, &q->gpu_id, "gpu id", e->gpu_id, &o);
                merge(p, q, &q->ring_size, "ring size", e->ring_size, &o);
                merge(p, q, &q->ring_base, "ring base", e->ring_base, &o);
                merge(p, q, &q->rptr_addr, "read pointer address", e->rptr_addr, &o);
                merge(p, q, &q->wptr_addr, "write pointer address", e->wptr_addr, &o);
        }
}

/* Without addresses on the sysfs side, the only honest pairing is one to
 * one: the MQD is the process's only one of that size on that GPU, and one
 * address-less queue there has that size. */
static struct qf_queue *find_by_size(struct qf_process *p, const struct qf_mqds *all, const struct qf_mqd_queue *m)
{
        unsigned same = 0;
        for (size_t i = 0; i < all->n; i++)
                same += all->queues[i].pid == m->pid && all->queues[i].gpu_id == m->gpu_id &&
                        all->queues[i].ring_size == m->ring_size;
        if (same != 1)
                return NULL;

        struct qf_queue *found = NULL;
        for (size_t i = 0; i < p->n_queues; i++) {
                struct qf_queue *q = &p->queues[i];
                if (q->ring_base.sources || q->mqd || !q->gpu_id.sources || q->gpu_id.v != m->gpu_id ||
                    !q->ring_size.sources || q->ring_size.v != m->ring_size)
                        continue;
                if (found)
                        return NULL;
                found = q;
        }
        return found;
}

static void add_mqd(struct qf_process *p, const struct qf_mqds *all, const struct qf_mqd_queue *m, const char *file)
{
        struct qf_queue *q = NULL;
        if (m->has_addresses)
                q = find_by_addresses(p, m->ring_base, m->rptr_addr, m->wptr_addr);
        if (!q && m->ring_size && (q = find_by_size(p, all, m)))
                q->paired_by_size = true;
        if (!q && !(q = new_queue(p)))
                return;
        const struct origin o = { QF_SOURCE_MQDS, file, m->line };
        q->sources |= QF_SOURCE_MQDS;
        q->mqd = m;
        merge(p, q, &q->gpu_id, "gpu id", m->gpu_id, &o);
        if (m->ring_size)
                merge(p, q, &q->ring_size, "ring size", m->ring_size, &o);
        if (m->has_addresses) {
                merge(p, q, &q->ring_base, "ring base", m->ring_base, &o);
                merge(p, q, &q->rptr_addr, "read pointer address", m->rptr_addr, &o);
                merge(p, q, &q->wptr_addr, "write pointer address", m->wptr_addr, &o);
                if (m->kind == QF_MQD_COMPUTE)
                        merge(p, q, &q->doorbell_offset, "doorbell offset", m->doorbell_offset, &o);
        }
}

static bool log_matches(const struct qf_queue *q, const struct qf_log_queue *l)
{
        uint64_t from_rptr = q->rptr_addr.sources ? q->rptr_addr.v - QF_AMD_QUEUE_READ_DISPATCH_ID : 0;
        uint64_t from_wptr = q->wptr_addr.sources ? q->wptr_addr.v - QF_AMD_QUEUE_WRITE_DISPATCH_ID : 0;
        if (l->has_ring_base && same_address(&q->ring_base, l->ring_base))
                return true;
        if (l->has_amd_queue && l->amd_queue != 0 && (l->amd_queue == from_rptr || l->amd_queue == from_wptr))
                return true;
        if (l->has_legacy_hwq && l->legacy_hwq != 0 &&
            (same_address(&q->ring_base, l->legacy_hwq) || l->legacy_hwq == from_rptr || l->legacy_hwq == from_wptr))
                return true;
        return false;
}

static void add_log_queue(struct qf_result *r, const struct qf_inputs *in, const struct qf_log_queue *l)
{
        struct qf_process *p = NULL;
        struct qf_queue *q = NULL;

        /* A log without pids in its prefix can still be tied to a process
         * through the addresses. */
        for (size_t i = 0; i < r->n_processes && !q; i++) {
                if (l->has_pid && (!r->processes[i].has_pid || r->processes[i].pid != l->pid))
                        continue;
                for (size_t k = 0; k < r->processes[i].n_queues && !q; k++)
                        if (log_matches(&r->processes[i].queues[k], l)) {
                                p = &r->processes[i];
                                q = &p->queues[k];
                        }
        }
        if (!q) {
                p = l->has_pid ? get_process(r, in, l->pid) : get_unknown_process(r);
                if (!p || !(q = new_queue(p)))
                        return;
        }
        const struct origin o = { QF_SOURCE_LOG, in->log_name, l->created_line ? l->created_line : l->first_line };
        q->sources |= QF_SOURCE_LOG;
        q->log = l;
        if (l->has_ring_base)
                merge(p, q, &q->ring_base, "ring base", l->ring_base, &o);
        if (l->has_amd_queue)
                merge(p, q, &q->amd_queue, "amd_queue_t address", l->amd_queue, &o);
        if (l->has_size)
                merge(p, q, &q->ring_size, "ring size", l->size_packets * AQL_PACKET_SIZE, &o);
}

/* The amd_queue_t address follows from the pointer addresses for ROCr's AQL
 * queues; only derive it where some source said it is one of those. */
static void derive_amd_queue(struct qf_queue *q)
{
        if (q->amd_queue.sources || !q->rptr_addr.sources || !q->wptr_addr.sources)
                return;
        if (q->rptr_addr.v - QF_AMD_QUEUE_READ_DISPATCH_ID != q->wptr_addr.v - QF_AMD_QUEUE_WRITE_DISPATCH_ID)
                return;
        if (q->mqd && q->mqd->kind != QF_MQD_COMPUTE)
                return;
        q->amd_queue = (struct qf_value){ .v = q->rptr_addr.v - QF_AMD_QUEUE_READ_DISPATCH_ID,
                                          .sources = q->rptr_addr.sources };
}

/* A slot holding the queue of a process the user did not ask about is not
 * "unexplained". */
static bool belongs_to_other_process(const struct qf_mqds *mqds, const struct qf_hqd *h)
{
        for (size_t i = 0; mqds && i < mqds->n; i++)
                if (mqds->queues[i].has_addresses && mqds->queues[i].gpu_id == h->gpu_id &&
                    mqds->queues[i].ring_base == h->ring_base && mqds->queues[i].rptr_addr == h->rptr_addr)
                        return true;
        return false;
}

static int append_hqd(const struct qf_hqd ***hqds, size_t *n, const struct qf_hqd *h)
{
        const struct qf_hqd **slot = QF_APPEND(*hqds, *n);
        if (!slot)
                return -ENOMEM;
        *slot = h;
        return 0;
}

/* CP slots hold user compute queues, SDMA slots user SDMA queues; the HIQ
 * is the kernel's own. */
static int add_hqd(struct qf_result *r, const struct qf_mqds *mqds, const struct qf_hqd *h)
{
        int err;
        if (h->kind == QF_HQD_SDMA && h->active &&
            (err = append_hqd(&r->enabled_sdma_hqds, &r->n_enabled_sdma_hqds, h)) < 0)
                return err;
        if (h->kind == QF_HQD_HIQ || !h->has_addresses)
                return 0;
        for (size_t i = 0; i < r->n_processes; i++) {
                struct qf_process *p = &r->processes[i];
                for (size_t k = 0; k < p->n_queues; k++) {
                        struct qf_queue *q = &p->queues[k];
                        if (!q->gpu_id.sources || q->gpu_id.v != h->gpu_id ||
                            !(same_address(&q->ring_base, h->ring_base) && same_address(&q->rptr_addr, h->rptr_addr)))
                                continue;
                        if ((err = append_hqd(&q->hqds, &q->n_hqds, h)) < 0)
                                return err;
                        q->sources |= QF_SOURCE_HQDS;
                        q->ring_base.sources |= QF_SOURCE_HQDS;
                        q->rptr_addr.sources |= QF_SOURCE_HQDS;
                        if (same_address(&q->wptr_addr, h->wptr_addr))
                                q->wptr_addr.sources |= QF_SOURCE_HQDS;
                        q->gpu_id.sources |= QF_SOURCE_HQDS;
                        return 0;
                }
        }
        /* An SDMA ring's enable bit outlives its queue (debugfs-hqds.c), so
         * only CP slots are reported as unexplained. */
        if (h->kind != QF_HQD_CP || !h->active || belongs_to_other_process(mqds, h))
                return 0;
        return append_hqd(&r->unowned_hqds, &r->n_unowned_hqds, h);
}

/* By pid, the queues of no known process last. */
static int compare_processes(const void *a, const void *b)
{
        const struct qf_process *x = a, *y = b;
        if (x->has_pid != y->has_pid)
                return x->has_pid ? -1 : 1;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

int qf_join(const struct qf_inputs *in, struct qf_result *ret)
{
        struct qf_result r = { 0 };
        int err = -ENOMEM;

        for (size_t i = 0; i < in->n_pids; i++)
                if (!get_process(&r, in, in->pids[i]))
                        goto fail;
        for (size_t i = 0; i < in->n_sysfs; i++) {
                struct qf_process *p = get_process(&r, in, in->sysfs[i].pid);
                if (p)
                        add_sysfs(p, &in->sysfs[i]);
        }
        for (size_t i = 0; i < in->n_snapshots; i++) {
                struct qf_process *p = get_process(&r, in, in->snapshots[i].pid);
                if (p)
                        add_snapshot(p, &in->snapshots[i]);
        }
        for (size_t i = 0; in->mqds && i < in->mqds->n; i++) {
                const struct qf_mqd_queue *m = &in->mqds->queues[i];
                struct qf_process *p = get_process(&r, in, m->pid);
                if (p)
                        add_mqd(p, in->mqds, m, in->mqds_name);
        }
        for (size_t i = 0; in->log && i < in->log->n; i++)
                add_log_queue(&r, in, &in->log->queues[i]);
        for (size_t i = 0; i < r.n_processes; i++)
                for (size_t k = 0; k < r.processes[i].n_queues; k++)
                        derive_amd_queue(&r.processes[i].queues[k]);
        for (size_t i = 0; in->hqds && i < in->hqds->n; i++)
                if ((err = add_hqd(&r, in->mqds, &in->hqds->hqds[i])) < 0)
                        goto fail;

        /* Log queues of no known process that matched nothing land in a
         * process without a pid; drop it if it stayed empty. */
        struct qf_process *orphan = find_process(&r, false, 0);
        if (orphan && orphan->n_queues == 0) {
                qf_diags_clear(&orphan->conflicts);
                *orphan = r.processes[--r.n_processes];
        }
        if (r.n_processes > 1)
                qsort(r.processes, r.n_processes, sizeof(*r.processes), compare_processes);
        *ret = r;
        return 0;

fail:
        qf_result_clear(&r);
        return err;
}

void qf_result_clear(struct qf_result *r)
{
        for (size_t i = 0; i < r->n_processes; i++) {
                struct qf_process *p = &r->processes[i];
                for (size_t k = 0; k < p->n_queues; k++)
                        free(p->queues[k].hqds);
                free(p->queues);
                qf_diags_clear(&p->conflicts);
        }
        free(r->processes);
        free(r->unowned_hqds);
        free(r->enabled_sdma_hqds);
        *r = (struct qf_result){ 0 };
}
