/* SPDX-License-Identifier: MIT */
/*
 * The memory queue descriptors kfd keeps for a queue, as debugfs `mqds`
 * dumps them: the v9 compute MQD per XCC (kfd_mqd_manager_v9.c: init_mqd,
 * update_mqd, init_mqd_v9_4_3, update_mqd_v9_4_3) and the v9 SDMA MQD
 * (init_mqd_sdma, update_mqd_sdma). Only what the driver writes is here;
 * the state the CP writes back when it unmaps a queue is not modelled.
 */
#include <string.h>

#include "gpu-internal.h"

/* struct v9_mqd dword indices (v9_structs.h). */
enum {
        MQD_HEADER = 0,
        MQD_COMPUTE_PIPELINESTAT_ENABLE = 11,
        MQD_COMPUTE_PGM_RSRC2 = 20,
        MQD_STATIC_THREAD_MGMT_SE0 = 23,
        MQD_STATIC_THREAD_MGMT_SE1 = 24,
        MQD_STATIC_THREAD_MGMT_SE2 = 26,
        MQD_STATIC_THREAD_MGMT_SE3 = 27,
        MQD_CURRENT_LOGIC_XCC_ID = 39,      /* se4 on parts before 9.4.3 */
        MQD_RESTART_CG_TG_ID = 40,          /* se5 */
        MQD_TG_CHUNK_SIZE = 41,             /* se6 */
        MQD_RESTORE_TG_CHUNK_SIZE = 42,     /* se7 */
        MQD_CP_MQD_BASE_ADDR_LO = 128,
        MQD_CP_MQD_BASE_ADDR_HI = 129,
        MQD_CP_HQD_ACTIVE = 130,
        MQD_CP_HQD_VMID = 131,
        MQD_CP_HQD_PERSISTENT_STATE = 132,
        MQD_CP_HQD_PIPE_PRIORITY = 133,
        MQD_CP_HQD_QUEUE_PRIORITY = 134,
        MQD_CP_HQD_QUANTUM = 135,
        MQD_CP_HQD_PQ_BASE_LO = 136,
        MQD_CP_HQD_PQ_BASE_HI = 137,
        MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO = 139,
        MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI = 140,
        MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO = 141,
        MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI = 142,
        MQD_CP_HQD_PQ_DOORBELL_CONTROL = 143,
        MQD_CP_HQD_PQ_CONTROL = 145,
        MQD_CP_HQD_IB_CONTROL = 149,
        MQD_CP_HQD_HQ_STATUS0 = 160,
        MQD_CP_MQD_CONTROL = 162,
        MQD_CP_HQD_EOP_BASE_ADDR_LO = 165,
        MQD_CP_HQD_EOP_BASE_ADDR_HI = 166,
        MQD_CP_HQD_EOP_CONTROL = 167,
        MQD_CP_HQD_CTX_SAVE_BASE_ADDR_LO = 171,
        MQD_CP_HQD_CTX_SAVE_BASE_ADDR_HI = 172,
        MQD_CP_HQD_CNTL_STACK_OFFSET = 174,
        MQD_CP_HQD_CNTL_STACK_SIZE = 175,
        MQD_CP_HQD_WG_STATE_OFFSET = 176,
        MQD_CP_HQD_CTX_SAVE_SIZE = 177,
        MQD_CP_HQD_AQL_CONTROL = 181,
        MQD_CP_MQD_STRIDE_SIZE = 226,
};

/* struct v9_sdma_mqd dword indices. */
enum {
        SDMA_RB_CNTL = 0,
        SDMA_RB_BASE = 1,
        SDMA_RB_BASE_HI = 2,
        SDMA_RB_RPTR_ADDR_HI = 8,
        SDMA_RB_RPTR_ADDR_LO = 9,
        SDMA_IB_CNTL = 10,
        SDMA_DOORBELL_OFFSET = 22,
        SDMA_DUMMY_REG = 27,
};

#define MQD_HEADER_VALUE 0xC0310800u
#define COMPUTE_PGM_RSRC2_TRAP_PRESENT (1u << 6)
#define PERSISTENT_STATE_PRELOAD (1u | 0x53u << 8)    /* PRELOAD_REQ, PRELOAD_SIZE 0x53 */
#define PERSISTENT_STATE_QSWITCH_MODE (1u << 30)
#define HQD_QUANTUM_VALUE 0x111u                       /* QUANTUM_EN, SCALE 1, DURATION 1 */
#define PQ_CONTROL_BASE 0x4500u                        /* RPTR_BLOCK_SIZE 5, UNORD_DISPATCH */
#define PQ_CONTROL_AQL 0x14010000u                     /* SLOT_BASED_WPTR 2, QUEUE_FULL_EN, WPP_CLAMP_EN */
#define PQ_CONTROL_NO_UPDATE_RPTR 0x08000000u          /* cleared on the master XCC */
#define DOORBELL_CONTROL_OFFSET_SHIFT 2
#define DOORBELL_CONTROL_BIF_DROP (1u << 1)
#define IB_CONTROL_VALUE 0x00b00000u                   /* MIN_IB_AVAIL_SIZE 3, IB_EXE_DISABLE */
#define HQ_STATUS0_DISPATCH_PTR (1u << 14)             /* the CP sets up DISPATCH_PTR, for the debugger */
#define MQD_CONTROL_PRIV_STATE (1u << 8)
#define EOP_CONTROL_MAX 0xAu
#define GPU_PAGE_SIZE 4096u
#define V9_MQD_BYTES (EMU_V9_MQD_DWORDS * 4)

