/* SPDX-License-Identifier: MIT */
/*
 * gpu/ entry points: the emulated GPUs (time model, doorbells) and the
 * sysfs/debugfs rendering. kernel/ calls these with node->lock held.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"
#include "state.h"

/* Start/stop the model thread and create the doorbell aperture. Called
 * WITHOUT node->lock (stop joins the thread, which takes it). After stop,
 * every other entry point still works but nothing is modelled any more. */
int emu_gpu_start(struct emu_node *node);
void emu_gpu_stop(struct emu_node *node);

/* A queue was created (mapped at once, as create_queue_cpsch does) / is being
 * removed (after this the model never touches it again). */
int emu_gpu_queue_created(struct emu_queue *q);
void emu_gpu_queue_destroyed(struct emu_queue *q);

/* q->is_suspended, q->is_reset, q->is_evicted or q->gpu->cp_hung changed.
 * The model stops fetching from a queue that any of them holds; a kernel it
 * was running is context-saved and resumes where it stopped. */
void emu_gpu_queue_suspension_changed(struct emu_queue *q);

/* The queue has waves on the GPU now (busy and not held): what
 * a preemption would have to save, and what can fail to answer it. */
bool emu_gpu_queue_has_waves(const struct emu_queue *q);

/* One device-wide preemption on an HWS GPU (execute_queues_cpsch with
 * FILTER_DYNAMIC_QUEUES): every queue of every process on the GPU stops for
 * the modelled unmap + CWSR + remap time. Returns that time in ns, which is
 * how long the ioctl that caused it takes to return (the kernel waits for
 * the unmap fence). On MES GPUs kernel/ calls emu_gpu_mes_remove_queue per
 * queue instead. */
uint64_t emu_gpu_hws_preempt(struct emu_gpu *gpu, uint32_t grace_period);
/* map_queues_cpsch alone, when no runlist was mapped and so nothing was
 * unmapped (kfd-interface.md §16.4): the queues of the new runlist run once
 * it is mapped and their saved waves restored; the caller does not wait. */
void emu_gpu_hws_map(struct emu_gpu *gpu);
uint64_t emu_gpu_mes_remove_queue(struct emu_queue *q);

/* Complete `call` with `ret` after `delay_ns` of model time (used for the
 * ioctl latency of a preemption). 0 completes at once. */
void emu_gpu_complete_after(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns);

/* A call parked with emu_gpu_complete_after is finished another way
 * (interrupted by a signal, or its caller died): forget it. */
void emu_gpu_cancel_completion(struct emu_node *node, struct emu_call *call);

/* The doorbell frame of `process` on `gpu`, for kfd_mmap. */
int emu_gpu_doorbell_segments(struct emu_gpu *gpu, struct emu_process *process,
                              struct emu_mmap_result *ret);

/* Rendering of /sys/class/kfd/kfd/{topology,proc} and debugfs kfd/{mqds,hqds,rls}
 * under cfg.root. emu_render_process renders a new process's whole
 * directory; emu_render_debugfs all three debugfs files at once. */
void emu_render_process(struct emu_process *p);   /* proc/<pid>/... */
void emu_render_process_removed(struct emu_node *node, pid_t tgid);
void emu_render_debugfs(struct emu_node *node);   /* mqds, hqds, rls */

/* One queue's sysfs directory, proc/<pid>/queues/<id>/: created when the
 * queue is (kfd_procfs_add_queue, synchronously in CREATE_QUEUE) and
 * removed when it goes (kfd_procfs_del_queue). O(1): they touch nothing
 * else, so creating many queues stays linear. */
void emu_render_queue_created(const struct emu_queue *q);
void emu_render_queue_destroyed(const struct emu_queue *q);

/* The files the kernel generates when they are read (seq_file debugfs
 * dumps, cu_occupancy sampled from the hardware): rendered only when a
 * client opens one (the preload asks first, protocol.h REFRESH). */
enum emu_render_on_read {
        EMU_RENDER_MQDS,             /* debugfs kfd/mqds */
        EMU_RENDER_HQDS,             /* debugfs kfd/hqds */
        EMU_RENDER_RLS,              /* debugfs kfd/rls */
        EMU_RENDER_CU_OCCUPANCY,     /* proc/<tgid>/stats_<gpu_id>/cu_occupancy */
};
/* Renders that file now; `tgid` and `gpu_id` name the cu_occupancy file
 * (ignored for the others). A process or GPU that does not exist renders
 * nothing: the read then finds what the kernel would (no such file). */
void emu_render_on_read(struct emu_node *node, enum emu_render_on_read file, pid_t tgid, uint32_t gpu_id);

/* What a GPU reports beyond its configuration: the topology's properties
 * (capability, debug_prop, fw_version, array counts), PCI ids and the
 * per-process apertures (kfd_init_apertures_v9). sysfs and the device
 * snapshot (kfd_dbg_trap_device_snapshot) show the same values. */
struct emu_gpu_device_info {
        uint64_t lds_base, lds_limit;
        uint64_t scratch_base, scratch_limit;
        uint64_t gpuvm_base, gpuvm_limit;
        uint32_t vendor_id;
        uint32_t revision_id;
        uint32_t subsystem_vendor_id, subsystem_device_id;
        uint32_t fw_version;             /* the MEC firmware's */
        uint32_t array_count;
        uint32_t simd_arrays_per_engine;
        uint32_t capability;
        uint32_t debug_prop;
};
void emu_gpu_device_info(const struct emu_gpu *gpu, struct emu_gpu_device_info *ret);

/* The GPU's clock counter (RLC's, amdgpu_gfx_get_gpu_clock_counter) runs
 * at the SoC reference clock: 100 MHz on the SMU 13.0.6 parts (soc15.c:
 * soc15_get_xclk; MI300), which kfdemu gives every GPU. DRM's DEV_INFO
 * reports it as gpu_counter_freq in kHz. */
#define EMU_GPU_REFCLK_KHZ 100000u
/* The counter now: model time in reference-clock ticks. */
uint64_t emu_gpu_clock_counter(const struct emu_gpu *gpu);

/* The default configuration of GPU number `index` (an MI308X-like gfx942
 * part with the gpu_ids of the node in tests/data/real). transport/'s
 * configuration parser starts from it. */
void emu_gpu_config_default(unsigned index, struct emu_gpu_config *ret);
