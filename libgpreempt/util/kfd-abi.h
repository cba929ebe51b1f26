/* SPDX-License-Identifier: MIT */
/*
 * The amdkfd ioctl ABI that gpreempt and kfdemu speak: the system's
 * <linux/kfd_ioctl.h> for everything up to KFD 1.11, plus the debugger API
 * added in KFD 1.13 (Linux 6.5) when the system header predates it.
 *
 * Debian 12's linux-libc-dev (6.1) stops at 1.11 (and its header cannot be
 * included without libdrm's include path) and has neither
 * AMDKFD_IOC_RUNTIME_ENABLE (0x25) nor AMDKFD_IOC_DBG_TRAP (0x26). The
 * definitions below are written from the layouts documented in
 * docs/reference/kfd-interface.md §1-2 (read from include/uapi/linux/
 * kfd_ioctl.h at torvalds/linux 100c85421b52) and use the upstream names, so
 * code compiles unchanged against a newer system header.
 *
 * Every size, offset and request number is checked at compile time at the
 * end of this file, whichever header provided it.
 */
#pragma once

#include <linux/ioctl.h>
#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

/* The system header includes <drm/drm.h>, which Debian ships only as
 * libdrm's <libdrm/drm.h>; use the system header only where it can be
 * included at all. */
#if __has_include(<drm/drm.h>) && __has_include(<linux/kfd_ioctl.h>)
#include <linux/kfd_ioctl.h>
#endif

/* The first KFD interface version that has the debugger API. */
#define GP_KFD_MIN_MAJOR 1
#define GP_KFD_MIN_MINOR 13

#ifndef KFD_IOCTL_MAJOR_VERSION
/* The KFD 1.0 core the emulated applications need (unchanged since 1.0). */
#define KFD_IOCTL_MAJOR_VERSION 1
#define KFD_IOCTL_MINOR_VERSION 0

struct kfd_ioctl_get_version_args {
        __u32 major_version;
        __u32 minor_version;
};

#define KFD_IOC_QUEUE_TYPE_COMPUTE 0x0
#define KFD_IOC_QUEUE_TYPE_SDMA 0x1
#define KFD_IOC_QUEUE_TYPE_COMPUTE_AQL 0x2
#define KFD_IOC_QUEUE_TYPE_SDMA_XGMI 0x3

#define KFD_MAX_QUEUE_PERCENTAGE 100
#define KFD_MAX_QUEUE_PRIORITY 15

struct kfd_ioctl_create_queue_args {
        __u64 ring_base_address;
        __u64 write_pointer_address;
        __u64 read_pointer_address;
        __u64 doorbell_offset;
        __u32 ring_size;
        __u32 gpu_id;
        __u32 queue_type;
        __u32 queue_percentage;
        __u32 queue_priority;
        __u32 queue_id;
        __u64 eop_buffer_address;
        __u64 eop_buffer_size;
        __u64 ctx_save_restore_address;
        __u32 ctx_save_restore_size;
        __u32 ctl_stack_size;
};

struct kfd_ioctl_destroy_queue_args {
        __u32 queue_id;
        __u32 pad;
};

/* What the ROCt thunk sets up in hsaKmtOpenKFD: the VM of a render node,
 * the apertures, the cache policy (kfd-interface.md §12). */
#define KFD_IOC_CACHE_POLICY_COHERENT 0
#define KFD_IOC_CACHE_POLICY_NONCOHERENT 1

struct kfd_ioctl_get_clock_counters_args {
        __u64 gpu_clock_counter;
        __u64 cpu_clock_counter;
        __u64 system_clock_counter;
        __u64 system_clock_freq;
        __u32 gpu_id;
        __u32 pad;
};

struct kfd_ioctl_set_memory_policy_args {
        __u64 alternate_aperture_base;
        __u64 alternate_aperture_size;
        __u32 gpu_id;
        __u32 default_policy;
        __u32 alternate_policy;
        __u32 pad;
};

struct kfd_process_device_apertures {
        __u64 lds_base;
        __u64 lds_limit;
        __u64 scratch_base;
        __u64 scratch_limit;
        __u64 gpuvm_base;
        __u64 gpuvm_limit;
        __u32 gpu_id;
        __u32 pad;
};

