/* SPDX-License-Identifier: MIT */
/*
 * Parser for /sys/kernel/debug/kfd/hqds (kfd_debugfs_hqds_by_device →
 * dqm_debugfs_hqds; kfd-interface.md §8.3):
 *
 *   Node <n>, gpu_id <hex>:
 *      Inst <x>, HIQ on MEC <m> Pipe <p> Queue <q>
 *    Inst <x>,  CP Pipe <p>, Queue <q>
 *     SDMA Engine <e>, RLC <r>
 *    Device is stopped
 *       <reg byte address>: <value> [up to 7 more values]
 *
 * Hardware slots only: no pid, no queue id. A CP/HIQ slot is tied to a queue
 * through the ring base and pointer addresses its registers hold, which are
 * the MQD's (mqd-layout.h).
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

/* Registers kept per slot, counted from the first one dumped. The CP dump is
 * 56 consecutive registers; SDMA dumps have gaps but start with RB_CNTL. */
#define SLOT_REGS 64

struct hqd_parser {
        const char *name;
        struct qf_diags *diags;
        struct qf_hqds out;
        struct qf_hqd_node *node;   /* current "Node" section */
        struct qf_hqd *slot;        /* current slot, NULL outside one */
        uint32_t regs[SLOT_REGS];
        uint8_t present[SLOT_REGS];
        bool any_row;
};

static bool has_regs(const struct hqd_parser *h, unsigned first, unsigned last)
{
        for (unsigned i = first; i <= last; i++)
                if (!h->present[i])
                        return false;
        return true;
}

static uint64_t reg_pair(const struct hqd_parser *h, unsigned lo_dword, unsigned hi_dword)
{
        return (uint64_t) h->regs[hi_dword - MQD_CP_MQD_BASE_ADDR_LO] << 32 |
               h->regs[lo_dword - MQD_CP_MQD_BASE_ADDR_LO];
}

static void finish_slot(struct hqd_parser *h)
{
        struct qf_hqd *s = h->slot;
        if (!s)
                return;
        h->slot = NULL;
        if (!h->any_row) {
                qf_diag_add(h->diags, h->name, s->line, "HQD slot without register values");
                return;
        }
        if (s->kind == QF_HQD_SDMA) {
                /* The SDMA dump starts with RLCx_RB_CNTL; bit 0 is RB_ENABLE.
                 * The MI308X captures show it set in 7 slots both before and
                 * while the test ran, so it is reported, not trusted as
                 * "running". */
                s->active = h->present[0] && (h->regs[0] & 1);
                return;
        }
        const unsigned base = MQD_CP_MQD_BASE_ADDR_LO;
        s->active = h->present[MQD_CP_HQD_ACTIVE - base] && (h->regs[MQD_CP_HQD_ACTIVE - base] & 1);
        if (has_regs(h, MQD_CP_HQD_PQ_BASE_LO - base, MQD_CP_HQD_PQ_DOORBELL_CONTROL - base)) {
                s->has_addresses = true;
                s->ring_base = reg_pair(h, MQD_CP_HQD_PQ_BASE_LO, MQD_CP_HQD_PQ_BASE_HI) << 8;
                s->rptr_addr = reg_pair(h, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI);
                s->wptr_addr = reg_pair(h, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI);
                s->doorbell_offset =
                        QF_DOORBELL_OFFSET(h->regs[MQD_CP_HQD_PQ_DOORBELL_CONTROL - base]);
        } else {
                qf_diag_add(h->diags, h->name, s->line,
                            "HQD register dump ends before the queue's ring and pointer registers");
        }
}

static struct qf_hqd *new_slot(struct hqd_parser *h, const struct qf_line *l, enum qf_hqd_kind kind)
{
        if (!h->node) {
                qf_diag_add(h->diags, h->name, l->lineno, "HQD slot outside of a \"Node\" section");
                return NULL;
        }
        if (h->out.n >= QF_MAX_HQDS) {
                qf_diag_add(h->diags, h->name, l->lineno, "more than %d HQD slots; ignoring the rest",
                            QF_MAX_HQDS);
                return NULL;
        }
        struct qf_hqd *s = QF_APPEND(h->out.hqds, h->out.n);
        if (!s)
                return NULL;
        *s = (struct qf_hqd){
                .node = h->node->node, .gpu_id = h->node->gpu_id, .kind = kind, .line = l->lineno,
        };
        h->slot = s;
        h->any_row = false;
        memset(h->present, 0, sizeof(h->present));
        return s;
}

static bool parse_node(struct hqd_parser *h, const struct qf_line *l)
{
        struct qf_scan s = qf_scan_init(l->p, l->len);
        uint64_t node, gpu_id;
        if (!QF_SCAN_LIT(&s, "Node "))
                return false;
        if (!qf_scan_dec(&s, UINT32_MAX, &node) || !QF_SCAN_LIT(&s, ", gpu_id ") ||
            !qf_scan_hex(&s, 8, &gpu_id) || !QF_SCAN_LIT(&s, ":") || !qf_scan_at_end(&s)) {
                qf_diag_add(h->diags, h->name, l->lineno,
                            "malformed node header, expected \"Node <n>, gpu_id <hex>:\"");
                h->node = NULL;
                return true;
        }
        if (h->out.n_nodes >= QF_MAX_GPUS) {
                qf_diag_add(h->diags, h->name, l->lineno, "more than %d nodes; ignoring the rest", QF_MAX_GPUS);
                h->node = NULL;
                return true;
        }
        h->node = QF_APPEND(h->out.nodes, h->out.n_nodes);
        if (h->node)
                *h->node = (struct qf_hqd_node){ .node = (unsigned) node, .gpu_id = (uint32_t) gpu_id };
        return true;
}

