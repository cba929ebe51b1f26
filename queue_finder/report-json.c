/* SPDX-License-Identifier: MIT */
/*
 * The --json document. Addresses are strings ("0x7f41b5200000") because JSON
 * numbers lose precision above 2^53 in most consumers; ids and counts are
 * numbers. Unknown values are null, never 0, so "not reported" and "zero"
 * stay distinct. The schema is documented in queue_finder.1.scd.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* Insertions that fail are counted and fail the whole document at the end,
 * instead of a check after every call. (A json-c constructor returns NULL
 * only when out of memory; that value is then stored as null.) */
struct builder {
        unsigned failures;
};

static struct json_object *hex(uint64_t v)
{
        char buf[24];
        snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
        return json_object_new_string(buf);
}

static void add(struct builder *b, struct json_object *o, const char *key, struct json_object *v)
{
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                b->failures++;
        }
}

static void push(struct builder *b, struct json_object *a, struct json_object *v)
{
        if (!v || json_object_array_add(a, v) < 0) {
                json_object_put(v);
                b->failures++;
        }
}

static struct json_object *sources_array(struct builder *b, unsigned sources)
{
        struct json_object *a = json_object_new_array();
        for (unsigned bit = 0; a && bit < QF_SOURCE_COUNT; bit++)
                if (sources & (1U << bit))
                        push(b, a, json_object_new_string(qf_source_name(1U << bit)));
        return a;
}

static void add_value(struct builder *b, struct json_object *q, struct json_object *prov, const char *key,
                      const struct qf_value *v, bool as_hex)
{
        if (!v->sources) {
                add(b, q, key, NULL);
                return;
        }
        add(b, q, key, as_hex ? hex(v->v) : json_object_new_uint64(v->v));
        add(b, prov, key, sources_array(b, v->sources));
}

static struct json_object *diag_json(struct builder *b, const struct qf_diag *d)
{
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "file", json_object_new_string(d->file));
        add(b, o, "line", d->line ? json_object_new_uint64(d->line) : NULL);
        add(b, o, "message", json_object_new_string(d->message));
        return o;
}

static struct json_object *diags_json(struct builder *b, const struct qf_diags *d)
{
        struct json_object *a = json_object_new_array();
        for (size_t i = 0; a && i < d->n; i++)
                push(b, a, diag_json(b, &d->items[i]));
        return a;
}

static struct json_object *raw_registers_json(struct builder *b, const struct qf_hqd *h)
{
        struct json_object *a = json_object_new_array();
        for (size_t i = 0; a && i < h->n_raw; i++) {
                struct json_object *e = json_object_new_object();
                if (e) {
                        add(b, e, "address", hex(h->raw[i].address));
                        add(b, e, "value", hex(h->raw[i].value));
                }
                push(b, a, e);
        }
        return a;
}

static struct json_object *hqd_json(struct builder *b, const struct qf_hqd *h)
{
        static const char *const kinds[] = { [QF_HQD_HIQ] = "hiq", [QF_HQD_CP] = "cp", [QF_HQD_SDMA] = "sdma" };
        const bool sdma = h->kind == QF_HQD_SDMA, decoded = h->has_addresses;
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "kind", json_object_new_string(kinds[h->kind]));
        add(b, o, "node", json_object_new_int64(h->node));
        add(b, o, "gpu_id", json_object_new_int64(h->gpu_id));
        add(b, o, "xcc", sdma ? NULL : json_object_new_int64(h->inst));
        add(b, o, "pipe", sdma ? NULL : json_object_new_int64(h->pipe));
        add(b, o, "queue", sdma ? NULL : json_object_new_int64(h->queue));
        add(b, o, "engine", sdma ? json_object_new_int64(h->engine) : NULL);
        add(b, o, "rlc", sdma ? json_object_new_int64(h->rlc) : NULL);
        add(b, o, "active", json_object_new_boolean(h->active));
        add(b, o, "decoded", json_object_new_boolean(decoded));
        add(b, o, "ring_base", decoded ? hex(h->ring_base) : NULL);
        add(b, o, "rptr_address", decoded ? hex(h->rptr_addr) : NULL);
        add(b, o, "wptr_address", decoded ? hex(h->wptr_addr) : NULL);
        add(b, o, "doorbell_offset", decoded ? json_object_new_int64(h->doorbell_offset) : NULL);
        add(b, o, "doorbell_enabled", sdma && decoded ? json_object_new_boolean(h->doorbell_enabled) : NULL);
        add(b, o, "rptr", sdma && decoded ? json_object_new_uint64(h->rptr) : NULL);
        add(b, o, "wptr", sdma && decoded ? json_object_new_uint64(h->wptr) : NULL);
        add(b, o, "registers", sdma && !decoded ? raw_registers_json(b, h) : NULL);
        add(b, o, "line", json_object_new_uint64(h->line));
        return o;
}

