/* SPDX-License-Identifier: MIT */
/*
 * debugfs kfd/{mqds,hqds,rls} (kfd_debugfs.c) as the kernel prints them:
 * kfd_debugfs_mqds_by_process + pqm_debugfs_mqds, kfd_debugfs_hqds_by_device
 * + dqm_debugfs_hqds, kfd_debugfs_rls_by_device + pm_debugfs_runlist.
 * Register values the driver does not write (live HQD state, HIQ, SDMA
 * engines) are the constant values of the real MI308X dumps
 * (tests/data/real/mi308x-hqds-*.txt).
 *
 * The kernel generates these files when they are read; kfdemu renders one
 * when a client opens it (emu_render_on_read, asked by the preload), never
 * on every queue change, whose cost would grow with the node's queues.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "gpu-internal.h"

#define DEBUGFS_DIR "sys/kernel/debug/kfd"

/* HQD slots the KFD owns per XCC: MEC 1, pipes 0-3, queues 2-7 (the
 * cp_queue_bitmap of gfx942 in the real hqds dump). */
#define CP_PIPES 4u
#define CP_FIRST_QUEUE 2u
#define CP_QUEUES_PER_PIPE 8u
#define CP_SLOTS_PER_XCC (CP_PIPES * (CP_QUEUES_PER_PIPE - CP_FIRST_QUEUE))
/* mmCP_MQD_BASE_ADDR: the HQD registers are the MQD's dwords 128..183. */
#define HQD_FIRST_REG 0xc914u
#define HQD_FIRST_DWORD 128u
#define HQD_REGS 56u
#define HQD_REG_CP_HQD_ACTIVE 130u
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* Register offset of XCC instance i (the physical XCCs 0, 3, 4 and 7 of
 * the real MI308X); other XCC counts get an invented 0x40000 stride. */
static uint32_t xcc_reg_base(unsigned num_xcc, unsigned inst)
{
        static const uint32_t mi308x[] = { 0x0, 0xc0000, 0x100000, 0x1c0000 };

        return num_xcc == 4 ? mi308x[inst] : inst * 0x40000u;
}

/* debugfs files are rewritten on every suspend and resume and hold up to
 * ~100 000 hex words (8 GPUs): formatted by hand, a line at a time, since
 * printf per word costs milliseconds on the ioctl path. */
static char *put_hex8(char *out, uint32_t v)
{
        static const char digits[] = "0123456789abcdef";

        for (int shift = 28; shift >= 0; shift -= 4)
                *out++ = digits[(v >> shift) & 0xf];
        return out;
}

/* "<prefix><offset>: w w w ...", the line both dumps are made of. */
static void put_line(FILE *f, const char *prefix, uint32_t offset, const uint32_t *words, size_t n)
{
        char line[16 + 9 * 8 + 2], *out = line;
        size_t plen = strlen(prefix);

        memcpy(out, prefix, plen);
        out = put_hex8(out + plen, offset);
        *out++ = ':';
        for (size_t i = 0; i < n; i++) {
                *out++ = ' ';
                out = put_hex8(out, words[i]);
        }
        *out++ = '\n';
        fwrite_unlocked(line, 1, (size_t)(out - line), f);
}

/* seq_hex_dump(m, prefix, DUMP_PREFIX_OFFSET, 32, 4, data, len, false). */
static void hex_dump(FILE *f, const char *prefix, const uint32_t *dw, size_t n)
{
        for (size_t i = 0; i < n; i += 8)
                put_line(f, prefix, (uint32_t)(i * 4), dw + i, n - i < 8 ? n - i : 8);
}

/* seq_reg_dump: runs of consecutive registers, at most 8 per line. */
static void reg_dump(FILE *f, const uint32_t (*regs)[2], size_t n)
{
        for (size_t start = 0; start < n;) {
                uint32_t values[8];
                size_t len = 0;

                while (start + len < n && len < 8 &&
                       (len == 0 || regs[start + len][0] == regs[start + len - 1][0] + 4)) {
                        values[len] = regs[start + len][1];
                        len++;
                }
                put_line(f, "    ", regs[start][0], values, len);
                start += len;
        }
}