struct kfd_ioctl_get_process_apertures_new_args {
        __u64 kfd_process_device_apertures_ptr;
        __u32 num_of_nodes;
        __u32 pad;
};

struct kfd_ioctl_acquire_vm_args {
        __u32 drm_fd;
        __u32 gpu_id;
};

struct kfd_ioctl_set_scratch_backing_va_args {
        __u64 va_addr;
        __u32 gpu_id;
        __u32 pad;
};

struct kfd_ioctl_get_tile_config_args {
        __u64 tile_config_ptr;
        __u64 macro_tile_config_ptr;
        __u32 num_tile_configs;
        __u32 num_macro_tile_configs;
        __u32 gpu_id;
        __u32 gb_addr_config;
        __u32 num_banks;
        __u32 num_ranks;
};

struct kfd_ioctl_set_trap_handler_args {
        __u64 tba_addr;
        __u64 tma_addr;
        __u32 gpu_id;
        __u32 pad;
};

/* Memory of a process's devices (kfd-interface.md §13). */
#define KFD_IOC_ALLOC_MEM_FLAGS_VRAM (1 << 0)
#define KFD_IOC_ALLOC_MEM_FLAGS_GTT (1 << 1)
#define KFD_IOC_ALLOC_MEM_FLAGS_USERPTR (1 << 2)
#define KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL (1 << 3)
#define KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP (1 << 4)
#define KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE (1u << 31)
#define KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE (1 << 30)
#define KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC (1 << 29)
#define KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE (1 << 28)
#define KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM (1 << 27)
#define KFD_IOC_ALLOC_MEM_FLAGS_COHERENT (1 << 26)
#define KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED (1 << 25)

struct kfd_ioctl_alloc_memory_of_gpu_args {
        __u64 va_addr;
        __u64 size;
        __u64 handle;
        __u64 mmap_offset;
        __u32 gpu_id;
        __u32 flags;
};

struct kfd_ioctl_free_memory_of_gpu_args {
        __u64 handle;
};

struct kfd_ioctl_map_memory_to_gpu_args {
        __u64 handle;
        __u64 device_ids_array_ptr;
        __u32 n_devices;
        __u32 n_success;
};

struct kfd_ioctl_unmap_memory_from_gpu_args {
        __u64 handle;
        __u64 device_ids_array_ptr;
        __u32 n_devices;
        __u32 n_success;
};

/* HSA events (kfd-interface.md §14). */
#define KFD_IOC_EVENT_SIGNAL 0
#define KFD_IOC_EVENT_NODECHANGE 1
#define KFD_IOC_EVENT_DEVICESTATECHANGE 2
#define KFD_IOC_EVENT_HW_EXCEPTION 3
#define KFD_IOC_EVENT_SYSTEM_EVENT 4
#define KFD_IOC_EVENT_DEBUG_EVENT 5
#define KFD_IOC_EVENT_PROFILE_EVENT 6
#define KFD_IOC_EVENT_QUEUE_EVENT 7
#define KFD_IOC_EVENT_MEMORY 8

#define KFD_IOC_WAIT_RESULT_COMPLETE 0
#define KFD_IOC_WAIT_RESULT_TIMEOUT 1
#define KFD_IOC_WAIT_RESULT_FAIL 2
#define KFD_HW_EXCEPTION_ECC 1 /* hw_exception_data.reset_cause; 0 is a GPU hang */

#define KFD_SIGNAL_EVENT_LIMIT 4096

struct kfd_ioctl_create_event_args {
        __u64 event_page_offset;
        __u32 event_trigger_data;
        __u32 event_type;
        __u32 auto_reset;
        __u32 node_id;
        __u32 event_id;
        __u32 event_slot_index;
};

struct kfd_ioctl_destroy_event_args {
        __u32 event_id;
        __u32 pad;
};

struct kfd_ioctl_set_event_args {
        __u32 event_id;
        __u32 pad;
};

struct kfd_ioctl_reset_event_args {
        __u32 event_id;
        __u32 pad;
};

struct kfd_memory_exception_failure {
        __u32 NotPresent;
        __u32 ReadOnly;
        __u32 NoExecute;
        __u32 imprecise;
};

