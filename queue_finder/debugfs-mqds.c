/* SPDX-License-Identifier: MIT */
/*
 * Parser for /sys/kernel/debug/kfd/mqds (kfd_debugfs_mqds_by_process and
 * pqm_debugfs_mqds; kfd-interface.md §8.3):
 *
 *   Process <tgid> PASID 0x<pasid>:          upstream
 *   Process <tgid> PASID <pid>:              per-device-PASID/DKMS trees
 *     Compute queue on device <gpu_id hex>
 *       00000000: <8 dwords> ...             one MQD per XCC, offsets restart at 0
 *     SDMA queue on device <gpu_id hex>
 *     DIQ on device <gpu_id hex>
 *
 * No queue id is printed: the addresses extracted here are the join keys.
 */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "cleanup.h"
#include "hexdump.h"
#include "line-reader.h"
#include "mqd-layout.h"
#include "scan.h"
#include "sources.h"

/* Compute MQDs are 512 dwords (v9/v10/v11), v9 SDMA MQDs 128. Leave room for
 * larger future layouts; anything past this is junk. */
#define MQD_MAX_DWORDS 1024
#define MAX_MQD_QUEUES 65536

/* v9 SDMA MQD dwords (v9_sdma_mqd): the rptr address is stored hi before lo. */
enum {
        SDMA_RB_CNTL = 0,
        SDMA_RB_BASE = 1,
        SDMA_RB_BASE_HI = 2,
        SDMA_RB_RPTR_ADDR_HI = 8,
        SDMA_RB_RPTR_ADDR_LO = 9,
        SDMA_WPTR_POLL_ADDR_HI = 28,
        SDMA_WPTR_POLL_ADDR_LO = 29,
};

struct mqd_copy {
        uint32_t dw[MQD_MAX_DWORDS];
        uint8_t present[MQD_MAX_DWORDS];
        uint32_t next_offset;   /* byte offset the next row should have */
        bool any;
        bool damaged;           /* a row malformed, missing or out of place: its values may be anywhere */
};

struct mqd_parser {
        const char *name;
        struct qf_diags *diags;
        struct qf_mqds out;
        bool have_process;
        pid_t pid;
        struct qf_mqd_queue *queue; /* being dumped, NULL between queues */
        unsigned addresses_copy;    /* the copy the queue's addresses came from, once it has them */
        bool addresses_damaged;     /* that copy was damaged: an intact one's replace them */
        struct mqd_copy copy;
};

static bool has(const struct mqd_copy *c, unsigned first, unsigned last)
{
        for (unsigned i = first; i <= last; i++)
                if (!c->present[i])
                        return false;
        return true;
}

static uint64_t pair(const struct mqd_copy *c, unsigned lo, unsigned hi)
{
        return (uint64_t) c->dw[hi] << 32 | c->dw[lo];
}

/* What one MQD copy says about its queue. */
struct mqd_fields {
        bool has_addresses;
        bool active;
        uint64_t ring_base, rptr_addr, wptr_addr, ring_size;
        uint32_t doorbell_offset;
};

static struct mqd_fields decode_compute(const struct mqd_copy *c)
{
        struct mqd_fields f = { 0 };
        f.active = c->present[MQD_CP_HQD_ACTIVE] && (c->dw[MQD_CP_HQD_ACTIVE] & 1);
        if (has(c, MQD_CP_HQD_PQ_BASE_LO, MQD_CP_HQD_PQ_DOORBELL_CONTROL)) {
                f.has_addresses = true;
                f.ring_base = pair(c, MQD_CP_HQD_PQ_BASE_LO, MQD_CP_HQD_PQ_BASE_HI) << 8;
                f.rptr_addr = pair(c, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI);
                f.wptr_addr = pair(c, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI);
                f.doorbell_offset = QF_DOORBELL_OFFSET(c->dw[MQD_CP_HQD_PQ_DOORBELL_CONTROL]);
        }
        /* QUEUE_SIZE (bits 0..5) = log2(ring bytes / 4) - 1 (update_mqd, kfd_mqd_manager_v9.c); a field
         * that would give 2^63 bytes or more (a damaged dump: the shift would overflow) gives no size */
        if (c->present[MQD_CP_HQD_PQ_CONTROL] && (c->dw[MQD_CP_HQD_PQ_CONTROL] & 0x3f) + 1 < 61)
                f.ring_size = 4ULL << ((c->dw[MQD_CP_HQD_PQ_CONTROL] & 0x3f) + 1);
        return f;
}