static void hqd_dump(FILE *f, uint32_t base, const uint32_t mqd[EMU_V9_MQD_DWORDS])
{
        uint32_t regs[HQD_REGS][2];

        for (unsigned i = 0; i < HQD_REGS; i++) {
                regs[i][0] = base + HQD_FIRST_REG + 4 * i;
                regs[i][1] = mqd[HQD_FIRST_DWORD + i];
        }
        reg_dump(f, regs, HQD_REGS);
}

/* What the registers of an empty KFD slot read (the real dump's value). */
static void empty_hqd(uint32_t m[EMU_V9_MQD_DWORDS])
{
        for (unsigned i = 0; i < EMU_V9_MQD_DWORDS; i++)
                m[i] = 0;
        m[132] = 0x0be05301;
        m[145] = 0x00308509;
        m[149] = 0x00300000;
        m[160] = 0x40000000;
        m[162] = 0x00000100;
        m[167] = 0x00000006;
        m[168] = 0x40000000;
        m[169] = 0x007f8000;
}

/* The HIQ (the kernel's queue to the HWS) as the idle real node shows it;
 * its MQD buffers are 0x800 apart, one per XCC. */
static void hiq_hqd(unsigned inst, uint32_t m[EMU_V9_MQD_DWORDS])
{
        static const uint32_t regs[HQD_REGS] = {
                0x006e3000, 0, 1, 0, 0x00005300, 0, 1, 0x111,
                0x0000fcc0, 0, 8, 0x00fcd800, 0, 0x00fcda00, 0, 0xe0003000,
                0, 0xd0008508, 0, 0, 0, 0x00b00000, 0, 0,
                0, 0, 0, 0, 0x000000a0, 0, 0, 0,
                0x4000c440, 0, 0x100, 0, 0, 0x0000fcc8, 0, 9,
                0x40000000, 0x03ff8000, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 8, 0,
        };

        for (unsigned i = 0; i < EMU_V9_MQD_DWORDS; i++)
                m[i] = i >= HQD_FIRST_DWORD && i < HQD_FIRST_DWORD + HQD_REGS ? regs[i - HQD_FIRST_DWORD] : 0;
        m[128] += 0x800 * inst;
        if (inst > 0) {
                m[143] = 0x60003000;
                m[145] |= 0x08000000;                  /* NO_UPDATE_RPTR off the master XCC */
        }
}

/* A mapped user queue: the MQD as loaded (hqd_load), plus the bits the CP
 * sets while it runs the queue, as in the real dump. */
static void user_hqd(const struct emu_queue *q, unsigned inst, uint32_t vmid, uint32_t m[EMU_V9_MQD_DWORDS])
{
        emu_v9_compute_mqd(q, inst, m);
        m[HQD_REG_CP_HQD_ACTIVE] = 1;
        m[131] = vmid << 8 | vmid;
        m[143] |= 0x60000000;                          /* DOORBELL_SCHD_HIT, DOORBELL_EN */
        m[145] |= 0x00008000;
        m[160] |= 0x40000000;
        m[168] = 0x40000000;
        m[169] = 0x007f8000;
}

static bool is_mapped(const struct emu_queue *q)
{
        return emu_queue_is_compute(q) && !q->is_suspended && !q->is_evicted && !q->is_reset &&
               !q->is_being_destroyed;
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
        const uint8_t *b = data;

        for (size_t i = 0; i < len; i++)
                h = (h ^ b[i]) * FNV_PRIME;
        return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
        return hash_bytes(h, &v, sizeof(v));
}

