/* SPDX-License-Identifier: MIT */
/*
 * What the ROCt thunk's hsaKmtOpenKFD asks of amdkfd before any queue
 * (kfd-interface.md §12): ACQUIRE_VM (kfd_ioctl_acquire_vm,
 * kfd_process_device_init_vm, amdgpu_amdkfd_gpuvm_acquire_process_vm),
 * GET_PROCESS_APERTURES_NEW (kfd_ioctl_get_process_apertures_new) and
 * SET_MEMORY_POLICY (kfd_ioctl_set_memory_policy,
 * kfd_bind_process_to_device); and what ROCr then asks of each device
 * (kfd_ioctl_get_tile_config, kfd_ioctl_get_clock_counters).
 *
 * The program's kfd_process keeps what it acquired: the tests run in this
 * order, and each says what it expects to find.
 */
#include <amdgpu_drm.h>
#include <drm.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

static uint32_t gpu_ids[16];
static int n_gpus;

static int render_node_of(uint32_t gpu_id)
{
        long long minor = conf_gpu_property(gpu_id, "drm_render_minor");
        char path[64];
        int fd;

        assert_true(minor >= 128);
        snprintf(path, sizeof(path), "/dev/dri/renderD%lld", minor);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                fail_msg("open %s: %s", path, strerror(errno));
        return fd;
}

static long acquire_vm(uint32_t gpu_id, int drm_fd)
{
        struct kfd_ioctl_acquire_vm_args args = { .drm_fd = (uint32_t)drm_fd, .gpu_id = gpu_id };

        return conf_ioctl(conf_kfd(), AMDKFD_IOC_ACQUIRE_VM, &args);
}

static long set_memory_policy(uint32_t gpu_id, uint32_t default_policy, uint32_t alternate_policy)
{
        struct kfd_ioctl_set_memory_policy_args args = {
                .gpu_id = gpu_id,
                .default_policy = default_policy,
                .alternate_policy = alternate_policy,
                .alternate_aperture_base = 1ull << 40,
                .alternate_aperture_size = 1ull << 30,
        };

        return conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_MEMORY_POLICY, &args);
}

static int setup(void **state)
{
        n_gpus = conf_gpu_ids(gpu_ids, 16);
        return n_gpus >= 2 ? 0 : -1;
}

/* Before its VM is acquired the process cannot bind to the device:
 * kfd_bind_process_to_device's -ENODEV becomes -ESRCH. Bad policies and
 * unknown GPUs are -EINVAL first. */
static void memory_policy_needs_the_vm(void **state)
{
        assert_int_equal(set_memory_policy(gpu_ids[0], 2, KFD_IOC_CACHE_POLICY_COHERENT), -EINVAL);
        assert_int_equal(set_memory_policy(gpu_ids[0], KFD_IOC_CACHE_POLICY_COHERENT, 7), -EINVAL);
        assert_int_equal(set_memory_policy(0x7, KFD_IOC_CACHE_POLICY_COHERENT, KFD_IOC_CACHE_POLICY_COHERENT),
                         -EINVAL);
        assert_int_equal(set_memory_policy(gpu_ids[0], KFD_IOC_CACHE_POLICY_COHERENT,
                                           KFD_IOC_CACHE_POLICY_NONCOHERENT),
                         -ESRCH);
}

/* CREATE_QUEUE of an AQL queue on `gpu_id`; its id in *ret_id. */
static long create_queue(uint32_t gpu_id, uint32_t percentage, uint32_t *ret_id)
{
        static uint64_t pointers[2];
        static uint8_t ring[4096] __attribute__((aligned(4096)));
        struct kfd_ioctl_create_queue_args a = {
                .ring_base_address = (uintptr_t)ring,
                .write_pointer_address = (uintptr_t)&pointers[0],
                .read_pointer_address = (uintptr_t)&pointers[1],
                .ring_size = sizeof(ring),
                .gpu_id = gpu_id,
                .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = percentage,
        };
        long r = conf_ioctl(conf_kfd(), AMDKFD_IOC_CREATE_QUEUE, &a);

        *ret_id = a.queue_id;
        return r;
}

/* CREATE_QUEUE binds the process to the device: -ESRCH until its VM is
 * acquired, after the argument checks and the gpu_id lookup. */
