/* SPDX-License-Identifier: MIT */
/*
 * The readable table: one block per process, one row per queue, then the
 * GPUs, hardware slots nobody explains, enabled SDMA rings, conflicts and
 * warnings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

static void format_value(char *buf, size_t size, const struct qf_value *v, bool as_hex)
{
        if (!v->sources)
                snprintf(buf, size, "-");
        else if (as_hex)
                snprintf(buf, size, "0x%" PRIx64, v->v);
        else
                snprintf(buf, size, "%" PRIu64, v->v);
}

/* "4/4" active hardware slots out of the MQD copies, "-" when unknown. */
static void format_xcc(char *buf, size_t size, const struct qf_queue *q)
{
        if (q->n_hqds) {
                unsigned active = 0;
                for (size_t i = 0; i < q->n_hqds; i++)
                        active += q->hqds[i]->active;
                snprintf(buf, size, "%u/%u", active, (unsigned) q->n_hqds);
        } else if (q->mqd) {
                snprintf(buf, size, "%d/%u", __builtin_popcount(q->mqd->active_mask), q->mqd->n_xcc);
        } else {
                snprintf(buf, size, "-");
        }
}

/*
 * The address a log gave a queue whose ring base no source knows, after
 * the sources: else its row would show none. Before ROCm 6.2 "created
 * hardware queue" names the hsa_queue_t; a dispatch's "HWq=", or a refCount
 * line of a log that shows no creation, an address whose meaning the log
 * did not establish (JSON: legacy_hwq).
 */
static void format_log_address(char *buf, size_t size, const struct qf_queue *q)
{
        if (q->ring_base.sources || !q->log)
                snprintf(buf, size, "%s", "");
        else if (q->log->has_amd_queue)
                snprintf(buf, size, " (hsa_queue_t 0x%" PRIx64 ")", q->log->amd_queue);
        else if (q->log->has_legacy_hwq)
                snprintf(buf, size, " (address 0x%" PRIx64 ")", q->log->legacy_hwq);
        else
                snprintf(buf, size, "%s", "");
}

static void print_queue(FILE *f, const struct qf_queue *q)
{
        char id[24], gpu[16], size[24], ring[24], rptr[24], wptr[24], xcc[16], src[64], dispatches[24], addr[40];
        format_value(id, sizeof(id), &q->queue_id, false);
        if (q->gpu_id.sources)
                snprintf(gpu, sizeof(gpu), "%" PRIx64, q->gpu_id.v);
        else
                snprintf(gpu, sizeof(gpu), "-");
        format_value(size, sizeof(size), &q->ring_size, false);
        format_value(ring, sizeof(ring), &q->ring_base, true);
        format_value(rptr, sizeof(rptr), &q->rptr_addr, true);
        format_value(wptr, sizeof(wptr), &q->wptr_addr, true);
        format_xcc(xcc, sizeof(xcc), q);
        qf_sources_format(q->sources, ",", src, sizeof(src));
        format_log_address(addr, sizeof(addr), q);
        if (q->log)
                snprintf(dispatches, sizeof(dispatches), "%" PRIu64, q->log->dispatches);
        else
                snprintf(dispatches, sizeof(dispatches), "-");
        fprintf(f, "  %-5s %-5s %-8s %-15s %-15s %-15s %-5s %-10s %s%s", id, gpu, size, ring, rptr, wptr, xcc,
                dispatches, src, addr);
        if (q->log && q->log->deleted_line)
                fprintf(f, ", deleted at line %lu", q->log->deleted_line);
        fputc('\n', f);
}

static void print_diags(FILE *f, const struct qf_diags *d, const char *indent)
{
        for (size_t i = 0; i < d->n; i++) {
                if (d->items[i].line)
                        fprintf(f, "%s%s:%lu: %s\n", indent, d->items[i].file, d->items[i].line, d->items[i].message);
                else
                        fprintf(f, "%s%s: %s\n", indent, d->items[i].file, d->items[i].message);
        }
        if (d->dropped)
                fprintf(f, "%s(%zu more not shown)\n", indent, d->dropped);
}

/* sysfs queues (ids, no addresses) and MQDs (addresses, no ids) on the same
 * GPU that could not be paired one to one: say how to pair them. */
static void print_pairing_hint(FILE *f, const struct qf_process *p)
{
        for (size_t i = 0; i < p->n_queues; i++) {
                const struct qf_queue *a = &p->queues[i];
                if (a->sources != QF_SOURCE_SYSFS)
                        continue;
                for (size_t k = 0; k < p->n_queues; k++) {
                        const struct qf_queue *b = &p->queues[k];
                        if (b->mqd && !b->queue_id.sources && b->gpu_id.v == a->gpu_id.v) {
                                fprintf(f, "  Queue ids and addresses on gpu %" PRIx64 " cannot be paired without the "
                                           "queue snapshot (run as root with --snapshot).\n",
                                        a->gpu_id.v);
                                return;
                        }
                }
        }
}

