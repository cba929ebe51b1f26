/* SPDX-License-Identifier: MIT */
#include "daemon-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "varlink-client.h"

void daemon_harness_init(struct daemon_harness *h)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *h = (struct daemon_harness){ .pid = -1, .listen_fd = -1 };
        config_fixture_init(&h->config);
        snprintf(h->runtime_dir, sizeof(h->runtime_dir), "%s/run", h->config.dir);
        snprintf(h->socket_path, sizeof(h->socket_path), "%s/io.gpreempt", h->runtime_dir);
        snprintf(h->notify_path, sizeof(h->notify_path), "%s/notify", h->config.dir);
        snprintf(h->stderr_path, sizeof(h->stderr_path), "%s/stderr", h->config.dir);
        h->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(h->notify_fd >= 0);
        strcpy(sa.sun_path, h->notify_path);
        assert_int_equal(bind(h->notify_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

/* In the daemon's child, before exec. */
static void set_up_stdio(const struct daemon_harness *h)
{
        int pipe_fds[2];

        switch (h->stdio) {
        case DAEMON_STDIO_LOGGED:
                dup2(h->stderr_fd, STDERR_FILENO);
                return;
        case DAEMON_STDIO_CLOSED:
                for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
                        close(fd);
                return;
        case DAEMON_STDIO_BROKEN_PIPE:
                if (pipe2(pipe_fds, O_CLOEXEC) < 0 || dup2(pipe_fds[1], STDERR_FILENO) < 0)
                        _exit(126);
                close(pipe_fds[0]);
                return;
        }
}

void daemon_harness_start(struct daemon_harness *h, const char *binary, const char *const *extra_env)
{
        h->stderr_fd = open(h->stderr_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(h->stderr_fd >= 0);
        h->pid = fork();
        assert_true(h->pid >= 0);
        if (h->pid == 0) {
                /* a failing test must not leave daemons behind */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                /* as a shell starts it: an ignored signal stays ignored across
                 * exec, and the test runner may ignore SIGPIPE */
                signal(SIGPIPE, SIG_DFL);
                set_up_stdio(h);
                setenv("NOTIFY_SOCKET", h->notify_path, 1);
                setenv("GPREEMPT_CONFIG_DIR", h->config.dir, 1);
                setenv("GPREEMPT_RUNTIME_DIR", h->runtime_dir, 1);
                for (size_t i = 0; extra_env && extra_env[i]; i++)
                        putenv((char *)extra_env[i]);
                if (h->listen_fd >= 0) {
                        char pid[16];

                        /* sd_listen_fds(): fd 3 on, LISTEN_PID naming the daemon itself */
                        dup2(h->listen_fd, 3);
                        snprintf(pid, sizeof(pid), "%d", (int)getpid());
                        setenv("LISTEN_PID", pid, 1);
                        setenv("LISTEN_FDS", "1", 1);
                }
                if (h->no_realtime) {
                        /* root keeps after exec only what the bounding set has */
                        if (setrlimit(RLIMIT_RTPRIO, &(struct rlimit){ 0, 0 }) < 0 ||
                            prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) < 0)
                                _exit(126);
                }
                execl(binary, binary, (char *)NULL);
                _exit(127);
        }
}

long long daemon_harness_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool daemon_harness_wait_notify(struct daemon_harness *h, const char *text, int timeout_ms)
{
        long long deadline = daemon_harness_now_ms() + timeout_ms;

        for (;;) {
                struct pollfd pfd = { .fd = h->notify_fd, .events = POLLIN };
                char buf[4096];
                long long left = deadline - daemon_harness_now_ms();
                ssize_t n;

                if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
                        return false;
                n = recv(h->notify_fd, buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                if (strstr(buf, text))
                        return true;
        }
}

int daemon_harness_call(struct daemon_harness *h, const char *method, struct json_object *params,
                        struct json_object **ret_reply, char **ret_error)
{
        /* generous: a loaded machine only slows the daemon, and a stuck one fails the test rather than hangs it */
        enum { TIMEOUT_MS = 10000 };
        struct varlink_client *c;
        int r = varlink_client_connect(h->socket_path, TIMEOUT_MS, &c);

        if (r < 0)
                return r;
        r = varlink_client_call(c, method, params, TIMEOUT_MS, ret_reply, ret_error);
        varlink_client_free(c);
        return r;
}

int daemon_harness_send(struct daemon_harness *h, const char *method, struct json_object *params)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct json_object *message = json_object_new_object();
        const char *text;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r = 0;

        json_object_object_add(message, "method", json_object_new_string(method));
        json_object_object_add(message, "parameters", json_object_get(params));
        text = json_object_to_json_string_ext(message, JSON_C_TO_STRING_PLAIN);
        if (strlen(h->socket_path) >= sizeof(sa.sun_path))
                errno = ENAMETOOLONG;
        else
                memcpy(sa.sun_path, h->socket_path, strlen(h->socket_path) + 1);
        if (fd < 0 || !sa.sun_path[0] || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            send(fd, text, strlen(text) + 1, MSG_NOSIGNAL) != (ssize_t)(strlen(text) + 1))
                r = -errno;
        json_object_put(message);
        if (r < 0) {
                if (fd >= 0)
                        close(fd);
                return r;
        }
        return fd;
}

int daemon_harness_read_reply(int fd, int timeout_ms, char **ret_error)
{
        char text[65536];
        size_t len = 0;
        long long deadline = daemon_harness_now_ms() + timeout_ms;
        struct json_object *reply, *error;

        while (len == 0 || text[len - 1] != '\0') {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                long long left = deadline - daemon_harness_now_ms();
                int ready = poll(&pfd, 1, left > 0 ? (int)left : 0);
                ssize_t n;

                if (ready < 0 && errno == EINTR)
                        continue;
                if (ready <= 0)
                        return ready < 0 ? -errno : -ETIMEDOUT;
                n = recv(fd, text + len, sizeof(text) - len, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || len + (size_t)n == sizeof(text))
                        return n < 0 ? -errno : -ECONNRESET;
                len += (size_t)n;
        }
        reply = json_tokener_parse(text);
        if (!reply)
                return -EBADMSG;
        *ret_error = json_object_object_get_ex(reply, "error", &error) ? strdup(json_object_get_string(error)) : NULL;
        json_object_put(reply);
        return 0;
}

int daemon_harness_stop(struct daemon_harness *h, int signal)
{
        int status = -1;

        if (h->pid <= 0)
                return -1;
        kill(h->pid, signal);
        for (int i = 0; i < 1000; i++) {
                if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
                        h->pid = -1;
                        return status;
                }
                usleep(10000);
        }
        kill(h->pid, SIGKILL);
        waitpid(h->pid, &status, 0);
        h->pid = -1;
        fail_msg("gpreemptd did not exit within 10 s of signal %d", signal);
        return status;
}

const char *daemon_harness_log(struct daemon_harness *h)
{
        static char buf[65536];
        ssize_t n = pread(h->stderr_fd, buf, sizeof(buf) - 1, 0);

        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

size_t daemon_harness_log_count(struct daemon_harness *h, const char *text)
{
        const char *log = daemon_harness_log(h);
        size_t n = 0;

        for (const char *at = strstr(log, text); at; at = strstr(at + 1, text))
                n++;
        return n;
}

void daemon_harness_cleanup(struct daemon_harness *h)
{
        if (!h->config.dir[0])
                return; /* never initialised, or cleaned up already */
        if (h->pid > 0) {
                kill(h->pid, SIGKILL);
                waitpid(h->pid, NULL, 0);
        }
        close(h->notify_fd);
        if (h->stderr_fd > 0)
                close(h->stderr_fd);
        config_fixture_cleanup(&h->config);
        *h = (struct daemon_harness){ .pid = -1, .listen_fd = -1 };
}

void daemon_harness_start_configured(struct daemon_harness *h, const char *binary, const char *settings,
                                     const char *workloads)
{
        char conf[512];

        daemon_harness_init(h);
        /* info unless the settings say otherwise (a key may be given once) */
        snprintf(conf, sizeof(conf), "[Daemon]\n%sDiscoveryIntervalMs=20\n%s",
                 strstr(settings, "LogLevel=") ? "" : "LogLevel=info\n", settings);
        config_fixture_write(&h->config, "gpreemptd.conf", conf);
        config_fixture_write(&h->config, "workloads.d/50-test.conf", workloads);
        daemon_harness_start(h, binary, NULL);
        if (!daemon_harness_wait_notify(h, "READY=1", 10000))
                fail_msg("no READY=1; stderr:\n%s", daemon_harness_log(h));
}