static void create_queue_needs_the_vm(void **state)
{
        uint32_t id;

        assert_int_equal(create_queue(gpu_ids[0], 100, &id), -ESRCH);
        assert_int_equal(create_queue(0x7, 100, &id), -EINVAL);
        assert_int_equal(create_queue(gpu_ids[0], 101, &id), -EINVAL);
}

/* fget fails, or the file is not amdgpu's (amdgpu_file_to_fpriv), or the
 * GPU is unknown: -EINVAL, and nothing is acquired. */
static void acquire_vm_rejects_other_files(void **state)
{
        int pipe_fds[2];
        _cleanup_close_ int drm = render_node_of(gpu_ids[0]);

        assert_int_equal(acquire_vm(gpu_ids[0], -1), -EINVAL);
        assert_int_equal(acquire_vm(gpu_ids[0], 1000), -EINVAL);
        assert_int_equal(pipe(pipe_fds), 0);
        assert_int_equal(acquire_vm(gpu_ids[0], pipe_fds[0]), -EINVAL);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        assert_int_equal(acquire_vm(gpu_ids[0], conf_kfd()), -EINVAL);
        assert_int_equal(acquire_vm(0x7, drm), -EINVAL);
        assert_int_equal(set_memory_policy(gpu_ids[0], KFD_IOC_CACHE_POLICY_COHERENT,
                                           KFD_IOC_CACHE_POLICY_COHERENT),
                         -ESRCH);
}

/* The first render file acquired for a GPU stays its VM: the same file
 * again is 0, another -EBUSY; a file whose VM is already a compute VM
 * cannot become another device's (-EINVAL). The pdd keeps the file open
 * after the caller closes its fd, and the device now takes queues. */
static void acquire_vm_once_per_device(void **state)
{
        int drm = render_node_of(gpu_ids[0]);
        _cleanup_close_ int other = render_node_of(gpu_ids[0]);

        assert_int_equal(acquire_vm(gpu_ids[0], drm), 0);
        assert_int_equal(acquire_vm(gpu_ids[0], drm), 0);
        assert_int_equal(acquire_vm(gpu_ids[0], other), -EBUSY);
        assert_int_equal(acquire_vm(gpu_ids[1], drm), -EINVAL);
        close(drm);
        assert_int_equal(set_memory_policy(gpu_ids[0], KFD_IOC_CACHE_POLICY_COHERENT,
                                           KFD_IOC_CACHE_POLICY_NONCOHERENT),
                         0);
        uint32_t id;
        assert_int_equal(create_queue(gpu_ids[0], 100, &id), 0);
        struct kfd_ioctl_destroy_queue_args destroy = { .queue_id = id };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_DESTROY_QUEUE, &destroy), 0);
        assert_int_equal(create_queue(gpu_ids[1], 100, &id), -ESRCH);
        /* the second device still has no VM */
        assert_int_equal(set_memory_policy(gpu_ids[1], KFD_IOC_CACHE_POLICY_COHERENT,
                                           KFD_IOC_CACHE_POLICY_COHERENT),
                         -ESRCH);
}

/* A render file is one VM: once this process's device has it, a forked
 * child (another kfd_process) cannot acquire it for its own (-EINVAL,
 * "already a compute VM"), and takes its own render file instead, as the
 * thunk's clear_after_fork does. Expects the first GPU's VM acquired with
 * a file the test still holds. */
static void render_file_is_one_process_vm(void **state)
{
        _cleanup_close_ int drm = render_node_of(gpu_ids[1]);
        int status;
        pid_t child;

        assert_int_equal(acquire_vm(gpu_ids[1], drm), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                struct kfd_ioctl_acquire_vm_args inherited = { .drm_fd = (uint32_t)drm, .gpu_id = gpu_ids[1] };
                struct kfd_ioctl_acquire_vm_args own = { .drm_fd = (uint32_t)render_node_of(gpu_ids[1]),
                                                         .gpu_id = gpu_ids[1] };

                _exit(kfd >= 0 && conf_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &inherited) == -EINVAL &&
                                      conf_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &own) == 0
                              ? 0
                              : 1);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* A render file's VM stays a compute VM after the process that acquired
 * it is gone (amdgpu_vm_release_compute keeps vm->process_info until the
 * file's VM is torn down): another process cannot acquire it (-EINVAL)
 * while the file is open, and takes a render file of its own. */
/* ACQUIRE_VM of `drm` for the second GPU through /dev/kfd `kfd`. */
static long acquire_second_gpu(int kfd, int drm)
{
        struct kfd_ioctl_acquire_vm_args a = { .drm_fd = (uint32_t)drm, .gpu_id = gpu_ids[1] };

        return conf_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a);
}

