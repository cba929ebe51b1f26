/* SPDX-License-Identifier: MIT */
/*
 * A client that does not follow the protocol (garbage, wrong sizes, lies
 * about its identity, never reads its replies, floods the server) loses its
 * connection and nothing else: after each case an honest GET_VERSION still
 * works. (A file that talks after OPEN keeps its connection: that is an
 * application writing to /dev/kfd.) Speaks protocol.h directly on
 * $KFDEMU_SOCKET. Runs in kfdemu-run.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfd-test.h"
#include "protocol.h"

/* The first GPU of kfdemu's default node (drm_render_minor 128 + index). */
#define RENDER_MINOR_OF_GPU0 128

static int raw_connect(void)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        const char *path = getenv(KFDEMU_ENV_SOCKET);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        assert_non_null(path);
        assert_true(fd >= 0);
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
        /* A blocking connect to a listener whose backlog is full waits, but
         * a signal ends the wait with EINTR, and a loaded machine can leave
         * the server behind on accept(): retry those, briefly and boundedly;
         * anything else is the failure this test looks for. */
        for (int attempt = 0; connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0; attempt++) {
                if ((errno != EINTR && errno != EAGAIN) || attempt >= 5000)
                        fail_msg("connect to the kfdemu server: %s", strerror(errno));
                usleep(1000);
        }
        return fd;
}

static void raw_send(int fd, const void *msg, size_t size)
{
        assert_int_equal(send(fd, msg, size, MSG_NOSIGNAL), (ssize_t)size);
}

static int raw_hello(void)
{
        struct kfdemu_msg_hello hello = { .type = KFDEMU_MSG_HELLO, .tid = gettid() };
        int fd = raw_connect();

        raw_send(fd, &hello, sizeof(hello));
        return fd;
}

static uint64_t inode_of(int fd)
{
        struct stat st;

        assert_int_equal(fstat(fd, &st), 0);
        return st.st_ino;
}

/* The server hung up on us. */
static void expect_dropped(int fd)
{
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        char buf[64];

        assert_int_equal(poll(&pfd, 1, 5000), 1);
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n != 0 && !(n < 0 && errno == ECONNRESET))
                fail_msg("expected the server to drop the connection, got %zd", n);
        close(fd);
}

static struct kfdemu_reply expect_reply(int fd)
{
        struct kfdemu_reply reply;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        assert_int_equal(poll(&pfd, 1, 5000), 1);
        assert_int_equal(recv(fd, &reply, sizeof(reply), 0), (ssize_t)sizeof(reply));
        return reply;
}

static void assert_server_alive(void)
{
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

        assert_true(kfd >= 0);
        assert_int_equal(kfd_test_get_version(kfd), 0);
        close(kfd);
}

static void test_malformed_first_messages(void **state)
{
        char big[4096] = { 0 };
        uint32_t unknown[4] = { 99, 0, 0, 0 };
        struct kfdemu_msg_hello short_hello = { .type = KFDEMU_MSG_HELLO, .tid = gettid() };
        int fd;

        fd = raw_connect();
        raw_send(fd, "abc", 3);
        expect_dropped(fd);

        fd = raw_connect();
        memcpy(big, &(uint32_t){ KFDEMU_MSG_IOCTL }, sizeof(uint32_t));
        raw_send(fd, big, sizeof(big));
        expect_dropped(fd);

        fd = raw_connect();
        raw_send(fd, "", 0);
        expect_dropped(fd);

        fd = raw_connect();
        raw_send(fd, unknown, sizeof(unknown));
        expect_dropped(fd);

        fd = raw_connect();
        raw_send(fd, &short_hello, sizeof(short_hello) - 1);
        expect_dropped(fd);

        /* An IOCTL before HELLO: nobody has said which thread calls. */
        struct kfdemu_msg_ioctl ioctl_msg = { .type = KFDEMU_MSG_IOCTL, .cmd = AMDKFD_IOC_GET_VERSION };
        fd = raw_connect();
        raw_send(fd, &ioctl_msg, sizeof(ioctl_msg));
        expect_dropped(fd);

        assert_server_alive();
}

static void test_identity_lies(void **state)
{
        /* A thread id that is not one of ours. */
        struct kfdemu_msg_hello hello = { .type = KFDEMU_MSG_HELLO, .tid = 1 };
        int fd = raw_connect();

        raw_send(fd, &hello, sizeof(hello));
        expect_dropped(fd);

        /* Claiming an open file's identity for a second file. */
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        assert_true(kfd >= 0);
        struct kfdemu_msg_open open_msg = { .type = KFDEMU_MSG_OPEN, .tid = gettid(), .file_inode = inode_of(kfd) };
        fd = raw_connect();
        raw_send(fd, &open_msg, sizeof(open_msg));
        assert_int_equal(expect_reply(fd).result, -EEXIST);
        close(fd);
        assert_int_equal(kfd_test_get_version(kfd), 0);
        close(kfd);
}