static struct json_object *hqds_json(struct builder *b, const struct qf_hqd *const *hqds, size_t n)
{
        struct json_object *a = json_object_new_array();
        for (size_t i = 0; a && i < n; i++)
                push(b, a, hqd_json(b, hqds[i]));
        return a;
}

static struct json_object *mqd_json(struct builder *b, const struct qf_mqd_queue *m)
{
        static const char *const kinds[] = { [QF_MQD_COMPUTE] = "compute", [QF_MQD_SDMA] = "sdma",
                                              [QF_MQD_DIQ] = "diq" };
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "kind", json_object_new_string(kinds[m->kind]));
        add(b, o, "line", json_object_new_uint64(m->line));
        add(b, o, "xcc_copies", json_object_new_int64(m->n_xcc));
        struct json_object *active = json_object_new_array();
        for (unsigned x = 0; active && x < m->n_xcc; x++)
                if (m->active_mask & (1U << x))
                        push(b, active, json_object_new_int64(x));
        add(b, o, "active_xcc", active);
        return o;
}

static struct json_object *log_json(struct builder *b, const struct qf_log_queue *l)
{
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "pid", l->has_pid ? json_object_new_int64(l->pid) : NULL);
        add(b, o, "swq", l->has_amd_queue ? hex(l->amd_queue) : NULL);
        add(b, o, "hwq", l->has_ring_base ? hex(l->ring_base) : NULL);
        add(b, o, "legacy_hwq", l->has_legacy_hwq ? hex(l->legacy_hwq) : NULL);
        add(b, o, "rocr_queue_id", l->has_rocr_id ? json_object_new_uint64(l->rocr_id) : NULL);
        add(b, o, "size_packets", l->has_size ? json_object_new_uint64(l->size_packets) : NULL);
        add(b, o, "priority", l->priority >= 0 ? json_object_new_int64(l->priority) : NULL);
        add(b, o, "cooperative", l->cooperative >= 0 ? json_object_new_boolean(l->cooperative) : NULL);
        add(b, o, "created_line", l->created_line ? json_object_new_uint64(l->created_line) : NULL);
        add(b, o, "deleted_line", l->deleted_line ? json_object_new_uint64(l->deleted_line) : NULL);
        add(b, o, "first_line", json_object_new_uint64(l->first_line));
        add(b, o, "last_line", json_object_new_uint64(l->last_line));
        add(b, o, "dispatches", json_object_new_uint64(l->dispatches));
        add(b, o, "barriers", json_object_new_uint64(l->barriers));
        add(b, o, "last_rptr", l->has_pointers ? json_object_new_uint64(l->last_rptr) : NULL);
        add(b, o, "last_wptr", l->has_pointers ? json_object_new_uint64(l->last_wptr) : NULL);
        add(b, o, "max_refcount", json_object_new_uint64(l->max_refcount));
        add(b, o, "last_kernel", l->last_kernel[0] ? json_object_new_string(l->last_kernel) : NULL);
        return o;
}

