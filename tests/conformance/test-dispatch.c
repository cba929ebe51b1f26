/* SPDX-License-Identifier: MIT */
/*
 * ioctl dispatch (kfd_chardev.c: kfd_ioctl, kfd_ioctl_get_version) —
 * kfd-interface.md §1 "Size handling" and §3 "Which fd"; the file
 * operations /dev/kfd lacks (kfd_fops: read, write) — §10; and an ioctl
 * that makes an fd for the caller (kfd_ioctl_smi_events) — §16.8.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define KFD_IOC(dir, nr, size) _IOC(dir, AMDKFD_IOCTL_BASE, nr, size)

/* kfd_ioctl_get_version: only the compile-time version, major always 1; the
 * debugger API needs >= 1.13 (§1). */
static void get_version_reports_1_13_or_newer(void **state)
{
        struct kfd_ioctl_get_version_args v = { 0 };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, &v), 0);
        assert_int_equal(v.major_version, 1);
        assert_true(v.minor_version >= 13);
}

/* kfd_ioctl: an nr outside the table fails before anything is copied, with
 * -EINVAL in the KFD 1.13 tree this suite describes (§1 [ver]). Trees with
 * "drm/amdkfd: return -ENOTTY for unsupported IOCTLs" (2025, also 6.6.y
 * stable) answer -ENOTTY: there this test fails, and says so. */
static void unknown_nr_is_rejected(void **state)
{
        uint8_t buf[64];
        static const unsigned nrs[] = { 0x00, 0x7f, 0xff };
        for (size_t i = 0; i < ELEMENTSOF(nrs); i++) {
                memset(buf, 0x5a, sizeof(buf));
                long r = conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ | _IOC_WRITE, nrs[i], 8), buf);
                if (r != -EINVAL)
                        fail_msg("nr 0x%02x: got %ld, want -EINVAL (-ENOTTY only on kernels with the 2025 "
                                 "\"return -ENOTTY for unsupported IOCTLs\")", nrs[i], r);
                for (size_t j = 0; j < sizeof(buf); j++)
                        assert_int_equal(buf[j], 0x5a);
        }
}

/* kfd_ioctl: the kernel buffer is max(user size, kernel size), the tail is
 * zero-filled and exactly the user's size is copied back (§1). */
static void get_version_short_size_copies_only_user_size(void **state)
{
        uint32_t buf[2] = { 0xaaaaaaaa, 0xbbbbbbbb };
        assert_int_equal(conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ, 0x01, 4), buf), 0);
        assert_int_equal(buf[0], 1);
        assert_int_equal(buf[1], 0xbbbbbbbb);

        buf[0] = 0xaaaaaaaa;
        assert_int_equal(conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ, 0x01, 0), buf), 0);
        assert_int_equal(buf[0], 0xaaaaaaaa);
}

/* kfd_ioctl: a larger user size gets the zero-filled tail copied back; the
 * kernel uses its own direction (_IOR), so nothing is read from the user. */
static void get_version_long_size_zero_fills_tail(void **state)
{
        uint32_t buf[4] = { 0xaaaaaaaa, 0xaaaaaaaa, 0xcccccccc, 0xdddddddd };
        assert_int_equal(conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ | _IOC_WRITE, 0x01, 16), buf), 0);
        assert_int_equal(buf[0], 1);
        assert_true(buf[1] >= 13);
        assert_int_equal(buf[2], 0);
        assert_int_equal(buf[3], 0);
}

/* kfd_ioctl: the largest _IOC_SIZE (16383) is honoured whole: kmalloc of
 * that size, every byte past the kernel's 8 comes back zeroed. */
static void get_version_largest_size_zero_fills_all(void **state)
{
        enum { SIZE = _IOC_SIZEMASK };
        _cleanup_free_ uint8_t *buf = malloc(SIZE);
        assert_non_null(buf);
        memset(buf, 0xaa, SIZE);
        assert_int_equal(conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ | _IOC_WRITE, 0x01, SIZE), buf), 0);
        for (size_t i = 8; i < SIZE; i++)
                if (buf[i] != 0)
                        fail_msg("byte %zu of %d came back %#x, not 0", i, SIZE, buf[i]);
}

/* kfd_ioctl: DBG_TRAP with _IOC_SIZE 8 reads pid and op only; the union is
 * zero-filled, so a snapshot request sees entry_size 0 (-EINVAL, §7) even
 * though the caller's memory behind byte 8 holds a valid request, and those
 * bytes are not written back. Self-debug (§3 step 5) needs no tracer. */