#define SDMA_RB_CNTL_RB_SIZE_SHIFT 1
#define SDMA_RB_CNTL_RPTR_WRITEBACK_ENABLE (1u << 12)
#define SDMA_RB_CNTL_RPTR_WRITEBACK_TIMER_SHIFT 16
#define SDMA_IB_CNTL_SWITCH_INSIDE_IB (1u << 8)
#define SDMA_RLC_DUMMY_DEFAULT 0xfu

static uint32_t lo32(uint64_t v) { return (uint32_t)v; }
static uint32_t hi32(uint64_t v) { return (uint32_t)(v >> 32); }

/* The kernel's order_base_2: ceil(log2(n)), 0 for n <= 1. */
static uint32_t order_base_2(uint64_t n)
{
        uint32_t order = 0;

        while (((uint64_t)1 << order) < n)
                order++;
        return order;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
        return (v + a - 1) / a * a;
}

bool emu_queue_is_compute(const struct emu_queue *q)
{
        return q->type == KFD_IOC_QUEUE_TYPE_COMPUTE || q->type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
}

uint64_t emu_mqd_stride(const struct emu_queue *q)
{
        /* mqd_stride_v9: the MQD page and the control stack behind it. */
        return align_up(q->ctl_stack_size, GPU_PAGE_SIZE) + align_up(V9_MQD_BYTES, GPU_PAGE_SIZE);
}

/* pipe_priority_map (kfd_mqd_manager.c): queue priority 0..15 to CS_LOW,
 * CS_MEDIUM or CS_HIGH. */
static uint32_t pipe_priority(uint32_t queue_priority)
{
        if (queue_priority >= 11)
                return 2;
        return queue_priority >= 7 ? 1 : 0;
}

