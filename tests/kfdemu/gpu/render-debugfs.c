/* SPDX-License-Identifier: MIT */
/*
 * debugfs kfd/{mqds,hqds,rls} (kfd_debugfs.c) as the kernel prints them:
 * kfd_debugfs_mqds_by_process + pqm_debugfs_mqds, kfd_debugfs_hqds_by_device
 * + dqm_debugfs_hqds, kfd_debugfs_rls_by_device + pm_debugfs_runlist.
 * Register values the driver does not write (live HQD state, HIQ, SDMA
 * engines) are the constant values of the real MI308X dumps
 * (shared/data/real/mi308x-hqds-*.txt).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Register offset of XCC instance i (the physical XCCs 0, 3, 4 and 7 of
 * the real MI308X); other XCC counts get an invented 0x40000 stride. */
static uint32_t xcc_reg_base(unsigned num_xcc, unsigned inst)
{
        static const uint32_t mi308x[] = { 0x0, 0xc0000, 0x100000, 0x1c0000 };

        return num_xcc == 4 ? mi308x[inst] : inst * 0x40000u;
}

/* seq_hex_dump(m, prefix, DUMP_PREFIX_OFFSET, 32, 4, data, len, false). */
static void hex_dump(FILE *f, const char *prefix, const uint32_t *dw, size_t n)
{
        for (size_t i = 0; i < n; i += 8) {
                fprintf(f, "%s%08zx:", prefix, i * 4);
                for (size_t j = i; j < i + 8 && j < n; j++)
                        fprintf(f, " %08x", dw[j]);
                fputc('\n', f);
        }
}

/* seq_reg_dump: runs of consecutive registers, at most 8 per line. */
static void reg_dump(FILE *f, const uint32_t (*regs)[2], size_t n)
{
        for (size_t i = 0, in_line = 0; i < n; i++, in_line++) {
                if (i == 0 || in_line == 8 || regs[i][0] != regs[i - 1][0] + 4) {
                        if (i > 0)
                                fputc('\n', f);
                        fprintf(f, "    %08x: %08x", regs[i][0], regs[i][1]);
                        in_line = 0;
                } else {
                        fprintf(f, " %08x", regs[i][1]);
                }
        }
        fputc('\n', f);
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
        return emu_queue_is_compute(q) && !q->is_suspended && !q->is_evicted && !q->is_being_destroyed;
}

/* The HWS runlist order: processes, each with its queues newest first;
 * the HWS fills pipe 0..3 of queue 2, then queue 3, ... (real dump). */
static const struct emu_queue *queue_in_slot(const struct emu_node *node, const struct emu_gpu *gpu,
                                             unsigned slot, uint32_t *ret_vmid)
{
        unsigned k = 0;
        uint32_t vmid = 3;      /* the first user VMID of the real dump */

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                bool on_gpu = false;

                for (const struct emu_queue *q = p->queues; q; q = q->next) {
                        if (q->gpu != gpu || !is_mapped(q))
                                continue;
                        on_gpu = true;
                        if (k++ == slot) {
                                *ret_vmid = vmid;
                                return q;
                        }
                }
                vmid += on_gpu;
        }
        return NULL;
}

static void render_hqds_gpu(FILE *f, const struct emu_node *node, const struct emu_gpu *gpu)
{
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
                                uint32_t vmid = 0;
                                const struct emu_queue *q = queue_in_slot(node, gpu, slot, &vmid);

                                fprintf(f, " Inst %u,  CP Pipe %u, Queue %u\n", inst, pipe, queue);
                                if (q)
                                        user_hqd(q, inst, vmid, m);
                                else
                                        empty_hqd(m);
                                hqd_dump(f, base, m);
                        }
        }
}

/* The SDMA RLC queues of the 8 engines, 8 queues each, with the register
 * layout and idle values of the real dump. */
static void render_hqds_sdma(FILE *f)
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

static void render_mqds(FILE *f, const struct emu_node *node)
{
        uint32_t m[EMU_V9_MQD_DWORDS];

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                fprintf(f, "Process %d PASID 0x%x:\n", (int)p->tgid, p->pasid);
                for (const struct emu_queue *q = p->queues; q; q = q->next) {
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
        }
}

