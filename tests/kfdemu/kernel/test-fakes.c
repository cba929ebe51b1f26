/* SPDX-License-Identifier: MIT */
/*
 * Test doubles for what kernel/ calls outside itself (gpu.h, usermem.h,
 * emu_transport_watch_process), so the unit test drives the emulated kernel
 * directly, in one process, and sees every call it makes to the GPU model.
 */
#include <errno.h>
#include <sys/socket.h>
#include <string.h>

#include "gpu.h"
#include "test-fakes.h"
#include "usermem.h"

struct fake_gpu_log fake_gpu;

int emu_copy_from_user(pid_t tgid, void *dst, uint64_t uaddr, size_t len)
{
        if (len == 0)
                return 0;
        if (uaddr < FAKE_FIRST_VALID_ADDRESS)
                return -EFAULT;
        memcpy(dst, (const void *)(uintptr_t)uaddr, len);
        return 0;
}

int emu_copy_to_user(pid_t tgid, uint64_t uaddr, const void *src, size_t len)
{
        if (len == 0)
                return 0;
        if (uaddr < FAKE_FIRST_VALID_ADDRESS)
                return -EFAULT;
        memcpy((void *)(uintptr_t)uaddr, src, len);
        return 0;
}

int emu_user_range_accessible(pid_t tgid, uint64_t uaddr, uint64_t len, bool write)
{
        return uaddr < FAKE_FIRST_VALID_ADDRESS ? -EFAULT : 0;
}

int emu_transport_watch_process(struct emu_node *node, struct emu_process *p)
{
        return 0;
}

int emu_transport_smi_socket(struct emu_node *node, int *ret_kernel_end, int *ret_user_end)
{
        int fds[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
                return -errno;
        *ret_kernel_end = fds[0];
        *ret_user_end = fds[1];
        return 0;
}

struct emu_file *fake_fd_file;

void emu_transport_call_spins(struct emu_call *call, uint64_t duration_ns)
{
        fake_gpu.spin_notices++;
}

struct emu_file *emu_transport_file_of_fd(struct emu_node *node, int fd)
{
        return fake_fd_file;
}

int emu_gpu_queue_created(struct emu_queue *q)
{
        fake_gpu.queues_created++;
        return 0;
}

void emu_gpu_queue_destroyed(struct emu_queue *q)
{
        fake_gpu.queues_destroyed++;
}

void emu_gpu_queue_suspension_changed(struct emu_queue *q)
{
        fake_gpu.suspension_changes++;
}

bool emu_gpu_queue_has_waves(const struct emu_queue *q)
{
        return fake_gpu.queues_have_waves;
}

uint64_t emu_gpu_hws_preempt(struct emu_gpu *gpu, uint32_t grace_period)
{
        fake_gpu.preemptions++;
        fake_gpu.last_grace_period = grace_period;
        return fake_gpu.preempt_ns;
}

void emu_gpu_hws_map(struct emu_gpu *gpu)
{
        fake_gpu.runlist_maps++;
}

uint64_t emu_gpu_mes_remove_queue(struct emu_queue *q)
{
        return fake_gpu.preempt_ns;
}

void emu_gpu_complete_after(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns)
{
        if (fake_gpu.complete_inline) {
                emu_call_complete(call, ret);
                return;
        }
        fake_gpu.pending_call = call;
        fake_gpu.pending_ret = ret;
        fake_gpu.pending_delay_ns = delay_ns;
}

void emu_gpu_cancel_completion(struct emu_node *node, struct emu_call *call)
{
        if (fake_gpu.pending_call == call)
                fake_gpu.pending_call = NULL;
}

int emu_gpu_doorbell_segments(struct emu_gpu *gpu, struct emu_process *process, struct emu_mmap_result *ret)
{
        ret->n_segments = 0;
        return 0;
}

void emu_render_process(struct emu_process *p)
{
}

void emu_render_process_removed(struct emu_node *node, pid_t tgid)
{
        fake_gpu.processes_removed++;
}

uint64_t emu_gpu_clock_counter(const struct emu_gpu *gpu)
{
        return 0;
}

void emu_gpu_device_info(const struct emu_gpu *gpu, struct emu_gpu_device_info *ret)
{
        *ret = (struct emu_gpu_device_info){ .vendor_id = 0x1002 };
}

void emu_render_queue_created(const struct emu_queue *q)
{
}

void emu_render_queue_destroyed(const struct emu_queue *q)
{
}