struct kfd_hsa_memory_exception_data {
        struct kfd_memory_exception_failure failure;
        __u64 va;
        __u32 gpu_id;
        __u32 ErrorType;
};

struct kfd_hsa_hw_exception_data {
        __u32 reset_type;
        __u32 reset_cause;
        __u32 memory_lost;
        __u32 gpu_id;
};

/* KFD 1.12 (Linux 6.4) added the signal data's event age to the union. */
struct kfd_hsa_signal_event_data {
        __u64 last_event_age;
};

struct kfd_event_data {
        union {
                struct kfd_hsa_memory_exception_data memory_exception_data;
                struct kfd_hsa_hw_exception_data hw_exception_data;
                struct kfd_hsa_signal_event_data signal_event_data;
        };
        __u64 kfd_event_data_ext;
        __u32 event_id;
        __u32 pad;
};

struct kfd_ioctl_wait_events_args {
        __u64 events_ptr;
        __u32 num_events;
        __u32 wait_for_all;
        __u32 timeout;
        __u32 wait_result;
};

#define AMDKFD_IOCTL_BASE 'K'
#define AMDKFD_IOR(nr, type) _IOR(AMDKFD_IOCTL_BASE, nr, type)
#define AMDKFD_IOW(nr, type) _IOW(AMDKFD_IOCTL_BASE, nr, type)
#define AMDKFD_IOWR(nr, type) _IOWR(AMDKFD_IOCTL_BASE, nr, type)
#define AMDKFD_IOC_GET_VERSION AMDKFD_IOR(0x01, struct kfd_ioctl_get_version_args)
#define AMDKFD_IOC_CREATE_QUEUE AMDKFD_IOWR(0x02, struct kfd_ioctl_create_queue_args)
#define AMDKFD_IOC_DESTROY_QUEUE AMDKFD_IOWR(0x03, struct kfd_ioctl_destroy_queue_args)
#define AMDKFD_IOC_SET_MEMORY_POLICY AMDKFD_IOW(0x04, struct kfd_ioctl_set_memory_policy_args)
#define AMDKFD_IOC_GET_CLOCK_COUNTERS AMDKFD_IOWR(0x05, struct kfd_ioctl_get_clock_counters_args)
#define AMDKFD_IOC_SET_SCRATCH_BACKING_VA AMDKFD_IOWR(0x11, struct kfd_ioctl_set_scratch_backing_va_args)
#define AMDKFD_IOC_GET_TILE_CONFIG AMDKFD_IOWR(0x12, struct kfd_ioctl_get_tile_config_args)
#define AMDKFD_IOC_SET_TRAP_HANDLER AMDKFD_IOW(0x13, struct kfd_ioctl_set_trap_handler_args)
#define AMDKFD_IOC_GET_PROCESS_APERTURES_NEW AMDKFD_IOWR(0x14, struct kfd_ioctl_get_process_apertures_new_args)
#define AMDKFD_IOC_ACQUIRE_VM AMDKFD_IOW(0x15, struct kfd_ioctl_acquire_vm_args)
#define AMDKFD_IOC_CREATE_EVENT AMDKFD_IOWR(0x08, struct kfd_ioctl_create_event_args)
#define AMDKFD_IOC_DESTROY_EVENT AMDKFD_IOW(0x09, struct kfd_ioctl_destroy_event_args)
#define AMDKFD_IOC_SET_EVENT AMDKFD_IOW(0x0A, struct kfd_ioctl_set_event_args)
#define AMDKFD_IOC_RESET_EVENT AMDKFD_IOW(0x0B, struct kfd_ioctl_reset_event_args)
#define AMDKFD_IOC_WAIT_EVENTS AMDKFD_IOWR(0x0C, struct kfd_ioctl_wait_events_args)
#define AMDKFD_IOC_ALLOC_MEMORY_OF_GPU AMDKFD_IOWR(0x16, struct kfd_ioctl_alloc_memory_of_gpu_args)
#define AMDKFD_IOC_FREE_MEMORY_OF_GPU AMDKFD_IOW(0x17, struct kfd_ioctl_free_memory_of_gpu_args)
#define AMDKFD_IOC_MAP_MEMORY_TO_GPU AMDKFD_IOWR(0x18, struct kfd_ioctl_map_memory_to_gpu_args)
#define AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU AMDKFD_IOWR(0x19, struct kfd_ioctl_unmap_memory_from_gpu_args)