static void test_calls_on_a_raw_channel(void **state)
{
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        int ch = raw_hello();
        struct kfdemu_msg_ioctl msg = { .type = KFDEMU_MSG_IOCTL, .cmd = AMDKFD_IOC_GET_VERSION, .arg = 8 };
        struct kfdemu_msg_interrupted interrupted = { .type = KFDEMU_MSG_INTERRUPTED };
        struct kfdemu_reply reply;

        assert_true(kfd >= 0);
        /* A socket the server never opened. */
        msg.file_inode = inode_of(ch);
        raw_send(ch, &msg, sizeof(msg));
        assert_int_equal(expect_reply(ch).status, KFDEMU_REPLY_NOT_MINE);

        /* A real file, a bad pointer: the kernel's copy_to_user fault. */
        msg.file_inode = inode_of(kfd);
        raw_send(ch, &msg, sizeof(msg));
        reply = expect_reply(ch);
        assert_int_equal(reply.status, KFDEMU_REPLY_RESULT);
        assert_int_equal(reply.result, -EFAULT);

        /* An interruption with nothing asleep is nothing. */
        raw_send(ch, &interrupted, sizeof(interrupted));
        struct kfd_ioctl_get_version_args version = { 0 };
        msg.arg = (uint64_t)(uintptr_t)&version;
        raw_send(ch, &msg, sizeof(msg));
        assert_int_equal(expect_reply(ch).result, 0);
        assert_int_equal(version.minor_version, 13);

        /* A channel does not open files. */
        struct kfdemu_msg_open open_msg = { .type = KFDEMU_MSG_OPEN, .tid = gettid(), .file_inode = 1 };
        raw_send(ch, &open_msg, sizeof(open_msg));
        expect_dropped(ch);
        close(kfd);
        assert_server_alive();
}

/* Render nodes through raw messages: OPEN of a minor no GPU has is
 * ENOENT; STAT says which device a file is and NOT_MINE for any other
 * socket; a kfd file does not take DRM's ioctls. */
static void test_render_node_messages(void **state)
{
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        char path[64];
        int ch = raw_hello(), file = raw_connect();
        struct kfdemu_msg_open open_msg = { .type = KFDEMU_MSG_OPEN, .tid = gettid(), .file_inode = inode_of(file),
                                            .render_minor = 7 };
        struct kfdemu_msg_stat stat_msg = { .type = KFDEMU_MSG_STAT, .file_inode = inode_of(ch) };
        struct kfdemu_msg_ioctl drm_on_kfd = { .type = KFDEMU_MSG_IOCTL, .cmd = _IOWR('d', 0x00, uint64_t),
                                               .file_inode = inode_of(kfd), .arg = 8 };
        struct kfdemu_reply reply;

        assert_true(kfd >= 0);
        raw_send(file, &open_msg, sizeof(open_msg));
        reply = expect_reply(file);
        assert_int_equal(reply.status, KFDEMU_REPLY_RESULT);
        assert_int_equal(reply.result, -ENOENT);
        close(file);

        raw_send(ch, &stat_msg, sizeof(stat_msg));
        assert_int_equal(expect_reply(ch).status, KFDEMU_REPLY_NOT_MINE);
        stat_msg.file_inode = inode_of(kfd);
        raw_send(ch, &stat_msg, sizeof(stat_msg));
        reply = expect_reply(ch);
        assert_int_equal(reply.status, KFDEMU_REPLY_RESULT);
        assert_int_equal(reply.result, 0);
        snprintf(path, sizeof(path), "/dev/dri/renderD%u", RENDER_MINOR_OF_GPU0);
        int drm = open(path, O_RDWR | O_CLOEXEC);
        assert_true(drm >= 0);
        stat_msg.file_inode = inode_of(drm);
        raw_send(ch, &stat_msg, sizeof(stat_msg));
        reply = expect_reply(ch);
        assert_int_equal(reply.status, KFDEMU_REPLY_RESULT);
        assert_int_equal(reply.result, RENDER_MINOR_OF_GPU0);

        raw_send(ch, &drm_on_kfd, sizeof(drm_on_kfd));
        assert_int_equal(expect_reply(ch).status, KFDEMU_REPLY_NOT_MINE);
        close(drm);
        close(ch);
        close(kfd);
        assert_server_alive();
}

/*
 * What a file says after OPEN is what its application wrote to /dev/kfd
 * past the preload (stdio, a raw syscall): amdkfd has no write, so it is
 * discarded, whatever it looks like, and the file stays open.
 */
