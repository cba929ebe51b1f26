/* SPDX-License-Identifier: MIT */
/*
 * /dev/kfd as an application sees it through the preload: a real fd that
 * open/close/dup/fork/exec treat as a struct file, ioctls that reach the
 * emulated kfd_ioctl, the doorbell mmap, read and write that fail as on a
 * file without them, and the KFD's sysfs. Runs inside kfdemu-run --gpus 2.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "emu-hw.h"
#include "kfd-test.h"

static char *self_exe;

static int open_kfd(int flags)
{
        int fd = open("/dev/kfd", flags);

        if (fd < 0)
                fail_msg("open(/dev/kfd): %m");
        return fd;
}

static void test_get_version(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);

        assert_int_equal(kfd_test_get_version(fd), 0);
        close(fd);
}

static void test_open_flags(void **state)
{
        int with = open_kfd(O_RDWR | O_CLOEXEC);
        int without = openat(AT_FDCWD, "/dev/kfd", O_RDWR);

        assert_true(without >= 0);
        assert_true(fcntl(with, F_GETFD) & FD_CLOEXEC);
        assert_false(fcntl(without, F_GETFD) & FD_CLOEXEC);
        /* open() hands out the lowest free fd, as for a real device. */
        close(with);
        int again = open_kfd(O_RDWR | O_CLOEXEC);
        assert_int_equal(again, with);
        close(again);
        close(without);
}

static void test_dup_and_close(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        int copy = fcntl(fd, F_DUPFD_CLOEXEC, 100);

        assert_true(copy >= 100);
        close(fd);
        /* The file lives while a reference does. */
        assert_int_equal(kfd_test_get_version(copy), 0);
        close(copy);
        assert_int_equal(kfd_test_get_version(copy), -EBADF);
}

static void test_bad_argument_pointer(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);

        /* copy_to_user of GET_VERSION's result to an unmapped address. */
        assert_int_equal(kfd_test_ioctl(fd, AMDKFD_IOC_GET_VERSION, (void *)16), -EFAULT);
        close(fd);
}

static void test_foreign_socket_untouched(void **state)
{
        int sv[2];
        struct kfd_ioctl_get_version_args args;

        /* A 'K' ioctl on a socket that is no kfd file is the real syscall. */
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(kfd_test_ioctl(sv[0], AMDKFD_IOC_GET_VERSION, &args), -ENOTTY);
        close(sv[0]);
        close(sv[1]);
}

static void test_fork_child_gets_ebadf(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        int status;

        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
                /* kfd_ioctl: the file's lead_thread is the parent's, not ours. */
                _exit(kfd_test_get_version(fd) == -EBADF ? 0 : 1);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(kfd_test_get_version(fd), 0);
        close(fd);
}

/* The node's sysfs where the kernel's is (mounted by kfdemu-run). */
static void test_sysfs_in_place(void **state)
{
        char path[128], line[256];
        struct stat st;
        unsigned nodes = 0;
        DIR *d;
        struct dirent *de;

        d = opendir("/sys/class/kfd/kfd/topology/nodes");
        assert_non_null(d);
        while ((de = readdir(d)))
                nodes += de->d_name[0] != '.';
        closedir(d);
        assert_int_equal(nodes, 3);      /* the CPU node and two GPUs */

        assert_true(kfd_test_gpu_id(1) != 0);
        assert_true(kfd_test_gpu_id(2) != 0);
        assert_int_equal(kfd_test_gpu_id(0), 0);

        snprintf(path, sizeof(path), "/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties");
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(access(path, R_OK), 0);
        assert_int_equal(faccessat(AT_FDCWD, path, R_OK, 0), 0);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, line, sizeof(line) - 1);
        assert_true(n > 0);
        close(fd);

        FILE *f = fopen("/sys/module/amdgpu/parameters/sched_policy", "re");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        assert_int_equal(atoi(line), 0);
        fclose(f);

        /* Nobody writes it, root included (sysfs has no store for it). */
        assert_int_equal(open(path, O_WRONLY | O_CLOEXEC), -1);
        /* The device node itself answers stat/access. */
        assert_int_equal(access("/dev/kfd", R_OK | W_OK), 0);
        /* Nothing but the KFD's own entries. */
        assert_int_equal(stat("/sys/class/kfd/kfd-not", &st), -1);
        assert_int_equal(errno, ENOENT);
}