static struct json_object *snapshot_json(struct builder *b, const struct qf_snapshot_queue *s)
{
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "queue_type", json_object_new_int64(s->queue_type));
        add(b, o, "read_index", s->has_indices ? json_object_new_uint64(s->read_index) : NULL);
        add(b, o, "write_index", s->has_indices ? json_object_new_uint64(s->write_index) : NULL);
        return o;
}

static const char *sysfs_type_name(uint32_t type)
{
        switch (type) {
        case QF_SYSFS_QUEUE_COMPUTE:
                return "compute";
        case QF_SYSFS_QUEUE_SDMA:
                return "sdma";
        case QF_SYSFS_QUEUE_HIQ:
                return "hiq";
        default:
                return NULL;
        }
}

static struct json_object *queue_json(struct builder *b, const struct qf_queue *q)
{
        struct json_object *o = json_object_new_object();
        struct json_object *prov = json_object_new_object();
        if (!o || !prov) {
                json_object_put(o);
                json_object_put(prov);
                return NULL;
        }
        add_value(b, o, prov, "queue_id", &q->queue_id, false);
        add_value(b, o, prov, "gpu_id", &q->gpu_id, false);
        add_value(b, o, prov, "ring_size", &q->ring_size, false);
        add_value(b, o, prov, "ring_base", &q->ring_base, true);
        add_value(b, o, prov, "rptr_address", &q->rptr_addr, true);
        add_value(b, o, prov, "wptr_address", &q->wptr_addr, true);
        add_value(b, o, prov, "amd_queue_address", &q->amd_queue, true);
        add_value(b, o, prov, "doorbell_offset", &q->doorbell_offset, false);
        if (q->has_sysfs_type) {
                const char *name = sysfs_type_name(q->sysfs_type);
                add(b, o, "sysfs_type", name ? json_object_new_string(name) : json_object_new_int64(q->sysfs_type));
        } else {
                add(b, o, "sysfs_type", NULL);
        }
        add(b, o, "sources", sources_array(b, q->sources));
        add(b, o, "provenance", prov);
        add(b, o, "paired_by_size", json_object_new_boolean(q->paired_by_size));
        add(b, o, "snapshot", q->snapshot ? snapshot_json(b, q->snapshot) : NULL);
        add(b, o, "mqd", q->mqd ? mqd_json(b, q->mqd) : NULL);
        add(b, o, "hqds", hqds_json(b, q->hqds, q->n_hqds));
        add(b, o, "log", q->log ? log_json(b, q->log) : NULL);
        return o;
}

static struct json_object *process_json(struct builder *b, const struct qf_process *p)
{
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        add(b, o, "pid", p->has_pid ? json_object_new_int64(p->pid) : NULL);
        struct json_object *nspid = json_object_new_array();
        for (size_t i = 0; nspid && i < p->n_nspid; i++)
                push(b, nspid, json_object_new_int64(p->nspid[i]));
        add(b, o, "nspid", nspid);
        char ns[48];
        snprintf(ns, sizeof(ns), "pid:[%llu]", (unsigned long long) p->pid_ns.ino);
        add(b, o, "pid_namespace", p->has_pid_ns ? json_object_new_string(ns) : NULL);
        add(b, o, "executable", p->has_exe ? json_object_new_string(p->exe) : NULL);
        add(b, o, "pasid", p->has_pasid ? json_object_new_int64(p->pasid) : NULL);
        struct json_object *occ = json_object_new_array();
        for (size_t i = 0; occ && p->sysfs && i < p->sysfs->n_occupancy; i++) {
                struct json_object *e = json_object_new_object();
                if (e) {
                        add(b, e, "gpu_id", json_object_new_int64(p->sysfs->occupancy[i].gpu_id));
                        add(b, e, "cus", json_object_new_int64(p->sysfs->occupancy[i].cus));
                }
                push(b, occ, e);
        }
        add(b, o, "cu_occupancy", occ);
        struct json_object *queues = json_object_new_array();
        for (size_t i = 0; queues && i < p->n_queues; i++)
                push(b, queues, queue_json(b, &p->queues[i]));
        add(b, o, "queues", queues);
        add(b, o, "conflicts", diags_json(b, &p->conflicts));
        return o;
}

