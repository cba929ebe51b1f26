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
 * Hardware slots only: no pid, no queue id. A slot is tied to a queue
 * through the ring base and pointer addresses its registers hold, which are
 * the MQD's (mqd-layout.h for CP/HIQ, update_mqd_sdma for SDMA).
 *
 * seq_reg_dump (kfd_device_queue_manager.c) prints each register as its byte
 * address (DUMP_REG: register offset << 2) and value, and starts a new row
 * after 8 values or where the next register does not follow the previous
 * one; so the rows show which register ranges the kernel's dump function
 * read.
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
 * 56 consecutive registers, the SDMA dumps below reach 76. */
#define SLOT_REGS 128

/*
 * SDMA RLC queue registers, counted from RB_CNTL, in the dump of
 * kgd_gfx_v9_4_3_hqd_sdma_dump (amdgpu_amdkfd_gc_9_4_3.c; GC 9.4.3, MI300)
 * and of hqd_sdma_dump_v10_3 (amdgpu_amdkfd_gfx_v10_3.c; GC 10.3). Both read
 * four ranges:
 * RB_CNTL..DOORBELL, STATUS..CSA_ADDR_HI, IB_SUB_REMAIN..MINOR_PTR_UPDATE and
 * MIDCMD_DATA0..MIDCMD_CNTL, 19 + 6 + 7 + 12 registers. The offsets are those
 * of regSDMA_RLC0_* in sdma/sdma_4_4_2_offset.h and of mmSDMA0_RLC1_* less
 * mmSDMA0_RLC1_RB_CNTL in gc/gc_10_3_0_offset.h; the fields decoded here have
 * the same bits in sdma_4_4_2_sh_mask.h and gc_10_3_0_sh_mask.h. The real
 * MI308X dump (GC 9.4.3) has exactly these ranges.
 *
 * Other kernel functions dump other registers: 42 in all (HQD_N_REGS
 * 19+6+7+10 in kgd_hqd_sdma_dump of amdgpu_amdkfd_gfx_v9.c and
 * amdgpu_amdkfd_gfx_v10.c, and kgd_arcturus_hqd_sdma_dump), five ranges
 * (hqd_sdma_dump_v11) or one (hqd_sdma_dump_v12). Their register files were
 * not checked, so their slots keep the raw registers.
 */
enum {
        SDMA_RB_CNTL = 0,
        SDMA_RB_BASE = 1,               /* ring base >> 8, bits 8..39 */
        SDMA_RB_BASE_HI = 2,            /* bits 40..63 in ADDR, bits 0..23 */
        SDMA_RB_RPTR = 3,
        SDMA_RB_RPTR_HI = 4,
        SDMA_RB_WPTR = 5,
        SDMA_RB_WPTR_HI = 6,
        SDMA_RB_RPTR_ADDR_HI = 8,       /* hi before lo, as in v9_sdma_mqd */
        SDMA_RB_RPTR_ADDR_LO = 9,
        SDMA_DOORBELL = 18,
        SDMA_DOORBELL_OFFSET = 43,
        SDMA_RB_WPTR_POLL_ADDR_HI = 50,
        SDMA_RB_WPTR_POLL_ADDR_LO = 51,
};

#define SDMA_RB_CNTL_RB_ENABLE 0x1u
#define SDMA_RB_BASE_HI_ADDR 0x00ffffffu
/* The low two bits of the address registers are not address: SDMA 4.4.2
 * keeps RPTR_WB_IDLE in bit 0 of RB_RPTR_ADDR_LO, set in the real dump. */
#define SDMA_ADDR_LO_ADDR 0xfffffffcu
#define SDMA_DOORBELL_ENABLE 0x10000000u

static const struct {
        uint8_t first, count;
} sdma_ranges[] = { { 0, 19 }, { 40, 6 }, { 47, 7 }, { 64, 12 } };

struct hqd_parser {
        const char *name;
        struct qf_diags *diags;
        struct qf_hqds out;
        int error;                  /* -ENOMEM once an allocation failed */
        struct qf_hqd_node *node;   /* current "Node" section */
        struct qf_hqd *slot;        /* current slot, NULL outside one */
        uint32_t regs[SLOT_REGS];
        uint8_t present[SLOT_REGS];
        bool any_row;
        bool beyond;                /* a row reached past SLOT_REGS */
};

static bool has_regs(const struct hqd_parser *h, unsigned first, unsigned last)
{
        for (unsigned i = first; i <= last; i++)
                if (!h->present[i])
                        return false;
        return true;
}

static bool has_none(const struct hqd_parser *h, unsigned first, unsigned end)
{
        for (unsigned i = first; i < end; i++)
                if (h->present[i])
                        return false;
        return true;
}

static uint64_t reg_pair(const struct hqd_parser *h, unsigned lo, unsigned hi)
{
        return (uint64_t) h->regs[hi] << 32 | h->regs[lo];
}