/* Runs `child_main` with `drm` in a child process; its exit status. */
static int in_child(int (*child_main)(int drm), int drm)
{
        int status;
        pid_t child = fork();

        assert_true(child >= 0);
        if (child == 0)
                _exit(child_main(drm));
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(conf_wait_kfd_process_gone(child), 0);
        return WEXITSTATUS(status);
}

static int first_user(int drm)
{
        int kfd = conf_open_kfd();

        return kfd >= 0 && acquire_second_gpu(kfd, drm) == 0 ? 0 : 1;
}

static int second_user(int drm)
{
        int kfd = conf_open_kfd();

        return kfd >= 0 && acquire_second_gpu(kfd, drm) == -EINVAL &&
                               acquire_second_gpu(kfd, render_node_of(gpu_ids[1])) == 0
                       ? 0
                       : 1;
}

static void released_vm_is_not_acquired_again(void **state)
{
        _cleanup_close_ int drm = render_node_of(gpu_ids[1]);

        assert_int_equal(in_child(first_user, drm), 0);
        assert_int_equal(in_child(second_user, drm), 0);
}

/* SET_TRAP_HANDLER and SET_SCRATCH_BACKING_VA bind too: an unknown GPU is
 * -EINVAL, a device without its VM -ESRCH and -ENODEV respectively (the
 * second passes the bind's errno on). Expects the first GPU's VM acquired
 * and the second's not (acquire_vm_once_per_device). */
static void trap_handler_and_scratch_need_the_vm(void **state)
{
        struct kfd_ioctl_set_trap_handler_args trap = { .tba_addr = 1ull << 32, .tma_addr = 2ull << 32 };
        struct kfd_ioctl_set_scratch_backing_va_args scratch = { .va_addr = 3ull << 32 };

        trap.gpu_id = scratch.gpu_id = 0x7;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_TRAP_HANDLER, &trap), -EINVAL);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &scratch), -EINVAL);
        trap.gpu_id = scratch.gpu_id = gpu_ids[1];
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_TRAP_HANDLER, &trap), -ESRCH);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &scratch), -ENODEV);
        trap.gpu_id = scratch.gpu_id = gpu_ids[0];
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_TRAP_HANDLER, &trap), 0);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &scratch), 0);
}

/* GET_TILE_CONFIG needs no VM: an unknown GPU is -EINVAL; the counts are
 * cut to the device's table sizes (32 tile modes, 16 macro-tile modes on
 * amdgpu), a fault copying a table is -EFAULT with that count reset to 0.
 * GC 9 and later fill neither table nor num_banks/num_ranks. */
static void tile_config_of_a_device(void **state)
{
        uint32_t tiles[64], macro[64];
        struct kfd_ioctl_get_tile_config_args args = {
                .tile_config_ptr = (uintptr_t)tiles,
                .macro_tile_config_ptr = (uintptr_t)macro,
                .num_tile_configs = 64,
                .num_macro_tile_configs = 64,
                .gpu_id = 0x7,
        };

        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_TILE_CONFIG, &args), -EINVAL);
        args.gpu_id = gpu_ids[1];
        memset(tiles, 0x5a, sizeof(tiles));
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_TILE_CONFIG, &args), 0);
        assert_int_equal(args.num_tile_configs, 32);
        assert_int_equal(args.num_macro_tile_configs, 16);
        assert_int_equal(tiles[32], 0x5a5a5a5a);
        if (conf_gpu_property(gpu_ids[1], "gfx_target_version") >= 90000) {
                assert_int_equal(tiles[0], 0);
                assert_int_equal(args.num_banks, 0);
                assert_int_equal(args.num_ranks, 0);
        }

        args.num_tile_configs = 4;
        args.macro_tile_config_ptr = 8;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_TILE_CONFIG, &args), -EFAULT);
        assert_int_equal(args.num_tile_configs, 4);
        assert_int_equal(args.num_macro_tile_configs, 0);
}

static uint64_t clock_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* GET_CLOCK_COUNTERS never fails: raw monotonic and boot-time
 * nanoseconds at 1 GHz, the GPU's counter (0 for a GPU the process has
 * no device for), which advances at the rate DRM's DEV_INFO reports as
 * gpu_counter_freq. */