static struct mqd_fields decode_sdma(const struct mqd_copy *c)
{
        struct mqd_fields f = { 0 };
        f.active = c->present[SDMA_RB_CNTL] && (c->dw[SDMA_RB_CNTL] & 1);
        if (has(c, SDMA_RB_BASE, SDMA_RB_BASE_HI) && has(c, SDMA_RB_RPTR_ADDR_HI, SDMA_RB_RPTR_ADDR_LO) &&
            has(c, SDMA_WPTR_POLL_ADDR_HI, SDMA_WPTR_POLL_ADDR_LO)) {
                f.has_addresses = true;
                f.ring_base = pair(c, SDMA_RB_BASE, SDMA_RB_BASE_HI) << 8;
                f.rptr_addr = pair(c, SDMA_RB_RPTR_ADDR_LO, SDMA_RB_RPTR_ADDR_HI);
                f.wptr_addr = pair(c, SDMA_WPTR_POLL_ADDR_LO, SDMA_WPTR_POLL_ADDR_HI);
        }
        /* RB_SIZE (bits 1..5) = log2(ring bytes / 4) (update_mqd_sdma). */
        if (c->present[SDMA_RB_CNTL])
                f.ring_size = 4ULL << ((c->dw[SDMA_RB_CNTL] >> 1) & 0x1f);
        return f;
}

/*
 * Folds the copy just completed into its queue. The first copy with the
 * ring and pointer addresses gives them (a damaged row may have cost an
 * earlier one its own), the first intact one if that copy was damaged (a
 * row whose offset was damaged puts its values at other dwords); the
 * others (one per XCC) must agree with it.
 */
static void finish_copy(struct mqd_parser *m, unsigned long lineno)
{
        struct qf_mqd_queue *q = m->queue;
        struct mqd_copy *c = &m->copy;
        if (!q)
                return;
        if (!c->any) {
                /* Called once when a queue ends; no copy at all means no dump. */
                if (q->n_xcc == 0)
                        qf_diag_add(m->diags, m->name, q->line, "queue header without an MQD dump after it");
                return;
        }

        struct mqd_fields f = { 0 };
        if (q->kind == QF_MQD_COMPUTE)
                f = decode_compute(c);
        else if (q->kind == QF_MQD_SDMA)
                f = decode_sdma(c);

        unsigned x = q->n_xcc;
        if (x >= QF_MAX_XCC) {
                qf_diag_add(m->diags, m->name, lineno,
                            "queue dumped at line %lu has more than %u MQD copies; ignoring the rest",
                            q->line, QF_MAX_XCC);
        } else {
                if (f.active)
                        q->active_mask |= 1U << x;
                if (!q->ring_size)
                        q->ring_size = f.ring_size;
                if (!f.has_addresses) {
                        if (q->kind != QF_MQD_DIQ)
                                qf_diag_add(m->diags, m->name, lineno,
                                            "MQD copy %u of the queue at line %lu lacks its ring and pointer addresses "
                                            "(cut or damaged rows)",
                                            x, q->line);
                } else if (!q->has_addresses || (m->addresses_damaged && !c->damaged)) {
                        if (x > 0)
                                qf_diag_add(m->diags, m->name, lineno,
                                            "the queue at line %lu takes its addresses from MQD copy %u%s", q->line, x,
                                            q->has_addresses ? ", the first intact one" : "");
                        q->has_addresses = true;
                        q->ring_base = f.ring_base;
                        q->rptr_addr = f.rptr_addr;
                        q->wptr_addr = f.wptr_addr;
                        q->doorbell_offset = f.doorbell_offset;
                        m->addresses_copy = x;
                        m->addresses_damaged = c->damaged;
                } else if (f.ring_base != q->ring_base || f.rptr_addr != q->rptr_addr || f.wptr_addr != q->wptr_addr) {
                        qf_diag_add(m->diags, m->name, lineno,
                                    "MQD copy %u of the queue at line %lu has ring base 0x%llx, rptr 0x%llx, wptr 0x%llx; copy %u has 0x%llx, 0x%llx, 0x%llx",
                                    x, q->line, (unsigned long long) f.ring_base,
                                    (unsigned long long) f.rptr_addr, (unsigned long long) f.wptr_addr,
                                    m->addresses_copy, (unsigned long long) q->ring_base,
                                    (unsigned long long) q->rptr_addr, (unsigned long long) q->wptr_addr);
                }
                q->n_xcc = x + 1;
        }
        *c = (struct mqd_copy){ 0 };
}

static bool parse_process(struct mqd_parser *m, const struct qf_line *l)
{
        struct qf_scan s = qf_scan_init(l->p, l->len);
        uint64_t pid;
        if (!QF_SCAN_LIT(&s, "Process "))
                return false;
        /* Both "PASID 0x<hex>" and "PASID <decimal pid>" exist; only the tgid
         * is reliable (kfd-interface.md §8.3). */
        if (!qf_scan_dec(&s, INT32_MAX, &pid) || !QF_SCAN_LIT(&s, " PASID ") || s.end[-1] != ':') {
                qf_diag_add(m->diags, m->name, l->lineno,
                            "malformed process header, expected \"Process <pid> PASID <pasid>:\"");
                m->have_process = false;
                return true;
        }
        m->have_process = true;
        m->pid = (pid_t) pid;
        return true;
}