/* Everything a queue's MQD dump is made of. */
static uint64_t queue_key(const struct emu_queue *q)
{
        const uint64_t fields[] = {
                q->type, q->ring_base_address, q->ring_size, q->read_pointer_address,
                q->write_pointer_address, q->ctx_save_restore_address, q->ctx_save_restore_size,
                q->ctl_stack_size, q->eop_buffer_address, q->eop_buffer_size, q->queue_priority,
                q->doorbell_slot, q->gpu->cfg.gpu_id, q->gpu->cfg.num_xcc,
                q->hw ? q->hw->frame : 0, q->hw ? q->hw->logical_xcc_start : 0, q->hw ? q->hw->mqd_gpu_addr : 0,
        };

        return hash_bytes(FNV_OFFSET, fields, sizeof(fields));
}

/* A piece of debugfs text, kept until what it shows changes: suspend and
 * resume rewrite hqds on every call, and formatting every GPU's registers
 * and every queue's MQDs each time would make every ioctl pay for text
 * nobody reads (docs/benchmarks/kfdemu.md). */
struct text {
        char *data;
        size_t len;
};

static int text_render(struct text *t, void (*render)(FILE *f, const void *arg), const void *arg)
{
        FILE *f;

        free(t->data);
        *t = (struct text){ NULL, 0 };
        f = open_memstream(&t->data, &t->len);
        if (!f)
                return -ENOMEM;
        render(f, arg);
        return fclose(f) == 0 ? 0 : -ENOMEM;
}

void emu_text_cache_free(struct emu_text_cache *c)
{
        free(c->data);
        *c = (struct emu_text_cache){ 0 };
}

/* Look up `key` in `c`, rendering and keeping the text when it changed. A
 * NULL cache (no hardware state: before start or after stop) renders
 * into `scratch`. */
static const struct emu_text_cache *cached(struct emu_text_cache *c, struct emu_text_cache *scratch, uint64_t key,
                                           void (*render)(FILE *f, const void *arg), const void *arg)
{
        struct text t = { NULL, 0 };

        if (!c)
                c = scratch;
        else if (c->valid && c->key == key)
                return c;
        emu_text_cache_free(c);
        if (text_render(&t, render, arg) < 0) {
                free(t.data);
                return c;
        }
        *c = (struct emu_text_cache){ .data = t.data, .len = t.len, .key = key, .valid = true };
        return c;
}

static void put_cached(FILE *f, struct emu_text_cache *c, uint64_t key,
                       void (*render)(FILE *f, const void *arg), const void *arg)
{
        struct emu_text_cache scratch = { 0 };
        const struct emu_text_cache *t = cached(c, &scratch, key, render, arg);

        if (t->data)
                fwrite_unlocked(t->data, 1, t->len, f);
        emu_text_cache_free(&scratch);
}

/* ---- mqds ---- */

static void render_queue_mqds(FILE *f, const void *arg)
{
        const struct emu_queue *q = arg;
        uint32_t m[EMU_V9_MQD_DWORDS];

        if (emu_queue_is_compute(q)) {
                unsigned num_xcc = q->gpu->cfg.num_xcc ? q->gpu->cfg.num_xcc : 1;

                fprintf(f, "  Compute queue on device %x\n", q->gpu->cfg.gpu_id);
                for (unsigned xcc = 0; xcc < num_xcc; xcc++) {
                        emu_v9_compute_mqd(q, xcc, m);
                        hex_dump(f, "    ", m, EMU_V9_MQD_DWORDS);
                }
        } else {
                fprintf(f, "  SDMA queue on device %x\n", q->gpu->cfg.gpu_id);
                emu_v9_sdma_mqd(q, m);
                hex_dump(f, "    ", m, EMU_V9_SDMA_MQD_DWORDS);
        }
}

static uint64_t mqds_key(const struct emu_node *node)
{
        uint64_t h = FNV_OFFSET;

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                h = hash_u64(h, (uint64_t)p->tgid << 32 | p->pasid);
                for (const struct emu_queue *q = p->queues; q; q = q->next)
                        h = hash_u64(h, queue_key(q));
        }
        return h;
}