static void decode_cp(struct hqd_parser *h, struct qf_hqd *s)
{
        const unsigned base = MQD_CP_MQD_BASE_ADDR_LO;
        s->active = h->present[MQD_CP_HQD_ACTIVE - base] && (h->regs[MQD_CP_HQD_ACTIVE - base] & 1);
        if (!has_regs(h, MQD_CP_HQD_PQ_BASE_LO - base, MQD_CP_HQD_PQ_DOORBELL_CONTROL - base)) {
                qf_diag_add(h->diags, h->name, s->line,
                            "HQD register dump ends before the queue's ring and pointer registers");
                return;
        }
        s->has_addresses = true;
        s->ring_base = reg_pair(h, MQD_CP_HQD_PQ_BASE_LO - base, MQD_CP_HQD_PQ_BASE_HI - base) << 8;
        s->rptr_addr = reg_pair(h, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO - base, MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI - base);
        s->wptr_addr = reg_pair(h, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO - base, MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI - base);
        s->doorbell_offset = QF_DOORBELL_OFFSET(h->regs[MQD_CP_HQD_PQ_DOORBELL_CONTROL - base]);
}

/* true when the rows hold sdma_ranges and nothing else: the dump came from
 * one of the two functions whose layout is verified. */
static bool is_verified_sdma_dump(const struct hqd_parser *h)
{
        unsigned next = 0;
        if (h->beyond)
                return false;
        for (size_t r = 0; r < sizeof(sdma_ranges) / sizeof(*sdma_ranges); r++) {
                unsigned first = sdma_ranges[r].first, end = first + sdma_ranges[r].count;
                if (!has_none(h, next, first) || !has_regs(h, first, end - 1))
                        return false;
                next = end;
        }
        return has_none(h, next, SLOT_REGS);
}

static void keep_raw_registers(struct hqd_parser *h, struct qf_hqd *s)
{
        for (unsigned i = 0; i < SLOT_REGS; i++) {
                if (!h->present[i])
                        continue;
                struct qf_hqd_reg *r = QF_APPEND(s->raw, s->n_raw);
                if (!r) {
                        h->error = -ENOMEM;
                        return;
                }
                *r = (struct qf_hqd_reg){ .address = s->reg_base + 4 * i, .value = h->regs[i] };
        }
}

static void decode_sdma(struct hqd_parser *h, struct qf_hqd *s)
{
        /* Every dump function read starts with RB_CNTL (those of
         * amdgpu_amdkfd_gfx_v10.c and _v11.c were not read), and RB_ENABLE
         * is its bit 0 in both register files checked, so this bit is read
         * from any layout. The
         * MI308X captures show it set in 7 slots both before and while the
         * test ran, so it is reported, not trusted as "running". */
        s->active = h->present[SDMA_RB_CNTL] && (h->regs[SDMA_RB_CNTL] & SDMA_RB_CNTL_RB_ENABLE);
        if (!is_verified_sdma_dump(h)) {
                keep_raw_registers(h, s);
                return;
        }
        const uint32_t *r = h->regs;
        s->has_addresses = true;
        /* update_mqd_sdma (kfd_mqd_manager_v9.c) stores the ring address
         * >> 8, the user read pointer's address and the doorbell index in
         * the DOORBELL_OFFSET field (bits 2..27, as in the CP's register). */
        s->ring_base = ((uint64_t) (r[SDMA_RB_BASE_HI] & SDMA_RB_BASE_HI_ADDR) << 32 | r[SDMA_RB_BASE]) << 8;
        s->rptr_addr = (uint64_t) r[SDMA_RB_RPTR_ADDR_HI] << 32 | (r[SDMA_RB_RPTR_ADDR_LO] & SDMA_ADDR_LO_ADDR);
        s->wptr_addr = (uint64_t) r[SDMA_RB_WPTR_POLL_ADDR_HI] << 32 | (r[SDMA_RB_WPTR_POLL_ADDR_LO] & SDMA_ADDR_LO_ADDR);
        s->doorbell_offset = QF_DOORBELL_OFFSET(r[SDMA_DOORBELL_OFFSET]);
        s->doorbell_enabled = r[SDMA_DOORBELL] & SDMA_DOORBELL_ENABLE;
        /* Byte offsets: sdma_v4_4_2_ring_get_wptr shifts the register by 2
         * for the ring's dword index. */
        s->rptr = reg_pair(h, SDMA_RB_RPTR, SDMA_RB_RPTR_HI);
        s->wptr = reg_pair(h, SDMA_RB_WPTR, SDMA_RB_WPTR_HI);
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
        if (s->kind == QF_HQD_SDMA)
                decode_sdma(h, s);
        else
                decode_cp(h, s);
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
        if (!s) {
                h->error = -ENOMEM;
                return NULL;
        }
        *s = (struct qf_hqd){
                .node = h->node->node, .gpu_id = h->node->gpu_id, .kind = kind, .line = l->lineno,
        };
        h->slot = s;
        h->any_row = false;
        h->beyond = false;
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
        else
                h->error = -ENOMEM;
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
        if (first + row.n_values > SLOT_REGS) {
                qf_diag_add(h->diags, h->name, l->lineno,
                            "register 0x%x is more than %d registers after the slot's first; ignored",
                            row.address, SLOT_REGS);
                h->beyond = true;
        }
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
        while ((r = qf_line_reader_next(reader, &l)) > 0 && !h->error)
                parse_line(h, &l);
        if (r >= 0)
                finish_slot(h);
        if (r >= 0 && h->error)
                r = h->error;
        if (r < 0) {
                qf_hqds_clear(&h->out);
                return r;
        }
        *ret = h->out;
        return 0;
}

void qf_hqds_clear(struct qf_hqds *h)
{
        for (size_t i = 0; i < h->n; i++)
                free(h->hqds[i].raw);
        free(h->hqds);
        free(h->nodes);
        *h = (struct qf_hqds){ 0 };
}