static bool parse_queue_header(struct mqd_parser *m, const struct qf_line *l)
{
        struct qf_scan s = qf_scan_init(l->p, l->len);
        enum qf_mqd_kind kind;
        uint64_t gpu_id;

        qf_scan_spaces(&s);
        if (QF_SCAN_LIT(&s, "Compute queue on device "))
                kind = QF_MQD_COMPUTE;
        else if (QF_SCAN_LIT(&s, "SDMA queue on device "))
                kind = QF_MQD_SDMA;
        else if (QF_SCAN_LIT(&s, "DIQ on device "))
                kind = QF_MQD_DIQ;
        else
                return false;

        if (!qf_scan_hex(&s, 8, &gpu_id) || !qf_scan_at_end(&s)) {
                qf_diag_add(m->diags, m->name, l->lineno, "malformed queue header, expected a hex gpu_id");
                return true;
        }
        if (!m->have_process) {
                qf_diag_add(m->diags, m->name, l->lineno, "queue header outside of a \"Process\" section");
                return true;
        }
        if (m->out.n >= MAX_MQD_QUEUES) {
                qf_diag_add(m->diags, m->name, l->lineno, "more than %d queues; ignoring the rest",
                            MAX_MQD_QUEUES);
                return true;
        }
        m->queue = QF_APPEND(m->out.queues, m->out.n);
        if (!m->queue)
                return true;
        *m->queue = (struct qf_mqd_queue){
                .pid = m->pid, .kind = kind, .gpu_id = (uint32_t) gpu_id, .line = l->lineno,
        };
        return true;
}

static void parse_row(struct mqd_parser *m, const struct qf_line *l)
{
        struct qf_hexdump_row row;
        if (!qf_hexdump_parse_row(l->p, l->len, &row)) {
                qf_diag_add(m->diags, m->name, l->lineno, "malformed MQD dump row");
                m->copy.damaged = m->queue != NULL;
                return;
        }
        if (!m->queue) {
                qf_diag_add(m->diags, m->name, l->lineno, "MQD dump row without a queue header before it");
                return;
        }
        struct mqd_copy *c = &m->copy;
        /* seq_hex_dump restarts at offset 0 for each XCC's MQD. */
        if (row.address == 0 && c->any)
                finish_copy(m, l->lineno);
        if (row.address % 4 != 0 || row.address < c->next_offset) {
                qf_diag_add(m->diags, m->name, l->lineno, "MQD dump row at offset 0x%x, expected 0x%x",
                            row.address, c->next_offset);
                c->damaged = true;
                return;
        }
        /* a row cut short, or rows missing: what follows still lies where its offset says */
        if (row.address > c->next_offset) {
                qf_diag_add(m->diags, m->name, l->lineno,
                            "MQD dump row at offset 0x%x, expected 0x%x: the dwords between are missing", row.address,
                            c->next_offset);
                c->damaged = true;
        }
        unsigned first = row.address / 4;
        if (first + row.n_values > MQD_MAX_DWORDS) {
                qf_diag_add(m->diags, m->name, l->lineno, "MQD larger than %d bytes", MQD_MAX_DWORDS * 4);
                return;
        }
        for (unsigned i = 0; i < row.n_values; i++) {
                c->dw[first + i] = row.values[i];
                c->present[first + i] = 1;
        }
        c->next_offset = row.address + 4 * row.n_values;
        c->any = true;
}

static void parse_line(struct mqd_parser *m, const struct qf_line *l)
{
        if (l->truncated) {
                qf_diag_add(m->diags, m->name, l->lineno, "line longer than %d bytes, ignored", QF_LINE_MAX);
                return;
        }
        if (l->len == 0)
                return;
        if (l->p[0] == 'P') {
                finish_copy(m, l->lineno);
                m->queue = NULL;
                if (parse_process(m, l))
                        return;
        }
        if (qf_hexdump_looks_like_row(l->p, l->len)) {
                parse_row(m, l);
                return;
        }
        finish_copy(m, l->lineno);
        m->queue = NULL;
        if (parse_queue_header(m, l))
                return;
        qf_diag_add(m->diags, m->name, l->lineno, "unrecognized line in an mqds dump");
}

int qf_mqds_parse(int fd, const char *name, struct qf_diags *diags, struct qf_mqds *ret)
{
        _cleanup_line_reader_ struct qf_line_reader *reader = NULL;
        _cleanup_free_ struct mqd_parser *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->name = name;
        m->diags = diags;

        int r = qf_line_reader_new(fd, &reader);
        if (r < 0)
                return r;

        struct qf_line l = { 0 };
        unsigned long last = 0;
        while ((r = qf_line_reader_next(reader, &l)) > 0) {
                parse_line(m, &l);
                last = l.lineno;
        }
        if (r < 0) {
                qf_mqds_clear(&m->out);
                return r;
        }
        finish_copy(m, last);
        *ret = m->out;
        return 0;
}

void qf_mqds_clear(struct qf_mqds *m)
{
        free(m->queues);
        *m = (struct qf_mqds){ 0 };
}