static void test_proc_dir_follows_open(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        char path[128];

        assert_true(kfd_test_proc_dir_exists(getpid()));
        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/pasid", (int)getpid());
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        fclose(f);
        close(fd);
}

static void test_doorbell_mmap(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        uint32_t gpu_id = kfd_test_gpu_id(1);
        off_t offset = (off_t)(EMU_KFD_MMAP_TYPE_DOORBELL | EMU_KFD_MMAP_GPU_ID(gpu_id));

        volatile uint64_t *a = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
        volatile uint64_t *b = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
        assert_true(a != MAP_FAILED);
        assert_true(b != MAP_FAILED);
        /* Both mappings show the one doorbell page of this process on the GPU. */
        a[3] = 0x1234;
        assert_true(b[3] == 0x1234);

        /* kfd_doorbell_mmap accepts exactly the process's doorbell slice. */
        void *wrong = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
        assert_true(wrong == MAP_FAILED);
        assert_int_equal(errno, EINVAL);

        munmap((void *)a, EMU_DOORBELL_FRAME_SIZE);
        munmap((void *)b, EMU_DOORBELL_FRAME_SIZE);
        close(fd);
}

#define assert_einval(call)                              \
        do {                                             \
                errno = 0;                               \
                assert_int_equal((call), -1);            \
                assert_int_equal(errno, EINVAL);         \
        } while (0)

/*
 * kfd_fops has neither read nor write (kfd-interface.md §10): every libc
 * form of read(2) and write(2) fails with EINVAL, and changes nothing: the
 * file answers ioctls and maps doorbells as before. A foreign socket reads
 * and writes as ever.
 */
static void test_read_and_write_fail_and_change_nothing(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        uint32_t gpu_id = kfd_test_gpu_id(1);
        off_t offset = (off_t)(EMU_KFD_MMAP_TYPE_DOORBELL | EMU_KFD_MMAP_GPU_ID(gpu_id));
        char buf[16] = "gpreempt";
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        int sv[2];

        assert_einval(write(fd, buf, sizeof(buf)));
        assert_einval(write(fd, buf, 0));
        assert_einval(writev(fd, &iov, 1));
        assert_einval(pwrite(fd, buf, sizeof(buf), 0));
        assert_einval(pwritev(fd, &iov, 1, 0));
        assert_einval(pwritev2(fd, &iov, 1, -1, 0));
        assert_einval(read(fd, buf, sizeof(buf)));
        assert_einval(readv(fd, &iov, 1));
        assert_einval(pread(fd, buf, sizeof(buf), 0));
        assert_einval(preadv(fd, &iov, 1, 0));
        assert_einval(preadv2(fd, &iov, 1, -1, 0));

        assert_int_equal(kfd_test_get_version(fd), 0);
        void *doorbells = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
        assert_true(doorbells != MAP_FAILED);
        munmap(doorbells, EMU_DOORBELL_FRAME_SIZE);
        close(fd);

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(write(sv[0], buf, sizeof(buf)), (ssize_t)sizeof(buf));
        assert_int_equal(read(sv[1], buf, sizeof(buf)), (ssize_t)sizeof(buf));
        close(sv[0]);
        close(sv[1]);
}

/*
 * kfd_fops has no poll: epoll_ctl refuses the file with EPERM, whatever the
 * op (kfd-interface.md §10); poll(2) answers DEFAULT_POLLMASK. An
 * application's own socket is added as ever.
 */
static void test_epoll_refuses_the_file(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        int epfd = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event event = { .events = EPOLLIN };
        struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };
        int sv[2];

        assert_true(epfd >= 0);
        errno = 0;
        assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL), -1);
        assert_int_equal(errno, EPERM);
        /* fdget(epfd) comes first */
        assert_int_equal(epoll_ctl(-1, EPOLL_CTL_ADD, fd, &event), -1);
        assert_int_equal(errno, EBADF);

        assert_int_equal(poll(&pfd, 1, 0), 1);
        assert_int_equal(pfd.revents & (POLLIN | POLLOUT), POLLIN | POLLOUT);
        assert_int_equal(kfd_test_get_version(fd), 0);

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_ADD, sv[0], &event), 0);
        close(sv[0]);
        close(sv[1]);
        close(epfd);
        close(fd);
}