/* "Inst <x>, HIQ on MEC <m> Pipe <p> Queue <q>" or "Inst <x>,  CP Pipe <p>, Queue <q>" */
static bool parse_inst(struct hqd_parser *h, const struct qf_line *l, struct qf_scan s)
{
        uint64_t inst, mec = 0, pipe, queue;
        bool hiq;
        if (!QF_SCAN_LIT(&s, "Inst "))
                return false;
        if (!qf_scan_dec(&s, 255, &inst) || !QF_SCAN_LIT(&s, ","))
                goto malformed;
        qf_scan_spaces(&s);
        if (QF_SCAN_LIT(&s, "HIQ on MEC ")) {
                hiq = true;
                if (!qf_scan_dec(&s, 255, &mec) || !QF_SCAN_LIT(&s, " Pipe ") || !qf_scan_dec(&s, 255, &pipe) ||
                    !QF_SCAN_LIT(&s, " Queue ") || !qf_scan_dec(&s, 255, &queue))
                        goto malformed;
        } else if (QF_SCAN_LIT(&s, "CP Pipe ")) {
                hiq = false;
                if (!qf_scan_dec(&s, 255, &pipe) || !QF_SCAN_LIT(&s, ", Queue ") || !qf_scan_dec(&s, 255, &queue))
                        goto malformed;
        } else {
                goto malformed;
        }
        if (!qf_scan_at_end(&s))
                goto malformed;

        struct qf_hqd *slot = new_slot(h, l, hiq ? QF_HQD_HIQ : QF_HQD_CP);
        if (slot) {
                slot->inst = (unsigned) inst;
                slot->mec = (unsigned) mec;
                slot->pipe = (unsigned) pipe;
                slot->queue = (unsigned) queue;
        }
        return true;

malformed:
        qf_diag_add(h->diags, h->name, l->lineno, "malformed HQD slot header");
        return true;
}

static bool parse_sdma(struct hqd_parser *h, const struct qf_line *l, struct qf_scan s)
{
        uint64_t engine, rlc;
        if (!QF_SCAN_LIT(&s, "SDMA Engine "))
                return false;
        if (!qf_scan_dec(&s, 255, &engine) || !QF_SCAN_LIT(&s, ", RLC ") || !qf_scan_dec(&s, 255, &rlc) ||
            !qf_scan_at_end(&s)) {
                qf_diag_add(h->diags, h->name, l->lineno, "malformed SDMA slot header");
                return true;
        }
        struct qf_hqd *slot = new_slot(h, l, QF_HQD_SDMA);
        if (slot) {
                slot->engine = (unsigned) engine;
                slot->rlc = (unsigned) rlc;
        }
        return true;
}

static void parse_row(struct hqd_parser *h, const struct qf_line *l)
{
        struct qf_hexdump_row row;
        if (!qf_hexdump_parse_row(l->p, l->len, &row)) {
                qf_diag_add(h->diags, h->name, l->lineno, "malformed register dump row");
                return;
        }
        if (!h->slot) {
                qf_diag_add(h->diags, h->name, l->lineno, "register dump row outside of an HQD slot");
                return;
        }
        if (!h->any_row) {
                h->slot->reg_base = row.address;
                h->any_row = true;
        }
        if (row.address < h->slot->reg_base || (row.address - h->slot->reg_base) % 4 != 0) {
                qf_diag_add(h->diags, h->name, l->lineno, "register address 0x%x out of order (slot starts at 0x%x)",
                            row.address, h->slot->reg_base);
                return;
        }
        uint32_t first = (row.address - h->slot->reg_base) / 4;
        for (unsigned i = 0; i < row.n_values && first + i < SLOT_REGS; i++) {
                h->regs[first + i] = row.values[i];
                h->present[first + i] = 1;
        }
}

static void parse_line(struct hqd_parser *h, const struct qf_line *l)
{
        if (l->truncated) {
                qf_diag_add(h->diags, h->name, l->lineno, "line longer than %d bytes, ignored", QF_LINE_MAX);
                return;
        }
        if (l->len == 0)
                return;
        if (qf_hexdump_looks_like_row(l->p, l->len)) {
                parse_row(h, l);
                return;
        }
        finish_slot(h);
        if (parse_node(h, l))
                return;

        struct qf_scan s = qf_scan_init(l->p, l->len);
        qf_scan_spaces(&s);
        if (QF_SCAN_LIT(&s, "Device is stopped") && qf_scan_at_end(&s)) {
                if (h->node)
                        h->node->stopped = true;
                else
                        qf_diag_add(h->diags, h->name, l->lineno, "\"Device is stopped\" outside of a \"Node\" section");
                return;
        }
        if (parse_inst(h, l, s) || parse_sdma(h, l, s))
                return;
        qf_diag_add(h->diags, h->name, l->lineno, "unrecognized line in an hqds dump");
}

int qf_hqds_parse(int fd, const char *name, struct qf_diags *diags, struct qf_hqds *ret)
{
        _cleanup_line_reader_ struct qf_line_reader *reader = NULL;
        _cleanup_free_ struct hqd_parser *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->name = name;
        h->diags = diags;

        int r = qf_line_reader_new(fd, &reader);
        if (r < 0)
                return r;

        struct qf_line l;
        while ((r = qf_line_reader_next(reader, &l)) > 0)
                parse_line(h, &l);
        if (r < 0) {
                qf_hqds_clear(&h->out);
                return r;
        }
        finish_slot(h);
        *ret = h->out;
        return 0;
}

void qf_hqds_clear(struct qf_hqds *h)
{
        free(h->hqds);
        free(h->nodes);
        *h = (struct qf_hqds){ 0 };
}
