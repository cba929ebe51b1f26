/* SPDX-License-Identifier: MIT */
/*
 * Dword indices of the compute MQD (v9_mqd, identical in v10/v11 compute
 * MQDs; kfd-interface.md §8.3). The HQD registers the hqds file dumps are the
 * same values as loaded into the hardware: the CP register block starts with
 * CP_MQD_BASE_ADDR, which holds MQD dword 128, and continues in MQD order.
 * This was confirmed on the captured MI308X pair (mqds and hqds read at the
 * same moment): for all 20 active HQDs, register first+0x20..first+0x38
 * equals MQD dwords 136..142 and first+0x08 is cp_hqd_active.
 */
#pragma once

enum {
        MQD_CP_MQD_BASE_ADDR_LO = 128, /* first register of an HQD dump */
        MQD_CP_HQD_ACTIVE = 130,
        MQD_CP_HQD_PQ_BASE_LO = 136,   /* ring base >> 8 */
        MQD_CP_HQD_PQ_BASE_HI = 137,
        MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_LO = 139,
        MQD_CP_HQD_PQ_RPTR_REPORT_ADDR_HI = 140,
        MQD_CP_HQD_PQ_WPTR_POLL_ADDR_LO = 141,
        MQD_CP_HQD_PQ_WPTR_POLL_ADDR_HI = 142,
        MQD_CP_HQD_PQ_DOORBELL_CONTROL = 143,
        MQD_CP_HQD_PQ_CONTROL = 145,
};

/* DOORBELL_OFFSET is bits 2..27 of CP_HQD_PQ_DOORBELL_CONTROL. The enable
 * bits above it differ between the MQD and the live register. */
#define QF_DOORBELL_OFFSET(doorbell_control) (((doorbell_control) >> 2) & 0x3ffffffu)