/* KFD SMI events (KFD 1.3): an fd per GPU whose records say what happened
 * to it (kfd-interface.md §16.8). */
enum kfd_smi_event {
        KFD_SMI_EVENT_NONE = 0,
        KFD_SMI_EVENT_VMFAULT = 1,
        KFD_SMI_EVENT_THERMAL_THROTTLE = 2,
        KFD_SMI_EVENT_GPU_PRE_RESET = 3,
        KFD_SMI_EVENT_GPU_POST_RESET = 4,
};
#define KFD_SMI_EVENT_MASK_FROM_INDEX(i) (1ULL << ((i) - 1))

struct kfd_ioctl_smi_events_args {
        __u32 gpuid;
        __u32 anon_fd;
};
#define AMDKFD_IOC_SMI_EVENTS AMDKFD_IOWR(0x1F, struct kfd_ioctl_smi_events_args)
#endif /* no usable system header */

#if KFD_IOCTL_MINOR_VERSION < 13

enum kfd_dbg_trap_override_mode {
        KFD_DBG_TRAP_OVERRIDE_OR = 0,
        KFD_DBG_TRAP_OVERRIDE_REPLACE = 1,
};

enum kfd_dbg_trap_wave_launch_mode {
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL = 0,
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT = 1,
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG = 3,
};

enum kfd_dbg_trap_exception_code {
        EC_NONE = 0,
        EC_QUEUE_WAVE_ABORT = 1,
        EC_QUEUE_WAVE_TRAP = 2,
        EC_QUEUE_WAVE_MATH_ERROR = 3,
        EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION = 4,
        EC_QUEUE_WAVE_MEMORY_VIOLATION = 5,
        EC_QUEUE_WAVE_APERTURE_VIOLATION = 6,
        EC_QUEUE_PACKET_DISPATCH_DIM_INVALID = 16,
        EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID = 17,
        EC_QUEUE_PACKET_DISPATCH_CODE_INVALID = 18,
        EC_QUEUE_PACKET_RESERVED = 19,
        EC_QUEUE_PACKET_UNSUPPORTED = 20,
        EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID = 21,
        EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID = 22,
        EC_QUEUE_PACKET_VENDOR_UNSUPPORTED = 23,
        EC_QUEUE_PREEMPTION_ERROR = 30,
        EC_QUEUE_NEW = 31,
        EC_DEVICE_QUEUE_DELETE = 32,
        EC_DEVICE_MEMORY_VIOLATION = 33,
        EC_DEVICE_RAS_ERROR = 34,
        EC_DEVICE_FATAL_HALT = 35,
        EC_DEVICE_NEW = 36,
        EC_PROCESS_RUNTIME = 48,
        EC_PROCESS_DEVICE_REMOVE = 49,
        EC_MAX
};

#define KFD_EC_MASK(ecode) ((__u64)1 << ((ecode) - 1))

#define KFD_EC_MASK_QUEUE                                                        \
        (KFD_EC_MASK(EC_QUEUE_WAVE_ABORT) | KFD_EC_MASK(EC_QUEUE_WAVE_TRAP) |     \
         KFD_EC_MASK(EC_QUEUE_WAVE_MATH_ERROR) |                                 \
         KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION) |                        \
         KFD_EC_MASK(EC_QUEUE_WAVE_MEMORY_VIOLATION) |                           \
         KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION) |                         \
         KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID) |                     \
         KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID) |      \
         KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID) |                    \
         KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED) |                                 \
         KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED) |                              \
         KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID) |         \
         KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID) |                \
         KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED) |                       \
         KFD_EC_MASK(EC_QUEUE_PREEMPTION_ERROR) | KFD_EC_MASK(EC_QUEUE_NEW))
#define KFD_EC_MASK_DEVICE                                                       \
        (KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE) | KFD_EC_MASK(EC_DEVICE_RAS_ERROR) | \
         KFD_EC_MASK(EC_DEVICE_FATAL_HALT) |                                     \
         KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION) | KFD_EC_MASK(EC_DEVICE_NEW))