/*
 * Nor splice_read or splice_write: splice and sendfile to or from the file
 * fail with EINVAL (kfd-interface.md §10), and change nothing.
 */
static void test_splice_and_sendfile_fail(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        int pipefd[2];

        assert_true(null_fd >= 0);
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        assert_int_equal(write(pipefd[1], "gpreempt", 8), 8);
        assert_einval(splice(fd, NULL, pipefd[1], NULL, 8, 0));
        assert_einval(splice(pipefd[0], NULL, fd, NULL, 8, 0));
        assert_einval(sendfile(fd, null_fd, NULL, 8));
        assert_einval(sendfile(null_fd, fd, NULL, 8));
        errno = 0;
        assert_int_equal(sendfile(-1, fd, NULL, 8), -1);
        assert_int_equal(errno, EBADF);
        /* the pipe still holds what was written */
        char buf[8];
        assert_int_equal(read(pipefd[0], buf, sizeof(buf)), 8);
        assert_int_equal(kfd_test_get_version(fd), 0);
        close(pipefd[0]);
        close(pipefd[1]);
        close(null_fd);
        close(fd);
}

/*
 * A syscall that succeeds leaves errno as it was: telling a kfd file from
 * another (a socket that is not connected, or not a socket at all) must
 * not leave the check's own errno behind.
 */
static void test_successful_read_and_write_keep_errno(void **state)
{
        char buf[16] = "gpreempt";
        int sv[2], pipefd[2];

        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        errno = EDOM;
        assert_int_equal(write(pipefd[1], buf, sizeof(buf)), (ssize_t)sizeof(buf));
        assert_int_equal(errno, EDOM);
        assert_int_equal(read(pipefd[0], buf, sizeof(buf)), (ssize_t)sizeof(buf));
        assert_int_equal(errno, EDOM);
        close(pipefd[0]);
        close(pipefd[1]);

        /* a datagram socket with no peer (getpeername: ENOTCONN) reads what
         * was sent to its address */
        struct sockaddr_un address = { .sun_family = AF_UNIX };
        socklen_t address_size;

        snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1, "kfdemu-errno-%d", (int)getpid());
        address_size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(address.sun_path + 1));
        sv[0] = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sv[1] = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(sv[0] >= 0 && sv[1] >= 0);
        assert_int_equal(bind(sv[0], (struct sockaddr *)&address, address_size), 0);
        assert_int_equal(sendto(sv[1], buf, sizeof(buf), 0, (struct sockaddr *)&address, address_size),
                         (ssize_t)sizeof(buf));
        errno = EDOM;
        assert_int_equal(read(sv[0], buf, sizeof(buf)), (ssize_t)sizeof(buf));
        assert_int_equal(errno, EDOM);
        close(sv[0]);
        close(sv[1]);
}

/*
 * A known-difference test (README.md, "Known differences"): what reaches
 * the file past the preload (stdio's internal calls, a raw syscall) fails
 * with EINVAL in the kernel, but under kfdemu reaches the socket, where a
 * write is discarded and a read ends at once. Either is accepted; what
 * both must do is change nothing: the file answers ioctls afterwards.
 */
#define assert_einval_or(call, emulated)                                             \
        do {                                                                         \
                errno = 0;                                                           \
                long r_ = (call);                                                    \
                if (r_ == -1)                                                        \
                        assert_int_equal(errno, EINVAL); /* the kernel */            \
                else                                                                 \
                        assert_int_equal(r_, (long)(emulated)); /* the discard */    \
        } while (0)