static void dbg_trap_short_size_zero_fills_union(void **state)
{
        _cleanup_close_ int fifo = conf_event_fifo();
        assert_true(fifo >= 0);
        pid_t self = getpid();
        assert_int_equal(conf_dbg_enable(conf_kfd(), self, 0, fifo, NULL), 0);

        struct kfd_ioctl_dbg_trap_args a = {
                .pid = (uint32_t)self,
                .op = KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT,
                .queue_snapshot = { .num_queues = 0, .entry_size = sizeof(struct kfd_queue_snapshot_entry) },
        };
        struct kfd_ioctl_dbg_trap_args before = a;
        long r = conf_ioctl(conf_kfd(), KFD_IOC(_IOC_READ | _IOC_WRITE, 0x26, 8), &a);
        long full = conf_dbg_trap(conf_kfd(), self, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &before);
        assert_int_equal(conf_dbg_disable(conf_kfd(), self), 0);
        assert_int_equal(r, -EINVAL);
        assert_int_equal(a.queue_snapshot.entry_size, sizeof(struct kfd_queue_snapshot_entry));
        assert_int_equal(full, 0);
}

/* kfd_ioctl: copy_from_user / copy_to_user failures are -EFAULT. */
static void bad_arg_pointer_is_efault(void **state)
{
        long page = sysconf(_SC_PAGESIZE);
        uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(map != MAP_FAILED);
        assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);

        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, (void *)16), -EFAULT);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, map + page), -EFAULT);
        /* Straddling into the unmapped page: the whole user size must copy. */
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, map + page - 4), -EFAULT);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_DBG_TRAP, map + page - 16), -EFAULT);
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_DBG_TRAP, NULL), -EFAULT);
        munmap(map, (size_t)page * 2);
}

/* kfd_ioctl: "Only the process that opened /dev/kfd can use the file
 * descriptor" — a fork child gets -EBADF on the inherited fd (§3), while its
 * own open works. */
static void inherited_fd_is_ebadf(void **state)
{
        int kfd = conf_kfd();
        assert_true(kfd >= 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                struct kfd_ioctl_get_version_args v;
                struct kfd_ioctl_dbg_trap_args a = { 0 };
                int code = 0;
                if (conf_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v) != -EBADF)
                        code |= 1;
                if (conf_dbg_trap(kfd, getpid(), KFD_IOC_DBG_TRAP_DISABLE, &a) != -EBADF)
                        code |= 2;
                int own = conf_open_kfd();
                if (own < 0 || conf_ioctl(own, AMDKFD_IOC_GET_VERSION, &v) != 0)
                        code |= 4;
                _exit(code);
        }
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) & 1)
                fail_msg("GET_VERSION on an fd inherited over fork did not fail with EBADF");
        if (WEXITSTATUS(status) & 2)
                fail_msg("DBG_TRAP on an fd inherited over fork did not fail with EBADF");
        if (WEXITSTATUS(status) & 4)
                fail_msg("the fork child could not use its own /dev/kfd");
        struct kfd_ioctl_get_version_args v;
        assert_int_equal(conf_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v), 0);
}

/* kfd_ioctl: a dup in the owning process is the same file and works. */
static void dup_in_owner_works(void **state)
{
        _cleanup_close_ int copy = dup(conf_kfd());
        assert_true(copy >= 0);
        struct kfd_ioctl_get_version_args v;
        assert_int_equal(conf_ioctl(copy, AMDKFD_IOC_GET_VERSION, &v), 0);
}

