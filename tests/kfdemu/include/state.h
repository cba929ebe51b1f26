/* SPDX-License-Identifier: MIT */
/*
 * The state of one emulated node, shared by the three parts of the kfdemu
 * server:
 *   kernel/     the amdkfd stand-in (kfd_chardev/kfd_debug/dqm/pqm rules),
 *   transport/  the preload <-> server plumbing, user-memory access, main loop,
 *   gpu/        the time model of the GPUs and the sysfs/debugfs rendering.
 *
 * Locking: one mutex, node->lock, protects everything reachable from the
 * node. The transport thread holds it for every call into kernel/; the GPU
 * model thread holds it while it touches queues. Nothing blocks with it held
 * (no waiting on clients, no sleeping); user-memory copies with
 * process_vm_readv/writev are allowed (they do not wait on the peer).
 *
 * Ownership of fields: kernel/ writes everything except the `hw` pointers
 * (gpu/) and the `transport` pointers (transport/). Each part may read all.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "emu-hw.h"
#include "kfd-abi.h"

#define EMU_MAX_GPUS 16
#define EMU_MAX_XCC 8

struct emu_gpu_hw;     /* gpu/: the time model's per-device state */
struct emu_queue_hw;   /* gpu/: the time model's per-queue state */
struct emu_file_transport; /* transport/: the connection behind an open /dev/kfd */
struct emu_call;
struct emu_file;
struct kfd_ev_writer;  /* kernel/: a raiser blocked writing the debug event byte */
struct kfd_smi_client; /* kernel/: an open SMI events fd (kfd-smi.c) */

/* How a preemption is charged (gpu/preempt-cost.c, kfdemu-run(1)). */
enum emu_preempt_model {
        EMU_PREEMPT_MODEL_WAVES,     /* save volume, runlist size and XCCs */
        EMU_PREEMPT_MODEL_CONSTANT,  /* fixed unmap, save and restore times */
};

/* When the CP reports a dispatch's read index (gpu/engine.c). */
enum emu_read_index_mode {
        EMU_READ_INDEX_AT_COMPLETION,  /* when all its waves have finished */
        EMU_READ_INDEX_AT_DISPATCH,    /* as soon as the CP has launched it */
        EMU_READ_INDEX_MASTER_XCC,     /* when XCC 0's share has finished */
};

/* One GPU as configured (kfdemu-run --gpus / --config). */
struct emu_gpu_config {
        uint32_t gpu_id;             /* 16-bit topology hash, e.g. 0xf7bc; 0 = derive */
        uint32_t gfx_target_version; /* e.g. 90402 for gfx942 */
        char name[32];               /* topology nodes/N/name, e.g. "gfx942" */
        uint32_t device_id;          /* PCI device id, e.g. 0x74a2 */
        uint32_t pci_revision;       /* PCI revision id: with device_id, names the part (libdrm's amdgpu.ids) */
        uint32_t location_id;        /* bus << 8 | devfn */
        uint32_t domain;
        uint32_t drm_render_minor;   /* 128 + index */
        uint32_t num_xcc;            /* 4 on MI308X */
        uint32_t cu_count;           /* compute units on the device */
        uint32_t simd_per_cu;
        uint32_t max_waves_per_simd;
        bool per_vmid_debug;         /* kfd_dbg_is_per_vmid_supported() */
        bool mes;                    /* MES (gfx11+) instead of HWS */
        bool debug_firmware;         /* capability TRAP_DEBUG_FIRMWARE_SUPPORTED */
        bool cwsr_workaround;        /* GC 11.0.0-11.0.3 (kfd_dbg_has_cwsr_workaround) */
        /* Time model (gpu/ documents and uses these; kfdemu-run(1) names
         * their keys). */
        enum emu_preempt_model preempt_model;
        uint32_t preempt_us;         /* fixed part of one unmap (both models) */
        uint32_t cwsr_save_us;       /* constant model: saving the resident waves */
        uint32_t cwsr_restore_us;    /* constant model: restoring them */
        uint32_t cwsr_bytes_per_cu;  /* waves model: wave state of a full CU; 0 = from gfx_target_version */
        uint32_t cwsr_mb_per_s;      /* waves model: rate of the save and the restore */
        uint32_t map_queue_us;       /* waves model: the remap's cost per queue and XCC */
        uint32_t default_grace_period; /* CP_IQ_WAIT_TIME2.SCH_WAVE when the caller gives none */
        uint32_t shader_clock_mhz;   /* converts the grace period's 1000-clock units */
        enum emu_read_index_mode read_index_mode;
        uint32_t master_xcc_lead_percent; /* of a dispatch's time: XCC 0 done before the rest */
        uint32_t barrier_poll_us;    /* how often the CP looks at a waiting barrier's signals */
        bool hws_time_slicing;       /* an oversubscribed runlist runs in slices (else as if it fit) */
        uint32_t kfd_vmids;          /* processes the HWS runs at once; 0 = from gfx_target_version */
        uint32_t hqd_slots;          /* active compute queues it runs at once (get_cp_queues_num) */
        uint32_t hws_quantum_us;     /* time slice of an oversubscribed runlist */
        uint32_t wg_slots_per_cu;    /* workgroups one CU runs at once */
        uint32_t vram_mib;           /* the device's VRAM (real_vram_size), MiB */
};