static struct json_object *gpu_json(struct builder *b, const struct qf_gpu *g)
{
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        char buf[64];
        add(b, o, "node", json_object_new_int64(g->node));
        add(b, o, "gpu_id", json_object_new_int64(g->gpu_id));
        snprintf(buf, sizeof(buf), "%x", g->gpu_id);
        add(b, o, "gpu_id_hex", json_object_new_string(buf));
        add(b, o, "gfx", json_object_new_string(g->gfx));
        add(b, o, "name", json_object_new_string(g->name));
        add(b, o, "marketing_name", json_object_new_string(g->marketing_name));
        add(b, o, "marketing_name_source", json_object_new_string(g->marketing_name_from_libdrm ? "libdrm" : "fallback"));
        snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", g->domain, g->bus, g->dev, g->fn);
        add(b, o, "pci", g->has_location ? json_object_new_string(buf) : NULL);
        snprintf(buf, sizeof(buf), "0x%04x", g->device_id);
        add(b, o, "device_id", json_object_new_string(buf));
        snprintf(buf, sizeof(buf), "/dev/dri/renderD%d", g->drm_render_minor);
        add(b, o, "render_node", g->drm_render_minor >= 0 ? json_object_new_string(buf) : NULL);
        add(b, o, "num_xcc", g->num_xcc ? json_object_new_int64(g->num_xcc) : NULL);
        return o;
}

int qf_report_json(const struct qf_report *r, struct json_object **ret)
{
        struct builder b = { 0 };
        struct json_object *root = json_object_new_object();
        if (!root)
                return -ENOMEM;

        add(&b, root, "schema_version", json_object_new_int64(QF_JSON_SCHEMA_VERSION));

        struct json_object *sources = json_object_new_array();
        for (size_t i = 0; sources && i < r->n_sources; i++) {
                const struct qf_source_status *s = &r->sources[i];
                struct json_object *e = json_object_new_object();
                if (e) {
                        add(&b, e, "name", json_object_new_string(s->name));
                        add(&b, e, "path", s->path ? json_object_new_string(s->path) : NULL);
                        add(&b, e, "status", json_object_new_string(s->skipped ? "skipped" : s->error ? "unavailable" : "ok"));
                        add(&b, e, "error", s->error ? json_object_new_string(strerror(-s->error)) : NULL);
                }
                push(&b, sources, e);
        }
        add(&b, root, "sources", sources);

        struct json_object *gpus = json_object_new_array();
        for (size_t i = 0; gpus && i < r->n_gpus; i++)
                push(&b, gpus, gpu_json(&b, &r->gpus[i]));
        add(&b, root, "gpus", gpus);

        struct json_object *procs = json_object_new_array();
        for (size_t i = 0; procs && r->result && i < r->result->n_processes; i++)
                push(&b, procs, process_json(&b, &r->result->processes[i]));
        add(&b, root, "processes", procs);

        const struct qf_result *res = r->result;
        add(&b, root, "unowned_active_hqds",
            hqds_json(&b, res ? res->unowned_hqds : NULL, res ? res->n_unowned_hqds : 0));
        add(&b, root, "enabled_sdma_hqds",
            hqds_json(&b, res ? res->enabled_sdma_hqds : NULL, res ? res->n_enabled_sdma_hqds : 0));

        if (r->log) {
                struct json_object *log = json_object_new_object();
                if (log) {
                        add(&b, log, "lines", json_object_new_uint64(r->log->lines));
                        add(&b, log, "log_lines", json_object_new_uint64(r->log->log_lines));
                        add(&b, log, "queues", json_object_new_uint64(r->log->n));
                }
                add(&b, root, "log", log);
        } else {
                add(&b, root, "log", NULL);
        }

        add(&b, root, "warnings", diags_json(&b, r->warnings));
        add(&b, root, "warnings_dropped", json_object_new_uint64(r->warnings->dropped));

        if (b.failures) {
                json_object_put(root);
                return -ENOMEM;
        }
        *ret = root;
        return 0;
}
