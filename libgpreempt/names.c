/* SPDX-License-Identifier: MIT */
/* Names for the kernel's numbers, as logs and tools print them. */
#include <gpreempt/gpreempt.h>
#include "kfd-abi.h"
#include "opts.h"

GP_EXPORT const char *gp_queue_type_to_string(uint32_t type)
{
        switch (type) {
        case KFD_IOC_QUEUE_TYPE_COMPUTE:
                return "pm4";
        case KFD_IOC_QUEUE_TYPE_SDMA:
                return "sdma";
        case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL:
                return "aql";
        case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
                return "sdma-xgmi";
        }
        return "unknown";
}

GP_EXPORT const char *gp_runtime_state_to_string(enum gp_runtime_state state)
{
        switch (state) {
        case GP_RUNTIME_DISABLED:
                return "disabled";
        case GP_RUNTIME_ENABLED:
                return "enabled";
        case GP_RUNTIME_ENABLED_BUSY:
                return "enabled-busy";
        case GP_RUNTIME_ENABLED_ERROR:
                return "enabled-error";
        }
        return "unknown";
}
