/* SPDX-License-Identifier: MIT */
#include "conf-helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

static const char *app_path;
static int program_kfd = -1;

void conf_init(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: %s CONF-GPU-APP\n", argv[0]);
                exit(2);
        }
        app_path = argv[1];
        /* A target whose stdin we still hold must not kill us by exiting
         * while we write a command to it. */
        signal(SIGPIPE, SIG_IGN);
}

const char *conf_app_path(void)
{
        return app_path;
}

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void conf_sleep_ms(int ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* ---- raw ioctls -------------------------------------------------------- */

long conf_ioctl(int fd, unsigned long request, void *arg)
{
        long r = ioctl(fd, request, arg);
        return r < 0 ? -errno : r;
}

int conf_open_kfd(void)
{
        int fd = open(CONF_DEV_KFD, O_RDWR | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

long conf_acquire_vms(int kfd)
{
        uint32_t gpus[CONF_MAX_GPUS];
        int n = conf_gpu_ids(gpus, CONF_MAX_GPUS);

        for (int i = 0; i < n; i++) {
                long long minor = conf_gpu_property(gpus[i], "drm_render_minor");
                char path[64];

                if (minor < 0)
                        return minor;
                snprintf(path, sizeof(path), "/dev/dri/renderD%lld", minor);
                /* The device keeps the file once it has its VM. */
                _cleanup_close_ int drm = open(path, O_RDWR | O_CLOEXEC);
                if (drm < 0)
                        return -errno;
                struct kfd_ioctl_acquire_vm_args args = { .drm_fd = (uint32_t)drm, .gpu_id = gpus[i] };
                long r = conf_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &args);
                if (r < 0)
                        return r;
        }
        return 0;
}

int conf_kfd(void)
{
        if (program_kfd < 0)
                program_kfd = conf_open_kfd();
        return program_kfd;
}

long conf_dbg_trap(int kfd, pid_t pid, uint32_t op, struct kfd_ioctl_dbg_trap_args *args)
{
        args->pid = (uint32_t)pid;
        args->op = op;
        return conf_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, args);
}

long conf_dbg_enable(int kfd, pid_t pid, uint64_t mask, int dbg_fd, struct kfd_runtime_info *ret_rinfo)
{
        struct kfd_runtime_info rinfo = { .runtime_state = 0xdead };
        struct kfd_ioctl_dbg_trap_args a = {
                .enable = {
                        .exception_mask = mask,
                        .rinfo_ptr = (uintptr_t)&rinfo,
                        .rinfo_size = sizeof(rinfo),
                        .dbg_fd = (uint32_t)dbg_fd,
                },
        };
        long r = conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_ENABLE, &a);
        if (r >= 0 && ret_rinfo)
                *ret_rinfo = rinfo;
        return r;
}

long conf_dbg_disable(int kfd, pid_t pid)
{
        struct kfd_ioctl_dbg_trap_args a = { 0 };
        return conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_DISABLE, &a);
}

long conf_dbg_suspend(int kfd, pid_t pid, uint32_t *ids, uint32_t n, uint64_t clear_mask)
{
        struct kfd_ioctl_dbg_trap_args a = {
                .suspend_queues = {
                        .exception_mask = clear_mask,
                        .queue_array_ptr = (uintptr_t)ids,
                        .num_queues = n,
                        .grace_period = 0,
                },
        };
        return conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &a);
}

long conf_dbg_resume(int kfd, pid_t pid, uint32_t *ids, uint32_t n)
{
        struct kfd_ioctl_dbg_trap_args a = {
                .resume_queues = { .queue_array_ptr = (uintptr_t)ids, .num_queues = n },
        };
        return conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &a);
}

long conf_dbg_queue_snapshot(int kfd, pid_t pid, uint64_t clear_mask, void *buf, uint32_t *inout_num,
                             uint32_t *inout_entry_size)
{
        struct kfd_ioctl_dbg_trap_args a = {
                .queue_snapshot = {
                        .exception_mask = clear_mask,
                        .snapshot_buf_ptr = (uintptr_t)buf,
                        .num_queues = *inout_num,
                        .entry_size = *inout_entry_size,
                },
        };
        long r = conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &a);
        if (r >= 0) {
                *inout_num = a.queue_snapshot.num_queues;
                *inout_entry_size = a.queue_snapshot.entry_size;
        }
        return r;
}

long conf_dbg_clear_new(int kfd, pid_t pid)
{
        struct kfd_queue_snapshot_entry entries[64];
        uint32_t num = ELEMENTSOF(entries), entry_size = sizeof(entries[0]);
        return conf_dbg_queue_snapshot(kfd, pid, KFD_EC_MASK(EC_QUEUE_NEW), entries, &num, &entry_size);
}