/* PM4 type-3 packets of the runlist (kfd_packet_manager_v9.c). */
#define PM4_TYPE3_HEADER(opcode, ndw) (3u << 30 | ((uint32_t)(ndw) - 2) << 16 | (uint32_t)(opcode) << 8)
#define IT_MAP_PROCESS 0xA1
#define IT_MAP_QUEUES 0xA2
#define MAP_PROCESS_DWORDS 19      /* pm4_mes_map_process_aldebaran */
#define MAP_QUEUES_DWORDS 7
#define RUNLIST_MAX_DWORDS 65536

static size_t runlist(const struct emu_node *node, const struct emu_gpu *gpu, uint32_t *ib)
{
        size_t n = 0;

        for (const struct emu_process *p = node->processes; p; p = p->next) {
                unsigned n_queues = 0;

                for (const struct emu_queue *q = p->queues; q; q = q->next)
                        n_queues += q->gpu == gpu && is_mapped(q);
                if (n_queues == 0 || n + MAP_PROCESS_DWORDS + n_queues * MAP_QUEUES_DWORDS > RUNLIST_MAX_DWORDS)
                        continue;
                ib[n] = PM4_TYPE3_HEADER(IT_MAP_PROCESS, MAP_PROCESS_DWORDS);
                ib[n + 1] = p->pasid;                        /* bitfields2: pasid */
                ib[n + 2] = n_queues << 24;                  /* bitfields14: num_queues */
                for (unsigned i = 3; i < MAP_PROCESS_DWORDS; i++)
                        ib[n + i] = 0;
                n += MAP_PROCESS_DWORDS;
                for (const struct emu_queue *q = p->queues; q; q = q->next) {
                        uint64_t mqd = q->hw ? q->hw->mqd_gpu_addr : 0;

                        if (q->gpu != gpu || !is_mapped(q))
                                continue;
                        ib[n] = PM4_TYPE3_HEADER(IT_MAP_QUEUES, MAP_QUEUES_DWORDS);
                        ib[n + 1] = 1u << 29;                /* num_queues 1 */
                        ib[n + 2] = (q->hw ? emu_doorbell_bar_dword(q->hw->frame, q->doorbell_slot) : 0) << 2;
                        ib[n + 3] = (uint32_t)mqd;
                        ib[n + 4] = (uint32_t)(mqd >> 32);
                        ib[n + 5] = (uint32_t)q->write_pointer_address;
                        ib[n + 6] = (uint32_t)(q->write_pointer_address >> 32);
                        n += MAP_QUEUES_DWORDS;
                }
        }
        return n;
}

static void render_rls(FILE *f, const struct emu_node *node)
{
        _cleanup_free_ uint32_t *ib = malloc(RUNLIST_MAX_DWORDS * sizeof(uint32_t));

        for (unsigned i = 0; i < node->n_gpus; i++) {
                size_t n = ib ? runlist(node, &node->gpus[i], ib) : 0;

                fprintf(f, "Node %u, gpu_id %x:\n", 1 + i, node->gpus[i].cfg.gpu_id);
                if (n == 0)
                        fprintf(f, "  No active runlist\n");
                else
                        hex_dump(f, "  ", ib, n);
        }
}

static int render_to(const char *root, const char *relpath, const struct emu_node *node,
                     void (*render)(FILE *f, const struct emu_node *node))
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return -ENOMEM;
        render(f, node);
        if (fclose(f) != 0)
                return -ENOMEM;
        return emu_render_write(root, relpath, text, len);
}

static void render_hqds(FILE *f, const struct emu_node *node)
{
        for (unsigned i = 0; i < node->n_gpus; i++) {
                render_hqds_gpu(f, node, &node->gpus[i]);
                render_hqds_sdma(f);
        }
}

void emu_render_debugfs(struct emu_node *node)
{
        const char *root = node->cfg.root;

        render_to(root, DEBUGFS_DIR "/mqds", node, render_mqds);
        render_to(root, DEBUGFS_DIR "/hqds", node, render_hqds);
        render_to(root, DEBUGFS_DIR "/rls", node, render_rls);
}