static void render_mqds(FILE *f, const void *arg)
{
        const struct emu_node *node = arg;

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                fprintf(f, "Process %d PASID 0x%x:\n", (int)p->tgid, p->pasid);
                for (const struct emu_queue *q = p->queues; q; q = q->next)
                        put_cached(f, q->hw ? &q->hw->mqds_text : NULL, queue_key(q), render_queue_mqds, q);
        }
}

/* ---- hqds ---- */

struct hqd_slots {
        const struct emu_gpu *gpu;
        const struct emu_queue *queue[CP_SLOTS_PER_XCC];
        uint32_t vmid[CP_SLOTS_PER_XCC];
};

/* The HWS runlist order: processes, each with its queues newest first;
 * the HWS fills pipe 0..3 of queue 2, then queue 3, ... (real dump). A
 * process gets the next VMID from 3, the first user VMID of the dump. */
static void place_queues(const struct emu_node *node, const struct emu_gpu *gpu, struct hqd_slots *ret)
{
        unsigned k = 0;
        uint32_t vmid = 3;

        *ret = (struct hqd_slots){ .gpu = gpu };
        for (const struct emu_process *p = node->processes; p; p = p->next) {
                bool on_gpu = false;

                for (const struct emu_queue *q = p->queues; q && k < CP_SLOTS_PER_XCC; q = q->next)
                        if (q->gpu == gpu && is_mapped(q)) {
                                ret->queue[k] = q;
                                ret->vmid[k++] = vmid;
                                on_gpu = true;
                        }
                vmid += on_gpu;
        }
}

static uint64_t slots_key(const struct hqd_slots *s)
{
        uint64_t h = hash_u64(FNV_OFFSET, emu_gpu_slot(s->gpu));

        for (unsigned k = 0; k < CP_SLOTS_PER_XCC && s->queue[k]; k++)
                h = hash_u64(hash_u64(h, queue_key(s->queue[k])), s->vmid[k]);
        return h;
}

static void render_hqds_gpu(FILE *f, const void *arg)
{
        const struct hqd_slots *s = arg;
        const struct emu_gpu *gpu = s->gpu;
        unsigned num_xcc = gpu->cfg.num_xcc ? gpu->cfg.num_xcc : 1;
        uint32_t m[EMU_V9_MQD_DWORDS];

        fprintf(f, "Node %u, gpu_id %x:\n", 1 + emu_gpu_slot(gpu), gpu->cfg.gpu_id);
        for (unsigned inst = 0; inst < num_xcc; inst++) {
                uint32_t base = xcc_reg_base(num_xcc, inst);

                fprintf(f, "   Inst %u, HIQ on MEC %u Pipe %u Queue %u\n", inst, 2u, 0u, 0u);
                hiq_hqd(inst, m);
                hqd_dump(f, base, m);
                for (unsigned pipe = 0; pipe < CP_PIPES; pipe++)
                        for (unsigned queue = CP_FIRST_QUEUE; queue < CP_QUEUES_PER_PIPE; queue++) {
                                unsigned slot = (queue - CP_FIRST_QUEUE) * CP_PIPES + pipe;

                                fprintf(f, " Inst %u,  CP Pipe %u, Queue %u\n", inst, pipe, queue);
                                if (s->queue[slot])
                                        user_hqd(s->queue[slot], inst, s->vmid[slot], m);
                                else
                                        empty_hqd(m);
                                hqd_dump(f, base, m);
                        }
        }
}

/* The SDMA RLC queues of the 8 engines, 8 queues each, with the register
 * layout and idle values of the real dump. */