long conf_dbg_query_event(int kfd, pid_t pid, uint64_t clear_mask, uint64_t *ret_mask, uint32_t *ret_gpu_id,
                          uint32_t *ret_queue_id)
{
        struct kfd_ioctl_dbg_trap_args a = { .query_debug_event = { .exception_mask = clear_mask } };
        long r = conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &a);
        if (r >= 0) {
                if (ret_mask)
                        *ret_mask = a.query_debug_event.exception_mask;
                if (ret_gpu_id)
                        *ret_gpu_id = a.query_debug_event.gpu_id;
                if (ret_queue_id)
                        *ret_queue_id = a.query_debug_event.queue_id;
        }
        return r;
}

long conf_dbg_send_runtime_event(int kfd, pid_t pid, uint64_t mask, uint32_t gpu_id, uint32_t queue_id)
{
        struct kfd_ioctl_dbg_trap_args a = {
                .send_runtime_event = { .exception_mask = mask, .gpu_id = gpu_id, .queue_id = queue_id },
        };
        return conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &a);
}

long conf_dbg_set_exceptions_enabled(int kfd, pid_t pid, uint64_t mask)
{
        struct kfd_ioctl_dbg_trap_args a = { .set_exceptions_enabled = { .exception_mask = mask } };
        return conf_dbg_trap(kfd, pid, KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED, &a);
}

/* ---- the event channel ---------------------------------------------------- */

/* A private directory for the FIFO: named by pid and a counter, created
 * with mkdir so an existing name is never reused. */
static int private_dir(char *dir, size_t size)
{
        static unsigned counter;
        for (int attempt = 0; attempt < 100; attempt++) {
                snprintf(dir, size, "/tmp/kfd-conf-%d-%u", (int)getpid(), counter++);
                if (mkdir(dir, 0700) == 0)
                        return 0;
                if (errno != EEXIST)
                        return NEG_ERRNO();
        }
        return -EEXIST;
}

int conf_event_fifo(void)
{
        char dir[64], path[96];
        int r = private_dir(dir, sizeof(dir));
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/events", dir);
        r = mkfifo(path, 0600) < 0 ? NEG_ERRNO() : 0;
        /* One file that is both reader and writer: the kernel's write never
         * blocks the raiser and never raises SIGPIPE (kfd-interface.md §5). */
        int fd = r < 0 ? r : open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && r == 0)
                r = NEG_ERRNO();
        unlink(path);
        rmdir(dir);
        return r < 0 ? r : fd;
}

int conf_event_wait(int fifo, int timeout_ms)
{
        struct pollfd p = { .fd = fifo, .events = POLLIN };
        if (poll(&p, 1, timeout_ms) < 0)
                return NEG_ERRNO();
        int dots = 0;
        char buf[256];
        ssize_t n;
        while ((n = read(fifo, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < n; i++)
                        dots += buf[i] == '.';
        return dots;
}

/* ---- ptrace ----------------------------------------------------------------- */

int conf_seize(pid_t pid)
{
        return ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0 ? NEG_ERRNO() : 0;
}

static bool is_stop_signal(int sig)
{
        return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void conf_service_stops(pid_t pid)
{
        for (;;) {
                siginfo_t si = { 0 };
                /* WSTOPPED without WEXITED: stops are taken, an exit stays
                 * for the test to observe (zombie checks). */
                if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | __WALL) < 0 || si.si_pid == 0)
                        return;
                int sig = si.si_status & 0xff;
                int event = si.si_status >> 8;
                if (event == PTRACE_EVENT_STOP)
                        ptrace(is_stop_signal(sig) ? PTRACE_LISTEN : PTRACE_CONT, pid, NULL, NULL);
                else
                        ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)sig);
        }
}

int conf_detach(pid_t pid)
{
        if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0)
                return NEG_ERRNO();
        for (;;) {
                siginfo_t si = { 0 };
                if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | __WALL) < 0)
                        return NEG_ERRNO();
                if ((si.si_status >> 8) == PTRACE_EVENT_STOP)
                        break;
                /* A signal got there first: deliver it and wait for our stop. */
                ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)(si.si_status & 0xff));
        }
        return ptrace(PTRACE_DETACH, pid, NULL, NULL) < 0 ? NEG_ERRNO() : 0;
}

/* ---- the helper application ---------------------------------------------- */