static void print_process(FILE *f, const struct qf_process *p)
{
        if (p->has_pid)
                fprintf(f, "PID %d", (int) p->pid);
        else
                fprintf(f, "PID unknown (log lines that name no process; --log-pid PID names it)");
        if (p->has_exe)
                fprintf(f, "  %s", p->exe);
        if (p->has_pasid)
                fprintf(f, "  pasid %u", p->pasid);
        if (p->has_pid_ns)
                fprintf(f, "  pid ns pid:[%llu]", (unsigned long long) p->pid_ns.ino);
        if (p->n_nspid > 1) {
                fprintf(f, "  NSpid");
                for (size_t i = 0; i < p->n_nspid; i++)
                        fprintf(f, " %d", (int) p->nspid[i]);
        }
        fputc('\n', f);
        if (p->n_queues == 0) {
                fprintf(f, "  no queues found\n");
        } else {
                fprintf(f, "  %-5s %-5s %-8s %-15s %-15s %-15s %-5s %-10s %s\n", "QUEUE", "GPU", "SIZE", "RING BASE",
                        "RPTR ADDR", "WPTR ADDR", "XCC", "DISPATCH", "SOURCES");
                for (size_t i = 0; i < p->n_queues; i++)
                        print_queue(f, &p->queues[i]);
        }
        print_pairing_hint(f, p);
        if (p->sysfs)
                for (size_t i = 0; i < p->sysfs->n_occupancy; i++)
                        fprintf(f, "  CUs occupied on gpu %x: %lld\n", p->sysfs->occupancy[i].gpu_id,
                                (long long) p->sysfs->occupancy[i].cus);
        if (p->conflicts.n) {
                fprintf(f, "  Conflicts between sources:\n");
                print_diags(f, &p->conflicts, "    ");
        }
}

/* Which known queue holds an SDMA slot, for its line in the table. */
static void format_sdma_owner(char *buf, size_t size, const struct qf_result *res, const struct qf_hqd *h)
{
        for (size_t i = 0; i < res->n_processes; i++) {
                const struct qf_process *p = &res->processes[i];
                for (size_t k = 0; k < p->n_queues; k++) {
                        const struct qf_queue *q = &p->queues[k];
                        for (size_t s = 0; s < q->n_hqds; s++) {
                                if (q->hqds[s] != h)
                                        continue;
                                char owner[32] = "an unknown pid";
                                if (p->has_pid)
                                        snprintf(owner, sizeof(owner), "pid %d", (int) p->pid);
                                if (q->queue_id.sources)
                                        snprintf(buf, size, "queue %" PRIu64 " of %s", q->queue_id.v, owner);
                                else
                                        snprintf(buf, size, "a queue of %s", owner);
                                return;
                        }
                }
        }
        snprintf(buf, size, "no known queue");
}

static void print_enabled_sdma(FILE *f, const struct qf_result *res)
{
        fprintf(f, "SDMA rings enabled in hardware (the enable bit can outlive the queue):\n");
        for (size_t i = 0; i < res->n_enabled_sdma_hqds; i++) {
                const struct qf_hqd *h = res->enabled_sdma_hqds[i];
                fprintf(f, "  gpu %x engine %u rlc %u", h->gpu_id, h->engine, h->rlc);
                if (!h->has_addresses) {
                        fprintf(f, "  registers not decoded (a dump layout not verified; --json lists them)\n");
                        continue;
                }
                char owner[64];
                format_sdma_owner(owner, sizeof(owner), res, h);
                fprintf(f,
                        "  ring base 0x%" PRIx64 "  rptr %" PRIu64 " wptr %" PRIu64 "  rptr write-back 0x%" PRIx64
                        "  wptr poll 0x%" PRIx64 "  doorbell %u (%s)  %s\n",
                        h->ring_base, h->rptr, h->wptr, h->rptr_addr, h->wptr_addr, h->doorbell_offset,
                        h->doorbell_enabled ? "enabled" : "disabled", owner);
        }
        fputc('\n', f);
}

int qf_report_table(FILE *f, const struct qf_report *r)
{
        const struct qf_result *res = r->result;
        for (size_t i = 0; res && i < res->n_processes; i++) {
                print_process(f, &res->processes[i]);
                fputc('\n', f);
        }
        if (!res || res->n_processes == 0)
                fprintf(f, "No GPU processes found.\n\n");

        if (r->n_gpus) {
                fprintf(f, "GPUs:\n");
                for (size_t i = 0; i < r->n_gpus; i++) {
                        const struct qf_gpu *g = &r->gpus[i];
                        fprintf(f, "  gpu %-5x node %-3u %-8s %s%s\n", g->gpu_id, g->node, g->gfx, g->marketing_name,
                                g->drm_render_minor >= 0 ? "" : "  (no render node)");
                }
                fputc('\n', f);
        }
        if (res && res->n_unowned_hqds) {
                fprintf(f, "Active hardware queue slots no known queue explains:\n");
                for (size_t i = 0; i < res->n_unowned_hqds; i++) {
                        const struct qf_hqd *h = res->unowned_hqds[i];
                        fprintf(f, "  gpu %x xcc %u pipe %u queue %u ring base 0x%" PRIx64 "\n", h->gpu_id, h->inst,
                                h->pipe, h->queue, h->ring_base);
                }
                fputc('\n', f);
        }
        if (res && res->n_enabled_sdma_hqds)
                print_enabled_sdma(f, res);
        bool header = false;
        for (size_t i = 0; i < r->n_sources; i++) {
                const struct qf_source_status *s = &r->sources[i];
                if (s->skipped || !s->error)
                        continue;
                if (!header)
                        fprintf(f, "Sources not read:\n");
                header = true;
                fprintf(f, "  %s (%s): %s\n", s->name, s->path ? s->path : "-", strerror(-s->error));
        }
        if (r->warnings->n || r->warnings->dropped) {
                fprintf(f, "%sWarnings:\n", header ? "\n" : "");
                print_diags(f, r->warnings, "  ");
        }
        return ferror(f) ? -EIO : 0;
}