/* What a preemption of SUSPEND_QUEUES / RESUME_QUEUES does when a fault
 * is injected ([Faults] of the node configuration, kernel/kfd-faults.c). */
enum emu_fault_kind {
        EMU_FAULT_NONE = 0,
        EMU_FAULT_TIMEOUT,       /* the unmap fence never signals: HWS hang, GPU reset */
        EMU_FAULT_QUEUE_HANG,    /* the fence signals, a busy queue did not preempt */
        EMU_FAULT_ERROR,         /* execute_queues_cpsch fails at once (-EIO, a reset holds the GPU) */
};

/* The debugger ops whose preemptions a fault may hit (bits). */
enum emu_fault_op {
        EMU_FAULT_OP_SUSPEND = 1u << 0,
        EMU_FAULT_OP_RESUME = 1u << 1,
};

struct emu_fault_config {
        enum emu_fault_kind kind;
        uint32_t ops;                    /* enum emu_fault_op bits: the ops it may hit */
        uint32_t gpu_mask;               /* GPUs (bit = index) it may hit; 0 = every GPU */
        uint32_t nth;                    /* fire on the nth preemption of a GPU only (1-based), 0 = no */
        uint32_t every;                  /* fire on every `every`th, 0 = no */
        uint32_t probability_ppm;        /* fire with this chance per preemption, 0 = no */
        uint64_t seed;                   /* of the probability's generator */
        bool while_busy;                 /* only while a queue of the GPU has waves */
        bool queue_id_set;
        uint32_t queue_id;               /* with while_busy: only while a queue with this id has */
};

/* Where amdkfd's behaviour changed between kernels (kernel/ follows these;
 * kfd-interface.md records each change). */
struct emu_kernel_config {
        uint32_t version;                /* EMU_KERNEL_VERSION(major, minor) the node plays */
        bool per_queue_reset;            /* reset_queues_on_hws_hang resets only hung queues */
        bool queue_ids_limit;            /* get_queue_ids: more than 1024 ids -EINVAL */
        bool queue_ids_null_check;       /* get_queue_ids: no array with num_queues > 0 -EINVAL, no oops */
        bool destroy_serialized;         /* wait_on_destroy_queue: second destroy -EBUSY, signal clears */
};

#define EMU_KERNEL_VERSION(major, minor) (((major) << 8) | (minor))

struct emu_config {
        uint32_t kfd_major, kfd_minor;   /* GET_VERSION; default 1.13 */
        int sched_policy;                /* amdgpu.sched_policy; 2 = NO_HWS */
        uint32_t queue_preemption_timeout_ms;
        /* amdgpu.max_num_of_queues_per_device: user queues one GPU holds for
         * all processes (create_queue_cpsch); 0 = the module's default. */
        uint32_t max_num_of_queues_per_device;
        /* [Node] LocksAcrossWaits=no: a call parked in a preemption or a
         * memory sync holds no lock, where the kernel holds p->mutex and the
         * dqm lock for the whole wait (kernel/kfd-mutex.c). */
        bool locks_released_while_waiting;
        /* [Node] FenceWaitSpins=no: a caller in the unmap fence wait sleeps
         * where the kernel's loop keeps its CPU (transport/preload-channel.c). */
        bool fence_wait_sleeps;
        /* [Node] MemorySyncMicroseconds: how long MAP/UNMAP_MEMORY wait, under
         * p->mutex, for the page-table update fence (0 = not modelled). */
        uint32_t memory_sync_us;
        unsigned n_gpus;
        struct emu_gpu_config gpus[EMU_MAX_GPUS];
        char root[4096];                 /* where sysfs/debugfs are rendered */
        struct emu_fault_config faults;
        struct emu_kernel_config kernel;
};

struct emu_node;