int conf_target_spawn(struct conf_target *t)
{
        int in[2], out[2];
        *t = (struct conf_target){ .pid = -1, .cmd_fd = -1, .out_fd = -1 };
        if (pipe2(in, O_CLOEXEC) < 0)
                return NEG_ERRNO();
        if (pipe2(out, O_CLOEXEC) < 0) {
                int r = NEG_ERRNO();
                close(in[0]);
                close(in[1]);
                return r;
        }
        pid_t pid = fork();
        if (pid < 0) {
                int r = NEG_ERRNO();
                close(in[0]), close(in[1]), close(out[0]), close(out[1]);
                return r;
        }
        if (pid == 0) {
                dup2(in[0], STDIN_FILENO);
                dup2(out[1], STDOUT_FILENO);
                execl(app_path, app_path, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        t->pid = pid;
        t->cmd_fd = in[1];
        t->out_fd = out[0];
        char line[128];
        int r = conf_target_reply(t, line, sizeof(line), CONF_REPLY_TIMEOUT_MS);
        if (r < 0 || strncmp(line, "READY", 5) != 0) {
                conf_target_kill(t);
                return r < 0 ? r : -EPROTO;
        }
        return 0;
}

/* The thread ids of `pid`; returns how many (at most `max`). */
static int list_threads(pid_t pid, pid_t *tids, int max)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *dir = opendir(path);
        int n = 0;
        if (!dir)
                return 0;
        for (struct dirent *de; n < max && (de = readdir(dir));)
                if (de->d_name[0] != '.')
                        tids[n++] = (pid_t)strtol(de->d_name, NULL, 10);
        closedir(dir);
        return n;
}

void conf_target_kill(struct conf_target *t)
{
        if (t->pid > 0 && !t->reaped) {
                pid_t tids[64];
                int n = list_threads(t->pid, tids, 64);
                kill(t->pid, SIGKILL);
                /* A thread this process traces (a test that failed before it
                 * could detach) reports its exit to us, and the leader is
                 * not reaped before it is: reap those first. Threads we do
                 * not trace give ECHILD at once. */
                for (int i = 0; i < n; i++)
                        while (tids[i] != t->pid && waitpid(tids[i], NULL, __WALL) < 0 && errno == EINTR)
                                ;
                while (waitpid(t->pid, NULL, __WALL) < 0 && errno == EINTR)
                        ;
                t->reaped = true;
        }
        closep(&t->cmd_fd);
        closep(&t->out_fd);
        t->cmd_fd = t->out_fd = -1;
}

int conf_target_send(struct conf_target *t, const char *fmt, ...)
{
        char line[256];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof(line) - 1)
                return -EINVAL;
        line[n++] = '\n';
        return write(t->cmd_fd, line, (size_t)n) == n ? 0 : -EPIPE;
}

int conf_target_reply(struct conf_target *t, char *line, size_t size, int timeout_ms)
{
        uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
        for (;;) {
                char *nl = memchr(t->buf, '\n', t->len);
                if (nl) {
                        size_t n = (size_t)(nl - t->buf);
                        snprintf(line, size, "%.*s", (int)n, t->buf);
                        memmove(t->buf, nl + 1, t->len - n - 1);
                        t->len -= n + 1;
                        return 0;
                }
                uint64_t now = now_ms();
                if (now >= deadline)
                        return -ETIMEDOUT;
                if (t->traced)
                        conf_service_stops(t->pid);
                /* Short slices so a traced target's stops are serviced promptly. */
                struct pollfd p = { .fd = t->out_fd, .events = POLLIN };
                int left = (int)(deadline - now);
                int r = poll(&p, 1, t->traced && left > 10 ? 10 : left);
                if (r < 0 && errno != EINTR)
                        return NEG_ERRNO();
                if (r <= 0)
                        continue;
                if (t->len == sizeof(t->buf))
                        return -EPROTO;
                ssize_t got = read(t->out_fd, t->buf + t->len, sizeof(t->buf) - t->len);
                if (got == 0)
                        return -EPIPE;
                if (got < 0 && errno != EINTR)
                        return NEG_ERRNO();
                if (got > 0)
                        t->len += (size_t)got;
        }
}

long conf_parse_result(const char *line)
{
        long v = 0;
        if (strncmp(line, "ok", 2) == 0)
                return sscanf(line + 2, "%ld", &v) == 1 ? v : 0;
        if (sscanf(line, "err %ld", &v) == 1 && v < 0)
                return v;
        return -EPROTO;
}