#define KFD_EC_MASK_PROCESS                                                      \
        (KFD_EC_MASK(EC_PROCESS_RUNTIME) | KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE))

/* Per-queue result bits in the SUSPEND/RESUME queue-id array. Upstream
 * writes the invalid mask as the int expression 1 << 31, which is undefined
 * behaviour when evaluated (UBSan reports it); this spells the same int
 * value without the overflow. It is a negative int either way: cast array
 * entries to u32 before masking (ROCdbgapi's decode_queue_id does the same). */
#define KFD_DBG_QUEUE_ERROR_BIT 30
#define KFD_DBG_QUEUE_INVALID_BIT 31
#define KFD_DBG_QUEUE_ERROR_MASK (1 << KFD_DBG_QUEUE_ERROR_BIT)
#define KFD_DBG_QUEUE_INVALID_MASK (-0x7fffffff - 1)

enum kfd_dbg_runtime_state {
        DEBUG_RUNTIME_STATE_DISABLED = 0,
        DEBUG_RUNTIME_STATE_ENABLED,
        DEBUG_RUNTIME_STATE_ENABLED_BUSY,
        DEBUG_RUNTIME_STATE_ENABLED_ERROR,
};

struct kfd_runtime_info {
        __u64 r_debug;
        __u32 runtime_state;
        __u32 ttmp_setup;
};

#define KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK 1
#define KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK 2

struct kfd_ioctl_runtime_enable_args {
        __u64 r_debug;
        __u32 mode_mask;
        __u32 capabilities_mask;
};

struct kfd_queue_snapshot_entry {
        __u64 exception_status;
        __u64 ring_base_address;
        __u64 write_pointer_address;
        __u64 read_pointer_address;
        __u64 ctx_save_restore_address;
        __u32 queue_id;
        __u32 gpu_id;
        __u32 ring_size;
        __u32 queue_type;
        __u32 ctx_save_restore_area_size;
        __u32 reserved;
};

/* The 1.13 layout (120 bytes). Newer kernels append capability2 and pad
 * (128 bytes); the entry_size negotiation lets both sides agree on the
 * smaller of the two. */
struct kfd_dbg_device_info_entry {
        __u64 exception_status;
        __u64 lds_base;
        __u64 lds_limit;
        __u64 scratch_base;
        __u64 scratch_limit;
        __u64 gpuvm_base;
        __u64 gpuvm_limit;
        __u32 gpu_id;
        __u32 location_id;
        __u32 vendor_id;
        __u32 device_id;
        __u32 revision_id;
        __u32 subsystem_vendor_id;
        __u32 subsystem_device_id;
        __u32 fw_version;
        __u32 gfx_target_version;
        __u32 simd_count;
        __u32 max_waves_per_simd;
        __u32 array_count;
        __u32 simd_arrays_per_engine;
        __u32 num_xcc;
        __u32 capability;
        __u32 debug_prop;
};

struct kfd_context_save_area_header {
        struct {
                __u32 control_stack_offset;
                __u32 control_stack_size;
                __u32 wave_state_offset;
                __u32 wave_state_size;
        } wave_state;
        __u32 debug_offset;
        __u32 debug_size;
        __u64 err_payload_addr;
        __u32 err_event_id;
        __u32 reserved1;
};

enum kfd_dbg_trap_operations {
        KFD_IOC_DBG_TRAP_ENABLE = 0,
        KFD_IOC_DBG_TRAP_DISABLE = 1,
        KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT = 2,
        KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED = 3,
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE = 4,
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE = 5,
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES = 6,
        KFD_IOC_DBG_TRAP_RESUME_QUEUES = 7,
        KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH = 8,
        KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH = 9,
        KFD_IOC_DBG_TRAP_SET_FLAGS = 10,
        KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT = 11,
        KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO = 12,
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT = 13,
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT = 14,
};

struct kfd_ioctl_dbg_trap_enable_args {
        __u64 exception_mask;
        __u64 rinfo_ptr;
        __u32 rinfo_size;
        __u32 dbg_fd;
};

struct kfd_ioctl_dbg_trap_send_runtime_event_args {
        __u64 exception_mask;
        __u32 gpu_id;
        __u32 queue_id;
};

struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args {
        __u64 exception_mask;
};

struct kfd_ioctl_dbg_trap_set_wave_launch_override_args {
        __u32 override_mode;
        __u32 enable_mask;
        __u32 support_request_mask;
        __u32 pad;
};

struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args {
        __u32 launch_mode;
        __u32 pad;
};

struct kfd_ioctl_dbg_trap_suspend_queues_args {
        __u64 exception_mask;
        __u64 queue_array_ptr;
        __u32 num_queues;
        __u32 grace_period;
};

struct kfd_ioctl_dbg_trap_resume_queues_args {
        __u64 queue_array_ptr;
        __u32 num_queues;
        __u32 pad;
};

struct kfd_ioctl_dbg_trap_set_node_address_watch_args {
        __u64 address;
        __u32 mode;
        __u32 mask;
        __u32 gpu_id;
        __u32 id;
};

struct kfd_ioctl_dbg_trap_clear_node_address_watch_args {
        __u32 gpu_id;
        __u32 id;
};

struct kfd_ioctl_dbg_trap_set_flags_args {
        __u32 flags;
        __u32 pad;
};

struct kfd_ioctl_dbg_trap_query_debug_event_args {
        __u64 exception_mask;
        __u32 gpu_id;
        __u32 queue_id;
};

struct kfd_ioctl_dbg_trap_query_exception_info_args {
        __u64 info_ptr;
        __u32 info_size;
        __u32 source_id;
        __u32 exception_code;
        __u32 clear_exception;
};

struct kfd_ioctl_dbg_trap_queue_snapshot_args {
        __u64 exception_mask;
        __u64 snapshot_buf_ptr;
        __u32 num_queues;
        __u32 entry_size;
};

struct kfd_ioctl_dbg_trap_device_snapshot_args {
        __u64 exception_mask;
        __u64 snapshot_buf_ptr;
        __u32 num_devices;
        __u32 entry_size;
};

struct kfd_ioctl_dbg_trap_args {
        __u32 pid;
        __u32 op;
        union {
                struct kfd_ioctl_dbg_trap_enable_args enable;
                struct kfd_ioctl_dbg_trap_send_runtime_event_args send_runtime_event;
                struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args set_exceptions_enabled;
                struct kfd_ioctl_dbg_trap_set_wave_launch_override_args launch_override;
                struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args launch_mode;
                struct kfd_ioctl_dbg_trap_suspend_queues_args suspend_queues;
                struct kfd_ioctl_dbg_trap_resume_queues_args resume_queues;
                struct kfd_ioctl_dbg_trap_set_node_address_watch_args set_node_address_watch;
                struct kfd_ioctl_dbg_trap_clear_node_address_watch_args clear_node_address_watch;
                struct kfd_ioctl_dbg_trap_set_flags_args set_flags;
                struct kfd_ioctl_dbg_trap_query_debug_event_args query_debug_event;
                struct kfd_ioctl_dbg_trap_query_exception_info_args query_exception_info;
                struct kfd_ioctl_dbg_trap_queue_snapshot_args queue_snapshot;
                struct kfd_ioctl_dbg_trap_device_snapshot_args device_snapshot;
        };
};

#define AMDKFD_IOC_RUNTIME_ENABLE AMDKFD_IOWR(0x25, struct kfd_ioctl_runtime_enable_args)
#define AMDKFD_IOC_DBG_TRAP AMDKFD_IOWR(0x26, struct kfd_ioctl_dbg_trap_args)

#endif /* KFD_IOCTL_MINOR_VERSION < 13 */

/* Topology debug capability bits (uapi kfd_sysfs.h), used to explain why a
 * GPU cannot be debugged. Only the ones gpreempt reads. */
#define GP_KFD_CAP_TRAP_DEBUG_SUPPORT 0x00008000u
#define GP_KFD_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED 0x20000000u

/* amdgpu.sched_policy (amdgpu_drv.c: KFD_SCHED_POLICY_HWS, _HWS_NO_OVERSUBSCRIPTION, _NO_HWS), fixed by the
 * kernel: without the hardware scheduler there is no debugger interface (kfd-interface.md §9.1). */