static void render_hqds_sdma(FILE *f, const void *arg)
{
        static const uint32_t engine_base[] = { 0x4e40, 0x6640, 0xe54c0, 0xe64c0,
                                                0x104e40, 0x106640, 0x1e54c0, 0x1e64c0 };
        static const struct { uint32_t offset; unsigned n; uint32_t v[8]; } groups[] = {
                { 0x00, 8, { 0x00040000, 0, 0, 0, 0, 0, 0, 0x00403000 } },
                { 0x20, 8, { 0, 1, 0x100, 0, 0, 0, 0, 0 } },
                { 0x40, 3, { 0, 4, 0 } },
                { 0xa0, 6, { 0 } },
                { 0xbc, 7, { 0, 0, 0xf, 0, 0, 0x4000, 0 } },
                { 0x100, 8, { 0 } },
                { 0x120, 4, { 0 } },
        };
        const uint32_t rlc_stride = 0x160;

        for (unsigned e = 0; e < ELEMENTSOF(engine_base); e++)
                for (unsigned rlc = 0; rlc < 8; rlc++) {
                        uint32_t regs[44][2];
                        size_t n = 0;

                        fprintf(f, "  SDMA Engine %u, RLC %u\n", e, rlc);
                        for (unsigned g = 0; g < ELEMENTSOF(groups); g++)
                                for (unsigned i = 0; i < groups[g].n; i++) {
                                        regs[n][0] = engine_base[e] + rlc * rlc_stride + groups[g].offset + 4 * i;
                                        regs[n][1] = groups[g].v[i];
                                        n++;
                                }
                        reg_dump(f, regs, n);
                }
}

static uint64_t hqds_key(const struct emu_node *node)
{
        uint64_t h = FNV_OFFSET;

        for (unsigned i = 0; i < node->n_gpus; i++) {
                struct hqd_slots s;

                place_queues(node, &node->gpus[i], &s);
                h = hash_u64(h, slots_key(&s));
        }
        return h;
}

static void render_hqds(FILE *f, const void *arg)
{
        const struct emu_node *node = arg;
        struct emu_node_hw *nh = emu_node_hw_of((struct emu_node *)node);

        for (unsigned i = 0; i < node->n_gpus; i++) {
                struct emu_gpu_hw *gh = node->gpus[i].hw;
                struct hqd_slots s;

                place_queues(node, &node->gpus[i], &s);
                put_cached(f, gh ? &gh->hqds_text : NULL, slots_key(&s), render_hqds_gpu, &s);
                put_cached(f, nh ? &nh->sdma_text : NULL, 0, render_hqds_sdma, NULL);
        }
}

/* ---- rls ---- */

/* PM4 type-3 packets of the runlist (kfd_packet_manager_v9.c). */
#define PM4_TYPE3_HEADER(opcode, ndw) (3u << 30 | ((uint32_t)(ndw) - 2) << 16 | (uint32_t)(opcode) << 8)
#define IT_MAP_PROCESS 0xA1
#define IT_MAP_QUEUES 0xA2
#define MAP_PROCESS_DWORDS 19      /* pm4_mes_map_process_aldebaran */
#define MAP_QUEUES_DWORDS 7

/* The runlist IB (pm_create_runlist_ib): MAP_PROCESS per process with
 * mapped queues on the GPU, then MAP_QUEUES per queue. Returns its dwords
 * (malloc'ed) and their count, 0 when nothing is mapped. */
