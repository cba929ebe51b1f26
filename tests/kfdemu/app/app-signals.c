/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
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
 * rest are otherwise ignored so a test can send them freely. */
static const int handled_signals[] = {SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGCONT, SIGWINCH};

static size_t format_decimal(char *buf, int value)
{
        char tmp[16];
        size_t n = 0, len = 0;

        do {
                tmp[n++] = (char)('0' + value % 10);
                value /= 10;
        } while (value > 0 && n < sizeof(tmp));
        while (n > 0)
                buf[len++] = tmp[--n];
        return len;
}

static void on_signal(int sig)
{
        int saved_errno = errno;

        if (signal_log_fd >= 0) {
                char line[20];
                size_t n = format_decimal(line, sig);

                line[n++] = '\n';
                /* One write per line with O_APPEND: lines never interleave. */
                if (write(signal_log_fd, line, n) < 0) {
                        /* Nothing a handler can do about a full disk. */
                }
        }
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
        struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};

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