struct emu_gpu {
        struct emu_node *node;
        unsigned index;                  /* topology node number (after the CPU node) */
        struct emu_gpu_config cfg;
        struct emu_process *debug_vmid_owner; /* non-per-VMID parts: who holds the debug VMID */
        uint32_t alloc_watch_ids;        /* address-watch slots taken on the device (kfd->alloc_watch_ids) */
        unsigned total_queue_count;      /* dqm->total_queue_count: user queues of every process */
        uint64_t vram_used;              /* adev->kfd.vram_used: KFD VRAM BOs of every process, bytes */
        int mmio_remap_memfd;            /* the register page KFD maps for HDP flushes; -1 until mapped */
        bool active_runlist;             /* dqm->active_runlist: a runlist is mapped (kfd-runlist.c) */
        bool cp_hung;                    /* an unmap fence timed out: nothing runs until the GPU reset */
        uint32_t debugger_preemptions;   /* SUSPEND/RESUME preemptions so far (fault triggers count them) */
        struct kfd_smi_client *smi_clients; /* dev->smi_clients, newest first */
        uint32_t reset_seq_num;          /* dev->reset_seq_num: GPU resets so far (SMI records) */
        unsigned dqm_holders;            /* kernel/: calls parked holding dqm->lock (kfd-mutex.c) */
        struct emu_call *dqm_waiters;    /* kernel/: calls sleeping in dqm_lock() */
        struct emu_gpu_hw *hw;
};

/* A buffer object of a process's device (kgd_mem), made by
 * ALLOC_MEMORY_OF_GPU; kernel/kfd-memory.c. */
struct emu_bo {
        struct emu_bo *next;
        uint32_t idr_handle;             /* low half of the handle: lowest free id (idr_alloc) */
        uint32_t flags;                  /* KFD_IOC_ALLOC_MEM_FLAGS_* */
        uint64_t va;                     /* GPU virtual address */
        uint64_t size;                   /* the BO's size: PAGE_ALIGN, halved for AQL queue memory */
        uint64_t mmap_offset;            /* on the render node (amdgpu_bo_mmap_offset) */
        uint32_t mapped_gpus;            /* bit per device index: mapped in that device's VM */
        int memfd;                       /* contents of VRAM and GTT BOs; -1 for the other kinds */
};

/* An HSA event of a process (kfd_event, kfd_events.c): CREATE_EVENT's. */
struct kfd_event_waiter;
struct emu_event {
        struct emu_event *next;
        uint32_t id;                     /* signal events: their slot in the event page */
        uint32_t type;                   /* KFD_IOC_EVENT_* */
        bool auto_reset;
        bool signaled;
        uint64_t age;                    /* event_age: 1 at creation, +1 per set (never back to 0 or 1) */
        struct kfd_event_waiter *waiters; /* WAIT_EVENTS calls asleep on it (ev->wq) */
};

/* A per-process, per-device record (the kernel's kfd_process_device). */
struct emu_pdd {
        struct emu_gpu *gpu;
        struct emu_file *drm_file;       /* the render node whose VM ACQUIRE_VM took; NULL before */
        struct emu_bo *bos;              /* alloc_idr's objects, newest first */
        uint64_t vram_usage;             /* pdd->vram_usage: bytes of VRAM BOs allocated here */
        uint64_t exception_status;       /* device-level exceptions (EC_DEVICE_*) */
        uint64_t doorbell_slots_used[EMU_DOORBELL_SLOTS / 64];
        unsigned queue_count;            /* qpd.queue_count: the process's queues here, SDMA included */
        /* Debugger state of the device for this process (kfd_process_device). */
        uint32_t spi_dbg_launch_mode;    /* KFD_DBG_TRAP_WAVE_LAUNCH_MODE_* last set */
        uint32_t spi_dbg_override;       /* wave launch trap override mask last set */
        uint32_t alloc_watch_ids;        /* address-watch slots this process owns here */
        bool has_reset_queue;            /* a queue of it here was reset (kfd_hws_hang, set_queue_as_reset) */
        unsigned evicted;                /* qpd->evicted: GPU resets so far (nothing restores them) */
};