long conf_target_call(struct conf_target *t, const char *fmt, ...)
{
        char cmd[256], line[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        int r = conf_target_send(t, "%s", cmd);
        if (r < 0)
                return r;
        r = conf_target_reply(t, line, sizeof(line), CONF_REPLY_TIMEOUT_MS);
        return r < 0 ? r : conf_parse_result(line);
}

/* The target's command thread sleeps in the kfd call: in ioctl on a real
 * node, in the ppoll kfdemu's preload waits in for the server's reply.
 * Idle between commands it reads stdin instead. */
static bool sleeps_in_kfd_call(pid_t pid)
{
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
        if (conf_read_file(path, buf, sizeof(buf)) <= 0)
                return false;
        long nr = strtol(buf, NULL, 10);
        return nr == SYS_ioctl || nr == SYS_ppoll;
}

bool conf_target_still_blocked(struct conf_target *t)
{
        /* On a loaded machine "no reply yet" alone may only mean slow: the
         * target must be seen asleep in the call, and stay so (without a
         * reply) for the whole window. */
        char line[256];
        uint64_t deadline = now_ms() + CONF_REPLY_TIMEOUT_MS;
        while (!sleeps_in_kfd_call(t->pid)) {
                if (conf_target_reply(t, line, sizeof(line), 10) != -ETIMEDOUT || now_ms() >= deadline)
                        return false;
        }
        return conf_target_reply(t, line, sizeof(line), CONF_BLOCKED_MS) == -ETIMEDOUT &&
               sleeps_in_kfd_call(t->pid);
}

int conf_target_create_queue(struct conf_target *t, uint32_t gpu_id, struct conf_queue *ret)
{
        return conf_target_create_queue_type(t, gpu_id, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, ret);
}

int conf_target_create_queue_type(struct conf_target *t, uint32_t gpu_id, uint32_t queue_type, struct conf_queue *ret)
{
        char line[512];
        int r = conf_target_send(t, "create %u %u", gpu_id, queue_type);
        if (r < 0)
                return r;
        r = conf_target_reply(t, line, sizeof(line), CONF_REPLY_TIMEOUT_MS);
        if (r < 0)
                return r;
        struct conf_queue q = { .gpu_id = gpu_id, .type = queue_type };
        if (sscanf(line, "queue %u %lx %lx %lx %lx %u %u", &q.id, &q.ring, &q.wptr, &q.rptr, &q.ctx_save,
                   &q.ring_size, &q.ctx_save_size) != 7)
                return (int)conf_parse_result(line);
        *ret = q;
        return 0;
}

/* A spawned target that opened /dev/kfd and, if asked, enabled its runtime. */
static int conf_target_spawn_ready(struct conf_target *t, bool runtime_enable)
{
        int r = conf_target_spawn(t);
        if (r < 0)
                return r;
        long rr = conf_target_call(t, "open");
        if (rr >= 0 && runtime_enable)
                rr = conf_target_call(t, "runtime-enable");
        if (rr < 0) {
                conf_target_kill(t);
                return (int)rr;
        }
        return 0;
}

long conf_target_submit(struct conf_target *t, uint32_t qid, uint64_t ns, unsigned count)
{
        return conf_target_call(t, "submit %u %lu %u", qid, (unsigned long)ns, count);
}

/* ---- memory of another process ------------------------------------------- */

int conf_read_u64(pid_t pid, uint64_t addr, uint64_t *ret)
{
        uint64_t v;
        struct iovec local = { .iov_base = &v, .iov_len = sizeof(v) };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof(v) };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0)
                return NEG_ERRNO();
        if (n != sizeof(v))
                return -EFAULT;
        *ret = v;
        return 0;
}

int conf_wait_u64_at_least(struct conf_target *t, uint64_t addr, uint64_t value, int timeout_ms)
{
        uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
        for (;;) {
                uint64_t v;
                int r = conf_read_u64(t->pid, addr, &v);
                if (r < 0)
                        return r;
                if (v >= value)
                        return 0;
                if (now_ms() >= deadline)
                        return -ETIMEDOUT;
                if (t->traced)
                        conf_service_stops(t->pid);
                conf_sleep_ms(1);
        }
}

bool conf_u64_stays(struct conf_target *t, uint64_t addr, int ms)
{
        uint64_t first, v;
        if (conf_read_u64(t->pid, addr, &first) < 0)
                return false;
        uint64_t deadline = now_ms() + (uint64_t)ms;
        while (now_ms() < deadline) {
                if (conf_read_u64(t->pid, addr, &v) < 0 || v != first)
                        return false;
                if (t->traced)
                        conf_service_stops(t->pid);
                conf_sleep_ms(2);
        }
        return true;
}

/* ---- sysfs ------------------------------------------------------------------ */