static size_t build_runlist(const struct emu_node *node, const struct emu_gpu *gpu, uint32_t **ret_ib)
{
        size_t n_dwords = 0, n = 0;
        uint32_t *ib;

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                unsigned n_queues = 0;

                for (const struct emu_queue *q = p->queues; q; q = q->next)
                        n_queues += q->gpu == gpu && is_mapped(q);
                if (n_queues)
                        n_dwords += MAP_PROCESS_DWORDS + (size_t)n_queues * MAP_QUEUES_DWORDS;
        }
        *ret_ib = NULL;
        if (n_dwords == 0 || !(ib = calloc(n_dwords, sizeof(uint32_t))))
                return 0;
        for (const struct emu_process *p = node->processes; p; p = p->next) {
                size_t process_at = n;
                unsigned n_queues = 0;

                n += MAP_PROCESS_DWORDS;
                for (const struct emu_queue *q = p->queues; q; q = q->next) {
                        uint64_t mqd = q->hw ? q->hw->mqd_gpu_addr : 0;

                        if (q->gpu != gpu || !is_mapped(q))
                                continue;
                        ib[n] = PM4_TYPE3_HEADER(IT_MAP_QUEUES, MAP_QUEUES_DWORDS);
                        ib[n + 1] = 1u << 29;                  /* num_queues 1 */
                        ib[n + 2] = (q->hw ? emu_doorbell_bar_dword(q->hw->frame, q->doorbell_slot) : 0) << 2;
                        ib[n + 3] = (uint32_t)mqd;
                        ib[n + 4] = (uint32_t)(mqd >> 32);
                        ib[n + 5] = (uint32_t)q->write_pointer_address;
                        ib[n + 6] = (uint32_t)(q->write_pointer_address >> 32);
                        n += MAP_QUEUES_DWORDS;
                        n_queues++;
                }
                if (n_queues == 0) {
                        n = process_at;
                        continue;
                }
                ib[process_at] = PM4_TYPE3_HEADER(IT_MAP_PROCESS, MAP_PROCESS_DWORDS);
                ib[process_at + 1] = p->pasid;                 /* bitfields2: pasid */
                ib[process_at + 2] = n_queues << 24;           /* bitfields14: num_queues */
        }
        *ret_ib = ib;
        return n;
}

/* pm_debugfs_runlist: the IB as seq_hex_dump(m, "  ", ...) shows it. */
static void render_rls(FILE *f, const void *arg)
{
        const struct emu_node *node = arg;

        for (unsigned i = 0; i < node->n_gpus; i++) {
                _cleanup_free_ uint32_t *ib = NULL;
                size_t n = build_runlist(node, &node->gpus[i], &ib);

                fprintf(f, "Node %u, gpu_id %x:\n", 1 + i, node->gpus[i].cfg.gpu_id);
                if (n == 0)
                        fprintf(f, "  No active runlist\n");
                else
                        hex_dump(f, "  ", ib, n);
        }
}

/* ---- files ---- */

/* Write `relpath` only when its content changed since the last write. */
static void render_file(struct emu_node *node, const char *relpath, uint64_t key, uint64_t *last_key,
                        void (*render)(FILE *f, const void *arg))
{
        struct text t = { NULL, 0 };

        if (last_key && *last_key == key)
                return;
        if (text_render(&t, render, node) >= 0 && emu_render_write(node->cfg.root, relpath, t.data, t.len) >= 0 &&
            last_key)
                *last_key = key;
        free(t.data);
}

void emu_render_debugfs_file(struct emu_node *node, enum emu_render_on_read file)
{
        struct emu_node_hw *nh = emu_node_hw_of(node);

        switch (file) {
        case EMU_RENDER_MQDS:
                render_file(node, DEBUGFS_DIR "/mqds", mqds_key(node), nh ? &nh->mqds_key : NULL, render_mqds);
                break;
        case EMU_RENDER_HQDS:
                render_file(node, DEBUGFS_DIR "/hqds", hqds_key(node), nh ? &nh->hqds_key : NULL, render_hqds);
                break;
        case EMU_RENDER_RLS:
                /* The runlist changes exactly when the mapped HQDs do. */
                render_file(node, DEBUGFS_DIR "/rls", hash_u64(hqds_key(node), FNV_PRIME), nh ? &nh->rls_key : NULL,
                            render_rls);
                break;
        case EMU_RENDER_CU_OCCUPANCY:
                break;
        }
}

void emu_render_debugfs(struct emu_node *node)
{
        emu_render_debugfs_file(node, EMU_RENDER_MQDS);
        emu_render_debugfs_file(node, EMU_RENDER_HQDS);
        emu_render_debugfs_file(node, EMU_RENDER_RLS);
}

void emu_render_on_read(struct emu_node *node, enum emu_render_on_read file, pid_t tgid, uint32_t gpu_id)
{
        if (file == EMU_RENDER_CU_OCCUPANCY)
                emu_render_cu_occupancy_on_read(node, tgid, gpu_id);
        else
                emu_render_debugfs_file(node, file);
}