static void clock_counters(void **state)
{
        struct kfd_ioctl_get_clock_counters_args a = { .gpu_id = 0x7 }, b;
        struct drm_amdgpu_info_device dev_info;
        _cleanup_close_ int drm = render_node_of(gpu_ids[0]);
        struct drm_amdgpu_info info = {
                .return_pointer = (uintptr_t)&dev_info,
                .return_size = sizeof(dev_info),
                .query = AMDGPU_INFO_DEV_INFO,
        };

        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_CLOCK_COUNTERS, &a), 0);
        assert_int_equal(a.gpu_clock_counter, 0);
        assert_int_equal(a.system_clock_freq, 1000000000);

        uint64_t raw_before = clock_ns(CLOCK_MONOTONIC_RAW), boot_before = clock_ns(CLOCK_BOOTTIME);
        a = (struct kfd_ioctl_get_clock_counters_args){ .gpu_id = gpu_ids[0] };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_CLOCK_COUNTERS, &a), 0);
        assert_true(a.cpu_clock_counter >= raw_before && a.cpu_clock_counter <= clock_ns(CLOCK_MONOTONIC_RAW));
        assert_true(a.system_clock_counter >= boot_before && a.system_clock_counter <= clock_ns(CLOCK_BOOTTIME));

        /* Long enough that a stall between the two counters' reads in one
         * call (a loaded host) stays within the 10 % allowed below. */
        conf_sleep_ms(200);
        b = (struct kfd_ioctl_get_clock_counters_args){ .gpu_id = gpu_ids[0] };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_CLOCK_COUNTERS, &b), 0);
        assert_int_equal(conf_ioctl(drm, DRM_IOCTL_AMDGPU_INFO, &info), 0);
        assert_true(dev_info.gpu_counter_freq > 0);
        /* ticks per millisecond of the CPU counter read beside them, in kHz */
        double khz = (double)(b.gpu_clock_counter - a.gpu_clock_counter) /
                     ((double)(b.cpu_clock_counter - a.cpu_clock_counter) / 1e6);
        if (khz < dev_info.gpu_counter_freq * 0.9 || khz > dev_info.gpu_counter_freq * 1.1)
                fail_msg("the GPU counter ran at %.0f kHz, DEV_INFO says %u kHz", khz, dev_info.gpu_counter_freq);
}

/* GET_PROCESS_APERTURES_NEW: num_of_nodes 0 asks for the count; then at
 * most that many entries, in device order, with the GC 9 apertures
 * (kfd_init_apertures_v9); a bad pointer is -EFAULT. */
static void apertures_of_every_device(void **state)
{
        struct kfd_process_device_apertures pa[16];
        struct kfd_ioctl_get_process_apertures_new_args args = { 0 };

        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &args), 0);
        assert_int_equal(args.num_of_nodes, n_gpus);

        memset(pa, 0, sizeof(pa));
        args.kfd_process_device_apertures_ptr = (uintptr_t)pa;
        args.num_of_nodes = 16;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &args), 0);
        assert_int_equal(args.num_of_nodes, n_gpus);
        for (int i = 0; i < n_gpus; i++) {
                assert_int_equal(pa[i].gpu_id, gpu_ids[i]);
                assert_true(pa[i].lds_base < pa[i].lds_limit);
                assert_true(pa[i].scratch_base < pa[i].scratch_limit);
                assert_true(pa[i].gpuvm_base < pa[i].gpuvm_limit);
        }

        memset(pa, 0, sizeof(pa));
        args.num_of_nodes = 1;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &args), 0);
        assert_int_equal(args.num_of_nodes, 1);
        assert_int_equal(pa[0].gpu_id, gpu_ids[0]);
        assert_int_equal(pa[1].gpu_id, 0);

        args.kfd_process_device_apertures_ptr = 8;
        args.num_of_nodes = 2;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &args), -EFAULT);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(memory_policy_needs_the_vm),
                cmocka_unit_test(create_queue_needs_the_vm),
                cmocka_unit_test(acquire_vm_rejects_other_files),
                cmocka_unit_test(acquire_vm_once_per_device),
                cmocka_unit_test(trap_handler_and_scratch_need_the_vm),
                cmocka_unit_test(render_file_is_one_process_vm),
                cmocka_unit_test(released_vm_is_not_acquired_again),
                cmocka_unit_test(tile_config_of_a_device),
                cmocka_unit_test(clock_counters),
                cmocka_unit_test(apertures_of_every_device),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