static void test_read_and_write_past_the_preload_change_nothing(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        char buf[16] = "gpreempt";

        assert_einval_or(syscall(SYS_write, fd, buf, sizeof(buf)), sizeof(buf));
        /* an empty record, which the server must not take for a close */
        assert_einval_or(syscall(SYS_write, fd, buf, 0), 0);
        assert_einval_or(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
        assert_int_equal(kfd_test_get_version(fd), 0);
        close(fd);
}

struct hammer {
        int fd;
        int failures;
};

static void *hammer_thread(void *arg)
{
        struct hammer *h = arg;

        for (int i = 0; i < 300; i++)
                if (kfd_test_get_version(h->fd) < 0)
                        h->failures++;
        return NULL;
}

static void test_many_threads_one_fd(void **state)
{
        enum { N_THREADS = 48 };
        struct hammer h[N_THREADS];
        pthread_t threads[N_THREADS];
        int fd = open_kfd(O_RDWR | O_CLOEXEC);

        for (int i = 0; i < N_THREADS; i++) {
                h[i] = (struct hammer){ .fd = fd };
                assert_int_equal(pthread_create(&threads[i], NULL, hammer_thread, &h[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                assert_int_equal(pthread_join(threads[i], NULL), 0);
                assert_int_equal(h[i].failures, 0);
        }
        close(fd);
}

static unsigned count_open_fds(void)
{
        unsigned n = 0;
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        assert_non_null(d);
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static void *one_call_thread(void *arg)
{
        struct hammer *h = arg;

        h->failures += kfd_test_get_version(h->fd) < 0;
        return NULL;
}

static void test_thread_exit_closes_its_channel(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);
        struct hammer h = { .fd = fd };
        unsigned before = count_open_fds();

        for (int i = 0; i < 100; i++) {
                pthread_t thread;
                assert_int_equal(pthread_create(&thread, NULL, one_call_thread, &h), 0);
                assert_int_equal(pthread_join(thread, NULL), 0);
        }
        assert_int_equal(h.failures, 0);
        assert_int_equal(count_open_fds(), before);
        close(fd);
}

static void test_application_closes_the_channel(void **state)
{
        int fd = open_kfd(O_RDWR | O_CLOEXEC);

        assert_int_equal(kfd_test_get_version(fd), 0);
        /* A program that closes "every fd above 2" also closes the preload's
         * call channel; the next call must still work. */
        for (int i = 3; i < 1024; i++)
                if (i != fd)
                        close(i);
        assert_int_equal(kfd_test_get_version(fd), 0);
        close(fd);
}

static void test_exec_releases_the_process(void **state)
{
        int status;

        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                open_kfd(O_RDWR | O_CLOEXEC);
                if (!kfd_test_proc_dir_exists(getpid()))
                        _exit(2);
                execl(self_exe, self_exe, "--after-exec", (char *)NULL);
                _exit(3);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* The new image of test_exec_releases_the_process: the old mm's
 * kfd_process must be gone (its only file closed on exec), and a new open
 * makes a new one. */
static int after_exec(void)
{
        if (!kfd_test_wait_proc_dir(getpid(), false, 2000))
                return 4;
        int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        if (fd < 0 || kfd_test_get_version(fd) < 0 || !kfd_test_proc_dir_exists(getpid()))
                return 5;
        return 0;
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_version),
                cmocka_unit_test(test_open_flags),
                cmocka_unit_test(test_dup_and_close),
                cmocka_unit_test(test_bad_argument_pointer),
                cmocka_unit_test(test_foreign_socket_untouched),
                cmocka_unit_test(test_fork_child_gets_ebadf),
                cmocka_unit_test(test_sysfs_in_place),
                cmocka_unit_test(test_proc_dir_follows_open),
                cmocka_unit_test(test_doorbell_mmap),
                cmocka_unit_test(test_read_and_write_fail_and_change_nothing),
                cmocka_unit_test(test_successful_read_and_write_keep_errno),
                cmocka_unit_test(test_epoll_refuses_the_file),
                cmocka_unit_test(test_splice_and_sendfile_fail),
                cmocka_unit_test(test_read_and_write_past_the_preload_change_nothing),
                cmocka_unit_test(test_many_threads_one_fd),
                cmocka_unit_test(test_thread_exit_closes_its_channel),
                cmocka_unit_test(test_application_closes_the_channel),
                cmocka_unit_test(test_exec_releases_the_process),
        };

        if (argc == 2 && strcmp(argv[1], "--after-exec") == 0)
                return after_exec();
        self_exe = realpath("/proc/self/exe", NULL);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