#define GP_KFD_SCHED_POLICY_HWS 0
#define GP_KFD_SCHED_POLICY_HWS_NO_OVERSUBSCRIPTION 1
#define GP_KFD_SCHED_POLICY_NO_HWS 2

/* The last valid KFD queue id + 1 (KFD_MAX_NUM_OF_QUEUES_PER_PROCESS in
 * kfd_priv.h); ids never reach the status bits 30/31. */
#define GP_KFD_MAX_QUEUES_PER_PROCESS 1024

/* Offsets inside ROCr's amd_queue_t (hsa/amd_hsa_queue.h, unchanged from
 * ROCm 5.2.3 to HEAD, rocm-userspace.md §5). For a gfx9+ AQL queue KFD's
 * write pointer is &write_dispatch_id and its read pointer &read_dispatch_id. */
#define GP_AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET 0x38
#define GP_AMD_QUEUE_READ_DISPATCH_ID_OFFSET 0x80
#define GP_AMD_QUEUE_SIZE 256

/* ---- compile-time checks against kfd-interface.md §1-2 ---------------- */
#define GP_ABI_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " size")
#define GP_ABI_OFF(type, field, off)                                             \
        _Static_assert(offsetof(type, field) == (off), #type "." #field " offset")

_Static_assert(AMDKFD_IOC_GET_VERSION == 0x80084B01u, "GET_VERSION request");
_Static_assert(AMDKFD_IOC_CREATE_QUEUE == 0xC0584B02u, "CREATE_QUEUE request");
_Static_assert(AMDKFD_IOC_DESTROY_QUEUE == 0xC0084B03u, "DESTROY_QUEUE request");
_Static_assert(AMDKFD_IOC_SET_MEMORY_POLICY == 0x40204B04u, "SET_MEMORY_POLICY request");
_Static_assert(AMDKFD_IOC_GET_CLOCK_COUNTERS == 0xC0284B05u, "GET_CLOCK_COUNTERS request");
_Static_assert(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW == 0xC0104B14u, "GET_PROCESS_APERTURES_NEW request");
_Static_assert(AMDKFD_IOC_ACQUIRE_VM == 0x40084B15u, "ACQUIRE_VM request");
_Static_assert(AMDKFD_IOC_SET_SCRATCH_BACKING_VA == 0xC0104B11u, "SET_SCRATCH_BACKING_VA request");
_Static_assert(AMDKFD_IOC_SET_TRAP_HANDLER == 0x40184B13u, "SET_TRAP_HANDLER request");
_Static_assert(AMDKFD_IOC_GET_TILE_CONFIG == 0xC0284B12u, "GET_TILE_CONFIG request");
_Static_assert(AMDKFD_IOC_CREATE_EVENT == 0xC0204B08u, "CREATE_EVENT request");
_Static_assert(AMDKFD_IOC_DESTROY_EVENT == 0x40084B09u, "DESTROY_EVENT request");
_Static_assert(AMDKFD_IOC_SET_EVENT == 0x40084B0Au, "SET_EVENT request");
_Static_assert(AMDKFD_IOC_RESET_EVENT == 0x40084B0Bu, "RESET_EVENT request");
_Static_assert(AMDKFD_IOC_WAIT_EVENTS == 0xC0184B0Cu, "WAIT_EVENTS request");
GP_ABI_SIZE(struct kfd_event_data, 48);
_Static_assert(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU == 0xC0284B16u, "ALLOC_MEMORY_OF_GPU request");
_Static_assert(AMDKFD_IOC_FREE_MEMORY_OF_GPU == 0x40084B17u, "FREE_MEMORY_OF_GPU request");
_Static_assert(AMDKFD_IOC_MAP_MEMORY_TO_GPU == 0xC0184B18u, "MAP_MEMORY_TO_GPU request");
_Static_assert(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU == 0xC0184B19u, "UNMAP_MEMORY_FROM_GPU request");
GP_ABI_SIZE(struct kfd_process_device_apertures, 56);
_Static_assert(AMDKFD_IOC_SMI_EVENTS == 0xC0084B1Fu, "SMI_EVENTS request");
_Static_assert(AMDKFD_IOC_RUNTIME_ENABLE == 0xC0104B25u, "RUNTIME_ENABLE request");
_Static_assert(AMDKFD_IOC_DBG_TRAP == 0xC0204B26u, "DBG_TRAP request");

GP_ABI_SIZE(struct kfd_ioctl_get_version_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_create_queue_args, 88);
GP_ABI_SIZE(struct kfd_ioctl_destroy_queue_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_runtime_enable_args, 16);
GP_ABI_OFF(struct kfd_ioctl_runtime_enable_args, mode_mask, 8);
GP_ABI_OFF(struct kfd_ioctl_runtime_enable_args, capabilities_mask, 12);
GP_ABI_SIZE(struct kfd_runtime_info, 16);
GP_ABI_OFF(struct kfd_runtime_info, runtime_state, 8);
GP_ABI_OFF(struct kfd_runtime_info, ttmp_setup, 12);

GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_args, 32);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_args, pid, 0);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_args, op, 4);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_args, enable, 8);

GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_enable_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_enable_args, rinfo_ptr, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_enable_args, rinfo_size, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_enable_args, dbg_fd, 20);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_send_runtime_event_args, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_send_runtime_event_args, gpu_id, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_send_runtime_event_args, queue_id, 12);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_set_wave_launch_override_args, 16);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_suspend_queues_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_suspend_queues_args, queue_array_ptr, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_suspend_queues_args, num_queues, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_suspend_queues_args, grace_period, 20);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_resume_queues_args, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_resume_queues_args, num_queues, 8);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_set_node_address_watch_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_set_node_address_watch_args, id, 20);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_clear_node_address_watch_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_set_flags_args, 8);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_query_debug_event_args, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_debug_event_args, gpu_id, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_debug_event_args, queue_id, 12);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_query_exception_info_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_exception_info_args, info_size, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_exception_info_args, source_id, 12);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_exception_info_args, exception_code, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_query_exception_info_args, clear_exception, 20);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_queue_snapshot_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_queue_snapshot_args, snapshot_buf_ptr, 8);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_queue_snapshot_args, num_queues, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_queue_snapshot_args, entry_size, 20);
GP_ABI_SIZE(struct kfd_ioctl_dbg_trap_device_snapshot_args, 24);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_device_snapshot_args, num_devices, 16);
GP_ABI_OFF(struct kfd_ioctl_dbg_trap_device_snapshot_args, entry_size, 20);

GP_ABI_SIZE(struct kfd_queue_snapshot_entry, 64);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, ring_base_address, 8);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, write_pointer_address, 16);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, read_pointer_address, 24);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, ctx_save_restore_address, 32);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, queue_id, 40);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, gpu_id, 44);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, ring_size, 48);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, queue_type, 52);
GP_ABI_OFF(struct kfd_queue_snapshot_entry, ctx_save_restore_area_size, 56);

GP_ABI_SIZE(struct kfd_dbg_device_info_entry, 120);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, gpu_id, 56);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, location_id, 60);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, gfx_target_version, 88);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, num_xcc, 108);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, capability, 112);
GP_ABI_OFF(struct kfd_dbg_device_info_entry, debug_prop, 116);
GP_ABI_SIZE(struct kfd_context_save_area_header, 40);

_Static_assert(KFD_EC_MASK(EC_QUEUE_NEW) == 0x40000000ull, "EC_QUEUE_NEW mask");
_Static_assert(KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE) == 0x80000000ull, "EC_DEVICE_QUEUE_DELETE mask");
_Static_assert(KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION) == 0x100000000ull, "EC_DEVICE_MEMORY_VIOLATION mask");
_Static_assert(KFD_EC_MASK(EC_PROCESS_RUNTIME) == 0x800000000000ull, "EC_PROCESS_RUNTIME mask");
_Static_assert(KFD_EC_MASK_QUEUE == 0x607f803full, "queue group mask");
_Static_assert(KFD_EC_MASK_DEVICE == 0xf80000000ull, "device group mask");
_Static_assert(KFD_EC_MASK_PROCESS == 0x1800000000000ull, "process group mask");
_Static_assert((uint32_t)KFD_DBG_QUEUE_ERROR_MASK == 0x40000000u, "queue error bit");
_Static_assert((uint32_t)KFD_DBG_QUEUE_INVALID_MASK == 0x80000000u, "queue invalid bit");
