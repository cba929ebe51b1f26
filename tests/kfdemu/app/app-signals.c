/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app-signals.h"
#include "cleanup.h"

/* Signal handlers can only reach process-wide state; this program's, not a
 * library's. */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t report_requested;
static int signal_log_fd = -1;
static int wake_pipe[2] = {-1, -1};

/* Signals that are logged; SIGTERM/SIGINT also stop, SIGUSR1 reports, the
 * rest (and SIGRTMIN, not a constant) are otherwise ignored so a test can
 * send them freely. */
static const int handled_signals[] = {SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGCONT, SIGWINCH};

/* printf is not async-signal-safe. */
static size_t format_decimal(char *buf, long value)
{
        unsigned long magnitude = value < 0 ? -(unsigned long)value : (unsigned long)value;
        char tmp[24];
        size_t n = 0, len = 0;

        do {
                tmp[n++] = (char)('0' + magnitude % 10);
                magnitude /= 10;
        } while (magnitude > 0);
        if (value < 0)
                buf[len++] = '-';
        while (n > 0)
                buf[len++] = tmp[--n];
        return len;
}

static size_t format_field(char *buf, const char *name, long value)
{
        size_t len = strlen(name);

        memcpy(buf, name, len);
        return len + format_decimal(buf + len, value);
}

/*
 * The signal's number, then what sets it apart from a kill(2) the main
 * thread took: " code=C" unless si_code is SI_USER, " value=V" for a
 * sigqueue(3) (SI_QUEUE), " tid=T" when another thread took it. A test can
 * tell from it that a tracer passed the signal on as it was sent.
 */
static void log_signal(const siginfo_t *info)
{
        pid_t tid = (pid_t)syscall(SYS_gettid);
        char line[96];
        size_t n = format_decimal(line, info->si_signo);

        if (info->si_code != SI_USER)
                n += format_field(line + n, " code=", info->si_code);
        if (info->si_code == SI_QUEUE)
                n += format_field(line + n, " value=", info->si_value.sival_int);
        if (tid != getpid())
                n += format_field(line + n, " tid=", tid);
        line[n++] = '\n';
        /* One write per line with O_APPEND: lines never interleave. */
        if (write(signal_log_fd, line, n) < 0) {
                /* Nothing a handler can do about a full disk. */
        }
}

static void on_signal(int sig, siginfo_t *info, void *context)
{
        int saved_errno = errno;

        (void)context;
        if (signal_log_fd >= 0)
                log_signal(info);
        if (sig == SIGTERM || sig == SIGINT)
                stop_requested = 1;
        else if (sig == SIGUSR1)
                report_requested = 1;
        app_signals_wake();
        errno = saved_errno;
}

void app_signals_wake(void)
{
        if (wake_pipe[1] >= 0 && write(wake_pipe[1], "", 1) < 0) {
                /* A full pipe already means "wake up". */
        }
}

void app_signals_drain(void)
{
        char buf[64];

        while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
                ;
}

int app_signals_install(const char *signal_log, int *ret_wake_fd)
{
        struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_RESTART | SA_SIGINFO};

        if (signal_log) {
                signal_log_fd = open(signal_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (signal_log_fd < 0)
                        return NEG_ERRNO();
        }
        if (pipe2(wake_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
                return NEG_ERRNO();
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(handled_signals); i++)
                if (sigaction(handled_signals[i], &sa, NULL) < 0)
                        return NEG_ERRNO();
        if (sigaction(SIGRTMIN, &sa, NULL) < 0)
                return NEG_ERRNO();
        /* A report to a closed pipe must fail with EPIPE, not kill the job. */
        signal(SIGPIPE, SIG_IGN);
        *ret_wake_fd = wake_pipe[0];
        return 0;
}

bool app_signals_stop_requested(void)
{
        return stop_requested != 0;
}

struct app_signal_events app_signals_take(void)
{
        struct app_signal_events ev = {.stop = stop_requested != 0, .report = report_requested != 0};

        report_requested = 0;
        return ev;
}