static void test_file_that_talks_after_open(void **state)
{
        int file = raw_connect();
        struct kfdemu_msg_open open_msg = { .type = KFDEMU_MSG_OPEN, .tid = gettid(), .file_inode = inode_of(file) };
        uint64_t inode = open_msg.file_inode;
        char big[KFDEMU_MSG_MAX * 2] = { 0 };
        struct pollfd pfd = { .fd = file, .events = POLLIN };

        raw_send(file, &open_msg, sizeof(open_msg));
        assert_int_equal(expect_reply(file).result, 0);
        raw_send(file, &open_msg, sizeof(open_msg));
        raw_send(file, big, sizeof(big));
        raw_send(file, "x", 1);
        /* no answer, no hang-up */
        assert_int_equal(poll(&pfd, 1, 200), 0);

        int ch = raw_hello();
        struct kfd_ioctl_get_version_args version = { 0 };
        struct kfdemu_msg_ioctl msg = { .type = KFDEMU_MSG_IOCTL, .cmd = AMDKFD_IOC_GET_VERSION, .file_inode = inode,
                                        .arg = (uint64_t)(uintptr_t)&version };
        raw_send(ch, &msg, sizeof(msg));
        struct kfdemu_reply reply = expect_reply(ch);
        assert_int_equal(reply.status, KFDEMU_REPLY_RESULT);
        assert_int_equal(reply.result, 0);
        assert_int_equal(version.major_version, 1);
        close(ch);
        close(file);
}

/* A second call while the first sleeps in the kernel: the connection goes
 * and the sleeping call is dropped (emu_call_abandon), nothing else. The
 * sleep is RUNTIME_ENABLE of a self-debugged process (kfd-interface.md §5). */
static void test_second_call_while_one_sleeps(void **state)
{
        struct kfd_test_debuggee d;
        struct kfd_ioctl_runtime_enable_args runtime = { .mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK };

        assert_int_equal(kfd_test_self_debug(&d), 0);
        int ch = raw_hello();
        struct kfdemu_msg_ioctl msg = {
                .type = KFDEMU_MSG_IOCTL,
                .cmd = AMDKFD_IOC_RUNTIME_ENABLE,
                .file_inode = inode_of(d.kfd),
                .arg = (uint64_t)(uintptr_t)&runtime,
        };
        raw_send(ch, &msg, sizeof(msg));
        assert_int_equal(kfd_test_wait_event(&d), 0);    /* EC_PROCESS_RUNTIME: it sleeps */
        raw_send(ch, &msg, sizeof(msg));
        expect_dropped(ch);

        /* The node goes on: the ack is banked for nobody, the session ends. */
        assert_int_equal(kfd_test_ack_runtime(d.kfd), 0);
        assert_int_equal(kfd_test_end_self_debug(&d), 0);
        assert_server_alive();
}

static void test_client_that_never_reads(void **state)
{
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        int ch = raw_hello();
        /* Static: the server goes on answering the queued calls after we
         * close and return, and each answer writes here. On the stack,
         * those late writes landed in whatever the next test had there
         * (a sockaddr, once: connect() failed with ECONNREFUSED). */
        static struct kfd_ioctl_get_version_args version;
        struct kfdemu_msg_ioctl msg = {
                .type = KFDEMU_MSG_IOCTL,
                .cmd = AMDKFD_IOC_GET_VERSION,
                .file_inode = inode_of(kfd),
                .arg = (uint64_t)(uintptr_t)&version,
        };

        /* Far more replies than a socket buffer holds: the server must
         * not block on us. */
        for (int i = 0; i < 5000; i++)
                if (send(ch, &msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                        break;
        assert_server_alive();
        close(ch);
        close(kfd);
}

static void test_flood_of_connections(void **state)
{
        enum { MAX = 2000 };
        static int fds[MAX];
        struct rlimit limit;
        int n = MAX;

        /* As many as this process may hold, up to MAX. */
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &limit), 0);
        if (limit.rlim_cur < (rlim_t)MAX + 64)
                n = (int)limit.rlim_cur - 64;
        for (int i = 0; i < n; i++) {
                fds[i] = raw_connect();
                if (i % 2)
                        raw_send(fds[i], "x", 1);
        }
        assert_server_alive();
        for (int i = 0; i < n; i++)
                close(fds[i]);
        assert_server_alive();
}

static void test_fds_sent_to_the_server(void **state)
{
        struct kfdemu_msg_hello hello = { .type = KFDEMU_MSG_HELLO, .tid = gettid() };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = { 0 };
        struct iovec iov = { .iov_base = &hello, .iov_len = sizeof(hello) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        int ch = raw_connect(), passed = open("/dev/null", O_RDONLY | O_CLOEXEC);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &passed, sizeof(int));
        assert_int_equal(sendmsg(ch, &mh, MSG_NOSIGNAL), (ssize_t)sizeof(hello));
        close(passed);

        /* The stray fd is dropped; the channel works. */
        struct kfdemu_msg_exec exec_msg = { .type = KFDEMU_MSG_EXEC };
        raw_send(ch, &exec_msg, sizeof(exec_msg));
        assert_int_equal(expect_reply(ch).result, 0);
        close(ch);
        assert_server_alive();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_malformed_first_messages),
                cmocka_unit_test(test_identity_lies),
                cmocka_unit_test(test_calls_on_a_raw_channel),
                cmocka_unit_test(test_render_node_messages),
                cmocka_unit_test(test_file_that_talks_after_open),
                cmocka_unit_test(test_second_call_while_one_sleeps),
                cmocka_unit_test(test_client_that_never_reads),
                cmocka_unit_test(test_flood_of_connections),
                cmocka_unit_test(test_fds_sent_to_the_server),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