void emu_v9_compute_mqd(const struct emu_queue *q, unsigned xcc, uint32_t m[EMU_V9_MQD_DWORDS])
{
        bool aql = q->type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
        bool cwsr = q->ctx_save_restore_address != 0;
        uint32_t num_xcc = q->gpu->cfg.num_xcc ? q->gpu->cfg.num_xcc : 1;
        uint64_t mqd_addr = (q->hw ? q->hw->mqd_gpu_addr : 0) + xcc * emu_mqd_stride(q);
        uint32_t doorbell = q->hw ? emu_doorbell_bar_dword(q->hw->frame, q->doorbell_slot) : 0;

        memset(m, 0, V9_MQD_BYTES);
        /* init_mqd */
        m[MQD_HEADER] = MQD_HEADER_VALUE;
        m[MQD_COMPUTE_PIPELINESTAT_ENABLE] = 1;
        m[MQD_STATIC_THREAD_MGMT_SE0] = m[MQD_STATIC_THREAD_MGMT_SE1] = 0xffffffffu;
        m[MQD_STATIC_THREAD_MGMT_SE2] = m[MQD_STATIC_THREAD_MGMT_SE3] = 0xffffffffu;
        m[MQD_CURRENT_LOGIC_XCC_ID] = m[MQD_RESTART_CG_TG_ID] = 0xffffffffu;
        m[MQD_TG_CHUNK_SIZE] = m[MQD_RESTORE_TG_CHUNK_SIZE] = 0xffffffffu;
        m[MQD_CP_HQD_PERSISTENT_STATE] = PERSISTENT_STATE_PRELOAD;
        m[MQD_CP_MQD_CONTROL] = MQD_CONTROL_PRIV_STATE;
        m[MQD_CP_MQD_BASE_ADDR_LO] = lo32(mqd_addr);
        m[MQD_CP_MQD_BASE_ADDR_HI] = hi32(mqd_addr);
        m[MQD_CP_HQD_QUANTUM] = HQD_QUANTUM_VALUE;
        /* Written by the CP when it loads the queue; 1 in every MQD of the
         * real dump, which kfdemu keeps whether or not the queue is mapped. */
        m[MQD_CP_HQD_ACTIVE] = 1;
        m[MQD_CP_HQD_HQ_STATUS0] = HQ_STATUS0_DISPATCH_PTR;
        if (aql)
                m[MQD_CP_HQD_AQL_CONTROL] = 1;
        /* kfd_process_init_cwsr_dgpu gives every queue the trap handler. */
        m[MQD_COMPUTE_PGM_RSRC2] = COMPUTE_PGM_RSRC2_TRAP_PRESENT;
        if (cwsr) {
                uint64_t save = q->ctx_save_restore_address + (uint64_t)xcc * q->ctx_save_restore_size;

                m[MQD_CP_HQD_PERSISTENT_STATE] |= PERSISTENT_STATE_QSWITCH_MODE;
                m[MQD_CP_HQD_CTX_SAVE_BASE_ADDR_LO] = lo32(save);
                m[MQD_CP_HQD_CTX_SAVE_BASE_ADDR_HI] = hi32(save);
                m[MQD_CP_HQD_CTX_SAVE_SIZE] = q->ctx_save_restore_size;
                m[MQD_CP_HQD_CNTL_STACK_SIZE] = q->ctl_stack_size;
                m[MQD_CP_HQD_CNTL_STACK_OFFSET] = q->ctl_stack_size;
                m[MQD_CP_HQD_WG_STATE_OFFSET] = q->ctl_stack_size;
        }
        m[MQD_CP_MQD_STRIDE_SIZE] = (uint32_t)emu_mqd_stride(q);

        /* update_mqd */
        m[MQD_CP_HQD_PQ_CONTROL] = PQ_CONTROL_BASE | (order_base_2(q->ring_size / 4) - 1);
        m[MQD_CP_HQD_PQ_BASE_LO] = lo32(q->ring_base_address >> 8);
        m[MQD_CP_HQD_PQ_BASE_HI] = hi32(q->ring_base_address >> 8);
        m[MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO] = lo32(q->read_pointer_address);
        m[MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI] = hi32(q->read_pointer_address);
        m[MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO] = lo32(q->write_pointer_address);
        m[MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI] = hi32(q->write_pointer_address);
        m[MQD_CP_HQD_PQ_DOORBELL_CONTROL] = doorbell << DOORBELL_CONTROL_OFFSET_SHIFT;
        m[MQD_CP_HQD_IB_CONTROL] = IB_CONTROL_VALUE;
        if (q->eop_buffer_size) {
                uint32_t eop = order_base_2(q->eop_buffer_size / 8);

                m[MQD_CP_HQD_EOP_CONTROL] = eop < EOP_CONTROL_MAX ? eop : EOP_CONTROL_MAX;
        }
        m[MQD_CP_HQD_EOP_BASE_ADDR_LO] = lo32(q->eop_buffer_address >> 8);
        m[MQD_CP_HQD_EOP_BASE_ADDR_HI] = hi32(q->eop_buffer_address >> 8);
        if (aql) {
                m[MQD_CP_HQD_PQ_CONTROL] |= PQ_CONTROL_AQL | PQ_CONTROL_NO_UPDATE_RPTR;
                m[MQD_CP_HQD_PQ_DOORBELL_CONTROL] |= DOORBELL_CONTROL_BIF_DROP;
        }
        /* set_priority; this tree also keeps cp_hqd_queue_priority, as the
         * real MI308X dump shows (7 for ROCr's default queues). */
        m[MQD_CP_HQD_PIPE_PRIORITY] = pipe_priority(q->queue_priority);
        m[MQD_CP_HQD_QUEUE_PRIORITY] = q->queue_priority;

        /* init_mqd_v9_4_3 / update_mqd_v9_4_3 */
        if (aql) {
                m[MQD_TG_CHUNK_SIZE] = 1;
                m[MQD_CURRENT_LOGIC_XCC_ID] = ((q->hw ? q->hw->logical_xcc_start : 0) + xcc) % num_xcc;
                if (xcc == 0)
                        m[MQD_CP_HQD_PQ_CONTROL] &= ~PQ_CONTROL_NO_UPDATE_RPTR;
        } else {
                m[MQD_CURRENT_LOGIC_XCC_ID] = 0;
                m[MQD_TG_CHUNK_SIZE] = 0;
        }
}

void emu_v9_sdma_mqd(const struct emu_queue *q, uint32_t m[EMU_V9_SDMA_MQD_DWORDS])
{
        uint32_t doorbell = q->hw ? emu_doorbell_bar_dword(q->hw->frame, q->doorbell_slot) : 0;

        memset(m, 0, EMU_V9_SDMA_MQD_DWORDS * 4);
        m[SDMA_RB_CNTL] = order_base_2(q->ring_size / 4) << SDMA_RB_CNTL_RB_SIZE_SHIFT |
                          SDMA_RB_CNTL_RPTR_WRITEBACK_ENABLE |
                          6u << SDMA_RB_CNTL_RPTR_WRITEBACK_TIMER_SHIFT;
        m[SDMA_RB_BASE] = lo32(q->ring_base_address >> 8);
        m[SDMA_RB_BASE_HI] = hi32(q->ring_base_address >> 8);
        m[SDMA_RB_RPTR_ADDR_LO] = lo32(q->read_pointer_address);
        m[SDMA_RB_RPTR_ADDR_HI] = hi32(q->read_pointer_address);
        m[SDMA_DOORBELL_OFFSET] = doorbell << DOORBELL_CONTROL_OFFSET_SHIFT;
        m[SDMA_DUMMY_REG] = SDMA_RLC_DUMMY_DEFAULT;
        m[SDMA_IB_CNTL] |= SDMA_IB_CNTL_SWITCH_INSIDE_IB;
}