static int send_fd(int sock, int fd)
{
        char byte = 'f';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u = { 0 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        return sendmsg(sock, &msg, 0) == 1 ? 0 : NEG_ERRNO();
}

static int recv_fd(int sock)
{
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
                return NEG_ERRNO();
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (!c || c->cmsg_type != SCM_RIGHTS)
                return -EPROTO;
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

/* kfd_ioctl: an fd received over SCM_RIGHTS belongs to the sender's
 * kfd_process, so the receiver gets -EBADF (§3). The sender stays alive
 * meanwhile so its kfd_process exists. */
static void fd_passed_by_scm_rights_is_ebadf(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                close(sv[0]);
                int fd = conf_open_kfd();
                if (fd < 0 || send_fd(sv[1], fd) < 0)
                        _exit(1);
                char c;
                /* Hold the kfd_process until the parent is done. */
                _exit(read(sv[1], &c, 1) < 0 ? 1 : 0);
        }
        close(sv[1]);
        int fd = recv_fd(sv[0]);
        struct kfd_ioctl_get_version_args v;
        struct kfd_ioctl_dbg_trap_args a = { 0 };
        long r_version = fd >= 0 ? conf_ioctl(fd, AMDKFD_IOC_GET_VERSION, &v) : fd;
        long r_dbg = fd >= 0 ? conf_dbg_trap(fd, child, KFD_IOC_DBG_TRAP_DISABLE, &a) : fd;
        close(sv[0]);
        if (fd >= 0)
                close(fd);
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(fd >= 0);
        assert_int_equal(r_version, -EBADF);
        assert_int_equal(r_dbg, -EBADF);
}

/* -1 with errno as -errno, or what the call returned. */
static long result_of(ssize_t n)
{
        return n < 0 ? -errno : n;
}

/* kfd_fops has neither read nor write (kfd_chardev.c), so fs/read_write.c's
 * vfs_read and vfs_write (and their vector and positioned forms) find no
 * FMODE_CAN_READ / FMODE_CAN_WRITE on a /dev/kfd opened O_RDWR: -EINVAL,
 * and nothing else happens. The debugger's own session, on the same fd,
 * goes on (§10). */
static void read_and_write_are_einval(void **state)
{
        struct conf_session *s = *state;
        char buf[16] = "gpreempt";
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        int kfd = conf_kfd();

        assert_int_equal(result_of(write(kfd, buf, sizeof(buf))), -EINVAL);
        assert_int_equal(result_of(write(kfd, buf, 0)), -EINVAL);
        assert_int_equal(result_of(writev(kfd, &iov, 1)), -EINVAL);
        assert_int_equal(result_of(pwrite(kfd, buf, sizeof(buf), 0)), -EINVAL);
        assert_int_equal(result_of(read(kfd, buf, sizeof(buf))), -EINVAL);
        assert_int_equal(result_of(readv(kfd, &iov, 1)), -EINVAL);
        assert_int_equal(result_of(pread(kfd, buf, sizeof(buf), 0)), -EINVAL);

        struct kfd_ioctl_get_version_args v = { 0 };
        assert_int_equal(conf_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v), 0);
        /* still enabled: SET_EXCEPTIONS_ENABLED needs debug_trap_enabled (§3 step 7) */
        assert_int_equal(conf_dbg_set_exceptions_enabled(kfd, s->target.pid, CONF_SUBSCRIPTION), 0);
}

/* AMDKFD_IOC_SMI_EVENTS for gpu_id; the ioctl's result, *ret_fd its anon_fd (UINT32_MAX when untouched). */
static long smi_events(int kfd, uint32_t gpu_id, uint32_t *ret_fd)
{
        struct kfd_ioctl_smi_events_args a = { .gpuid = gpu_id, .anon_fd = UINT32_MAX };
        long r = conf_ioctl(kfd, AMDKFD_IOC_SMI_EVENTS, &a);

        *ret_fd = a.anon_fd;
        return r;
}

/* kfd_ioctl_smi_events looks the gpu_id up among the caller's devices
 * (-EINVAL), then kfd_smi_event_open makes the fd with anon_inode_getfd:
 * with no number free under RLIMIT_NOFILE that fails with -EMFILE and
 * anon_fd is left as it was; otherwise the fd is the lowest free number
 * (§16.8). */
static void smi_events_fd_needs_a_free_number(void **state)
{
        struct kfd_ioctl_get_version_args v = { 0 };
        struct rlimit saved, tight;
        uint32_t gpu_id, fd_bad = 0, fd_full = 0, fd;
        long r_bad, r_full;
        int kfd = conf_kfd(), lowest;

        assert_int_equal(conf_gpu_ids(&gpu_id, 1), 1);
        /* the lowest free number: every one below it is taken */
        lowest = dup(kfd);
        assert_true(lowest >= 0);
        close(lowest);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
        tight = (struct rlimit){ .rlim_cur = (rlim_t)lowest, .rlim_max = saved.rlim_max };
        /* an ioctl first, so that whatever this thread needs to reach the kernel exists before the limit */
        assert_int_equal(conf_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v), 0);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
        r_bad = smi_events(kfd, 0x1, &fd_bad);
        r_full = smi_events(kfd, gpu_id, &fd_full);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
        assert_int_equal(r_bad, -EINVAL);
        assert_int_equal(fd_bad, UINT32_MAX);
        assert_int_equal(r_full, -EMFILE);
        assert_int_equal(fd_full, UINT32_MAX);
        assert_int_equal(smi_events(kfd, gpu_id, &fd), 0);
        assert_int_equal((int)fd, lowest);
        close((int)fd);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(get_version_reports_1_13_or_newer),
                cmocka_unit_test(unknown_nr_is_rejected),
                cmocka_unit_test(get_version_short_size_copies_only_user_size),
                cmocka_unit_test(get_version_long_size_zero_fills_tail),
                cmocka_unit_test(get_version_largest_size_zero_fills_all),
                cmocka_unit_test(dbg_trap_short_size_zero_fills_union),
                cmocka_unit_test(bad_arg_pointer_is_efault),
                cmocka_unit_test(inherited_fd_is_ebadf),
                cmocka_unit_test(dup_in_owner_works),
                cmocka_unit_test(fd_passed_by_scm_rights_is_ebadf),
                cmocka_unit_test_setup_teardown(read_and_write_are_einval, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test(smi_events_fd_needs_a_free_number),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