struct emu_queue {
        struct emu_queue *next;          /* process list, newest first (pqm order) */
        struct emu_process *process;
        struct emu_gpu *gpu;
        uint32_t id;
        uint32_t type;                   /* KFD_IOC_QUEUE_TYPE_* (ioctl enum) */
        uint64_t ring_base_address;
        uint64_t write_pointer_address;
        uint64_t read_pointer_address;
        uint64_t ctx_save_restore_address;
        uint64_t eop_buffer_address;
        uint64_t eop_buffer_size;
        uint32_t ring_size;              /* bytes */
        uint32_t ctx_save_restore_size;
        uint32_t ctl_stack_size;
        uint32_t queue_percentage;
        uint32_t queue_priority;
        uint32_t doorbell_slot;          /* index in the process's frame on this GPU */
        uint64_t exception_status;       /* starts as KFD_EC_MASK(EC_QUEUE_NEW) */
        bool is_suspended;
        bool is_being_destroyed;
        bool is_evicted;
        bool is_reset;                   /* set_queue_as_reset took it off the runlist; a resume maps it again */
        struct emu_queue_hw *hw;
};

/* The runtime-enable semaphore (kfd_process.runtime_enable_sema): a
 * counting semaphore starting at 0 whose waiters are parked ioctls. */
struct emu_sema {
        int count;
        struct emu_call *waiters;        /* FIFO through emu_call.next_waiter */
};

struct emu_process {
        struct emu_process *next;        /* node list */
        struct emu_node *node;
        pid_t tgid;                      /* lead_thread->pid, host namespace */
        int pidfd;                       /* to notice mm release (exit); -1 if none. Set by
                                          * transport/, closed by kernel/ when p is freed. */
        bool is_released;                /* mm gone: off the node list, kept while files refer to it */
        uint64_t start_time;             /* /proc/<pid>/stat field 22, guards pid reuse */
        uint32_t pasid;
        unsigned n_files;                /* open /dev/kfd files referring to it */
        struct emu_pdd pdds[EMU_MAX_GPUS];
        unsigned n_pdds;
        struct emu_queue *queues;        /* newest first */
        unsigned n_queues;
        uint64_t queue_slots_used[GP_KFD_MAX_QUEUES_PER_PROCESS / 64];

        /* Runtime (RUNTIME_ENABLE) side. */
        struct kfd_runtime_info runtime_info;
        bool is_runtime_retry;
        struct emu_sema runtime_enable_sema;

        /* Debugger side (this process as a target). */
        bool debug_trap_enabled;
        struct emu_process *debugger_process;
        int dbg_ev_fd;                   /* the server's own copy of the debugger's dbg_fd (pidfd_getfd); -1 */
        uint64_t exception_enable_mask;
        uint64_t exception_status;       /* process-level (EC_PROCESS_*) */
        uint32_t dbg_flags;              /* KFD_DBG_TRAP_FLAG_* (SET_FLAGS) */
        int debugged_process_count;      /* this process as a debugger (atomic_t: a DISABLE after a
                                          * failed second ENABLE can take it below 0) */
        struct emu_call *destroy_waiters; /* DESTROY_QUEUE calls sleeping in wait_on_destroy_queue */

        /* HSA events (kernel/kfd-hsa-events.c). */
        struct emu_event *events;        /* event_idr */
        unsigned signal_event_count;     /* signal and debug events, plus the reserved id 0 */
        uint64_t signal_handle;          /* the user's event page BO handle; 0 = none */
        int signal_page_memfd;           /* the signal page's contents; -1 before one exists */
        uint64_t *signal_slots;          /* the page, mapped in the server (kernel_address) */
        uint64_t signal_mapped_size;     /* slots user mode sees: ids are allocated below it */

        /* kernel/: p->mutex and p->event_mutex as far as they outlive a
         * kernel entry (kfd-mutex.c). */
        unsigned mutex_holders;          /* calls parked in a preemption or memory sync, and raisers
                                          * blocked in the event write, under p->mutex */
        unsigned event_mutex_holders;    /* SUSPENDs parked in their preemption, raisers blocked in
                                          * the event write */
        bool mutex_poisoned;             /* its holder died in an oops: never released */
        struct emu_call *lock_waiters;   /* calls sleeping in mutex_lock on either */
};

struct emu_node {
        pthread_mutex_t lock;
        struct emu_config cfg;
        struct emu_gpu gpus[EMU_MAX_GPUS];
        unsigned n_gpus;
        struct emu_process *processes;
        uint32_t next_pasid;
        int log_fd;                      /* kfdemu's own log (what dmesg would say), -1 = none */
        struct kfd_ev_writer *ev_writers; /* kernel/: event writes waiting for a full pipe */
        uint32_t destroy_wake_pending;   /* kernel/: GPUs (bit = index in gpus[]) whose destroy_wait was woken */
        uint64_t fault_rng;              /* kernel/: state of the faults' random generator */
        uint32_t dqm_preempted;          /* kernel/: GPUs (bit = index) the running kernel entry preempted */
        struct emu_call *lock_holders;   /* kernel/: parked calls holding locks (kfd-mutex.c) */
};