ssize_t conf_read_file(const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();
        size_t len = 0;
        for (;;) {
                if (len + 1 >= size)
                        return -EFBIG;
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0)
                        return NEG_ERRNO();
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

bool conf_path_exists(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0;
}

long long conf_gpu_topology_value(uint32_t gpu_id, const char *file, const char *key)
{
        for (int node = 0;; node++) {
                char path[192], buf[8192];
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/gpu_id", node);
                if (conf_read_file(path, buf, sizeof(buf)) < 0)
                        return -ENOENT;
                if (strtoul(buf, NULL, 10) != gpu_id)
                        continue;
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/%s", node, file);
                if (conf_read_file(path, buf, sizeof(buf)) < 0)
                        return -ENOENT;
                /* "name value" lines: match whole names only. */
                size_t n = strlen(key);
                for (const char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                        if (strncmp(line, key, n) == 0 && line[n] == ' ')
                                return strtoll(line + n + 1, NULL, 10);
                return -ENOENT;
        }
}

long long conf_gpu_property(uint32_t gpu_id, const char *key)
{
        return conf_gpu_topology_value(gpu_id, "properties", key);
}

int conf_wait_kfd_process_gone(pid_t pid)
{
        char path[128];
        snprintf(path, sizeof(path), CONF_SYSFS_KFD "/proc/%d", (int)pid);
        for (int waited = 0; conf_path_exists(path); waited += 10) {
                if (waited >= CONF_REPLY_TIMEOUT_MS)
                        return -ETIMEDOUT;
                conf_sleep_ms(10);
        }
        return 0;
}

int conf_gpu_ids(uint32_t *ids, int max)
{
        /* Nodes are numbered 0..N-1; CPU nodes report gpu_id 0 (§8.2). */
        int n = 0;
        for (int node = 0; n < max; node++) {
                char path[128], buf[64];
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/gpu_id", node);
                if (conf_read_file(path, buf, sizeof(buf)) < 0)
                        break;
                unsigned long id = strtoul(buf, NULL, 10);
                if (id != 0)
                        ids[n++] = (uint32_t)id;
        }
        return n;
}

pid_t conf_unused_pid(void)
{
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        if (pid > 0)
                waitpid(pid, NULL, 0);
        return pid;
}

/* ---- fixtures ----------------------------------------------------------------- */

void conf_session_init(struct conf_session *s)
{
        *s = (struct conf_session){
                .fifo = -1,
                .target = { .pid = -1, .cmd_fd = -1, .out_fd = -1 },
        };
}

int conf_session_spawn(struct conf_session *s, bool runtime_enable)
{
        conf_session_init(s);
        s->n_gpus = conf_gpu_ids(s->gpu_ids, CONF_MAX_GPUS);
        if (s->n_gpus <= 0)
                return -ENODEV;
        return conf_target_spawn_ready(&s->target, runtime_enable);
}

int conf_session_attach(struct conf_session *s, uint64_t mask)
{
        int r = s->target.traced ? 0 : conf_seize(s->target.pid);
        if (r < 0)
                return r;
        s->target.traced = true;
        if (s->fifo < 0)
                s->fifo = conf_event_fifo();
        if (s->fifo < 0)
                return s->fifo;
        long e = conf_dbg_enable(conf_kfd(), s->target.pid, mask, s->fifo, &s->rinfo);
        if (e < 0)
                return (int)e;
        s->enabled = true;
        return 0;
}

void conf_session_end(struct conf_session *s)
{
        if (s->enabled)
                conf_dbg_disable(conf_kfd(), s->target.pid);
        s->enabled = false;
        conf_target_kill(&s->target);
        closep(&s->fifo);
        s->fifo = -1;
}

int conf_fixture_empty(void **state)
{
        struct conf_session *s = malloc(sizeof(*s));
        if (!s)
                return -1;
        conf_session_init(s);
        *state = s;
        return 0;
}

int conf_fixture_spawned(void **state)
{
        if (conf_fixture_empty(state) < 0)
                return -1;
        struct conf_session *s = *state;
        int r = conf_session_spawn(s, true);
        if (r < 0)
                fprintf(stderr, "# fixture: cannot start the target application: %s\n", strerror(-r));
        return r < 0 ? -1 : 0;
}

int conf_fixture_attached(void **state)
{
        if (conf_fixture_spawned(state) < 0)
                return -1;
        struct conf_session *s = *state;
        int r = conf_session_attach(s, CONF_SUBSCRIPTION);
        if (r < 0)
                fprintf(stderr, "# fixture: cannot debug-enable the target: %s\n", strerror(-r));
        return r < 0 ? -1 : 0;
}

int conf_fixture_end(void **state)
{
        struct conf_session *s = *state;
        if (s) {
                conf_session_end(s);
                free(s);
        }
        *state = NULL;
        return 0;
}
