/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd: suspends offline processes' GPU queues while online processes
 * have GPU work. See gpreemptd(8).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "api.h"
#include "cleanup.h"
#include "config.h"
#include "log.h"
#include "manager.h"
#include "paths.h"
#include "printable.h"
#include "standard-fds.h"
#include "varlink-server.h"

#define STATUS_INTERVAL_US (5u * 1000000u)
#define LOCK_FILE_NAME "gpreemptd.lock"

struct options {
        struct paths paths;
        bool check_config;
        bool json;
};

static void help(void)
{
        printf("Usage: gpreemptd [OPTIONS]\n"
               "\n"
               "Gives online GPU work the GPU: suspends offline processes' queues on a GPU\n"
               "while an online process there has work, resumes them when it is idle.\n"
               "\n"
               "  -h, --help              show this help\n"
               "      --version           show the version\n"
               "  -c, --config-dir=DIR    configuration directory (default /etc/gpreempt)\n"
               "  -r, --runtime-dir=DIR   where the control socket goes (default RuntimeDirectory=)\n"
               "      --check-config      check the configuration, print its problems and exit\n"
               "      --json              with --check-config: print the result as JSON\n"
               "\n"
               "Environment: GPREEMPT_CONFIG_DIR, GPREEMPT_RUNTIME_DIR, GPREEMPT_PROC_ROOT,\n"
               "GPREEMPT_SYSFS_ROOT, GPREEMPT_KFD_DEVICE, GPREEMPT_GROUP. See gpreemptd(8).\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
        enum { OPT_VERSION = 256, OPT_CHECK, OPT_JSON };
        static const struct option longopts[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                { "config-dir", required_argument, NULL, 'c' },
                { "runtime-dir", required_argument, NULL, 'r' },
                { "check-config", no_argument, NULL, OPT_CHECK },
                { "json", no_argument, NULL, OPT_JSON },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "hc:r:", longopts, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case OPT_VERSION:
                        printf("gpreemptd %s\n", GPREEMPT_VERSION);
                        return 0;
                case 'c':
                        /* an empty directory would put the configuration at /gpreemptd.conf */
                        if (!*optarg) {
                                fprintf(stderr, "gpreemptd: --config-dir needs a directory; see --help.\n");
                                return -EINVAL;
                        }
                        free(o->paths.config_dir);
                        o->paths.config_dir = strdup(optarg);
                        break;
                case 'r':
                        /* a relative one would follow whatever directory the daemon was started in */
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpreemptd: --runtime-dir=%s: expected an absolute path, "
                                        "such as /run/gpreempt.\n", optarg);
                                return -EINVAL;
                        }
                        free(o->paths.runtime_dir);
                        o->paths.runtime_dir = strdup(optarg);
                        break;
                case OPT_CHECK:
                        o->check_config = true;
                        break;
                case OPT_JSON:
                        o->json = true;
                        break;
                default:
                        fprintf(stderr, "gpreemptd: see --help for the options.\n");
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "gpreemptd: unexpected argument \"%s\"; see --help.\n", argv[optind]);
                return -EINVAL;
        }
        /* the daemon itself logs text for the journal: --json without --check-config would be ignored */
        if (o->json && !o->check_config) {
                fprintf(stderr, "gpreemptd: --json goes with --check-config; the daemon logs as text.\n");
                return -EINVAL;
        }
        return 1;
}

/* Prints s made printable: a configuration file, and the name of its directory, may hold any bytes. */
static void print_printable(FILE *out, const char *before, const char *s, const char *after)
{
        _cleanup_free_ char *p = printable_dup(s);

        fprintf(out, "%s%s%s", before, p ? p : "", after);
}

static void print_problems(const char *config_dir, const struct diag *d, bool json)
{
        if (json) {
                struct json_object *o = json_object_new_object(), *a = json_object_new_array();

                for (size_t i = 0; i < d->n_messages; i++)
                        json_object_array_add(a, json_object_new_string(d->messages[i]));
                json_object_object_add(o, "config_dir", json_object_new_string(config_dir));
                json_object_object_add(o, "valid", json_object_new_boolean(diag_count(d) == 0));
                json_object_object_add(o, "errors", a);
                json_object_object_add(o, "more_errors", json_object_new_int64((int64_t)d->n_dropped));
                /* JSON must be UTF-8 (RFC 8259 §8.1); json-c escapes the control characters itself */
                printable_json(o, false);
                puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
                json_object_put(o);
                return;
        }
        for (size_t i = 0; i < d->n_messages; i++)
                print_printable(stderr, "", d->messages[i], "\n");
        if (d->n_dropped)
                fprintf(stderr, "... and %zu more problems\n", d->n_dropped);
}

static void notify_status(struct manager *m)
{
        size_t online = 0, offline = 0, suspended = 0;

        if (!manager_kfd_present(m)) {
                sd_notify(false, "STATUS=No KFD on this node (amdgpu not loaded, or no AMD GPU): nothing to manage");
                return;
        }
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->managed && m->processes[i]->class == WORKLOAD_CLASS_ONLINE)
                        online++;
                else if (m->processes[i]->managed)
                        offline++;
        for (size_t i = 0; i < m->n_gpus; i++)
                suspended += m->gpus[i].policy.suspended;
        sd_notifyf(false, "STATUS=%zu online and %zu offline processes, offline work suspended on %zu of %zu GPUs",
                   online, offline, suspended, m->n_gpus);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        notify_status(userdata);
        sd_event_source_set_time(s, usec + STATUS_INTERVAL_US);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct manager *m = userdata;
        struct diag d = { 0 };

        sd_notify(false, "RELOADING=1");
        manager_reload(m, &d);
        diag_clear(&d);
        sd_notify(false, "READY=1");
        notify_status(m);
        return 0;
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        sd_notify(false, "STOPPING=1\nSTATUS=Resuming every suspended queue and detaching");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/*
 * SIGUSR1 and SIGUSR2 mean nothing here, and their default action would end
 * the daemon as abruptly as SIGKILL: the kernel would resume the queues,
 * but the holds of `gpreemptctl suspend` would be lost and the control
 * socket left behind. One sent by mistake is logged with its sender.
 */
static int on_user_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        log_warning("Ignoring %s from PID %u (UID %u): gpreemptd gives it no meaning",
                    si->ssi_signo == SIGUSR1 ? "SIGUSR1" : "SIGUSR2", si->ssi_pid, si->ssi_uid);
        return 0;
}

/* The control socket this daemon bound itself, and the lock that makes it the only one there. */
struct control_socket {
        char *path; /* NULL when systemd passed the socket: it stays for the next activation */
        struct stat st; /* the socket bound: another put there since is not this daemon's to remove */
        int lock_fd;
};

static int refuse_second_daemon(const char *socket_path)
{
        log_error("Another gpreemptd serves %s, or gpreemptd.socket listens there: stop it first "
                  "(systemctl stop gpreemptd.socket gpreemptd, or the one started by hand), "
                  "or give this one another --runtime-dir",
                  socket_path);
        return -EADDRINUSE;
}

static int refuse_activation_beside_another(const char *runtime_dir)
{
        /* each refusal is a failed start: systemd's start limit may give the service and its socket up */
        log_error("Another gpreemptd runs with the runtime directory %s (one started by hand?): stop it, then "
                  "systemctl reset-failed gpreemptd.socket gpreemptd; systemctl start gpreemptd.socket",
                  runtime_dir);
        return -EADDRINUSE;
}

/*
 * Two daemons on one runtime directory would each take the socket from the
 * other, and both manage the node's processes. The lock, held for the
 * daemon's life and released by the kernel however it ends (SIGKILL too),
 * lets only one run; connect() alone would miss a daemon that has not
 * bound its socket yet. A daemon systemd activates takes it too: systemd
 * puts its socket in place of one a daemon started by hand serves. Returns
 * 0, or -EWOULDBLOCK (said by the caller) and another -errno (said here).
 */
static int lock_runtime_dir(const char *runtime_dir, int *ret_fd)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;

        if (asprintf(&path, "%s/" LOCK_FILE_NAME, runtime_dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(-errno, "Cannot open the lock file %s", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EWOULDBLOCK : log_error_errno(-errno, "Cannot lock %s", path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static const char *file_kind(const char *path)
{
        struct stat st;

        if (lstat(path, &st) < 0)
                return "something other than a socket";
        if (S_ISREG(st.st_mode))
                return "a regular file";
        if (S_ISDIR(st.st_mode))
                return "a directory";
        if (S_ISLNK(st.st_mode))
                return "a symbolic link";
        return "a device or FIFO";
}

/* The directory of the socket systemd passed (fd), where the lock goes; NULL if it has no path. */
static char *passed_socket_dir(int fd)
{
        struct sockaddr_un sa = { 0 };
        socklen_t len = sizeof(sa);
        char path[sizeof(sa.sun_path) + 1] = { 0 }; /* sun_path need not end in a NUL */
        const char *slash;
        size_t path_len;

        if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX ||
            len <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] != '/')
                return NULL;
        /* len may exceed the buffer: the kernel says how long the address was, not how much it wrote */
        path_len = (size_t)len - offsetof(struct sockaddr_un, sun_path);
        memcpy(path, sa.sun_path, path_len < sizeof(sa.sun_path) ? path_len : sizeof(sa.sun_path));
        slash = strrchr(path, '/');
        return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/*
 * The sockets systemd passed, under the lock of the first one's directory
 * (a RuntimeDirectory= elsewhere may not even be writable in the unit's
 * sandbox), else of the runtime directory.
 */
static int serve_passed_sockets(struct varlink_server *server, int n, const char *runtime_dir,
                                struct control_socket *control)
{
        _cleanup_free_ char *dir = passed_socket_dir(SD_LISTEN_FDS_START);
        int r = lock_runtime_dir(dir ? dir : runtime_dir, &control->lock_fd);

        if (r == -EWOULDBLOCK)
                return refuse_activation_beside_another(dir ? dir : runtime_dir);
        if (r < 0)
                return r;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
                r = varlink_server_listen_fd(server, fd);
                if (r < 0)
                        return log_error_errno(r, "Cannot serve the socket systemd passed");
        }
        return 0;
}

/* Socket activation when systemd passes the socket, else a socket of our own. */
static int listen_control_socket(struct varlink_server *server, const char *runtime_dir,
                                 struct control_socket *control)
{
        _cleanup_free_ char *path = NULL;
        int n = sd_listen_fds(true), r;

        if (n > 0)
                return serve_passed_sockets(server, n, runtime_dir, control);
        if (mkdir(runtime_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Cannot create the runtime directory %s", runtime_dir);
        if (asprintf(&path, "%s/" API_SOCKET_NAME, runtime_dir) < 0)
                return -ENOMEM;
        r = lock_runtime_dir(runtime_dir, &control->lock_fd);
        if (r == -EWOULDBLOCK)
                return refuse_second_daemon(path);
        if (r < 0)
                return r;
        r = varlink_server_listen_path(server, path, &control->st);
        if (r == -EADDRINUSE)
                return refuse_second_daemon(path);
        if (r == -ENOTSOCK) {
                log_error("%s is %s, not a control socket: refusing to delete it. Move it away, "
                          "or give gpreemptd another --runtime-dir", path, file_kind(path));
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s", path);
        control->path = TAKE_PTR(path);
        return 0;
}

/* Removes the socket if it is still the one this daemon bound, then lets the next daemon in. */
static void control_socket_done(struct control_socket *control)
{
        struct stat st;

        if (control->path && lstat(control->path, &st) == 0 && st.st_dev == control->st.st_dev &&
            st.st_ino == control->st.st_ino)
                (void)unlink(control->path);
        free(control->path);
        if (control->lock_fd >= 0)
                close(control->lock_fd);
        *control = (struct control_socket){ .lock_fd = -1 };
}

/*
 * Each write breakpoint takes three fds per thread of the online process
 * (write-watch.c's two, and the preemption worker's duplicate of the
 * breakpoint's); 1024, the usual soft limit, is soon reached at scale.
 * Nothing here uses select(), so the soft limit can go up to the hard one.
 * (Under the shipped unit, LimitNOFILE= has done it and @resources is
 * filtered: the call fails harmlessly.)
 */
static void raise_open_file_limit(void)
{
        struct rlimit limit;

        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
                limit.rlim_cur = limit.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &limit);
        }
}

static int run(struct options *o)
{
        static const struct varlink_service_info info = {
                .vendor = "gpreempt", .product = "gpreemptd", .version = GPREEMPT_VERSION,
                .url = "https://github.com/gpreempt/gpreempt",
        };
        struct manager *m = NULL;
        struct varlink_server *server = NULL;
        struct config *config = NULL;
        sd_event *event = NULL;
        struct diag d = { 0 };
        _cleanup_free_ char *runtime_dir = NULL;
        struct control_socket control = { .lock_fd = -1 };
        sigset_t mask;
        int r;

        r = config_load(o->paths.config_dir, &config, &d);
        if (r < 0 || o->check_config) {
                print_problems(o->paths.config_dir, &d, o->json);
                if (r < 0 && !o->json) {
                        print_printable(stderr, "gpreemptd: ", o->paths.config_dir, "");
                        fprintf(stderr, ": the configuration has %zu problem%s%s\n", diag_count(&d),
                                diag_count(&d) == 1 ? "" : "s", o->check_config ? "" : "; refusing to start");
                } else if (!o->json) {
                        print_printable(stdout, "", o->paths.config_dir, "");
                        printf(": the configuration is valid: %zu workloads\n", config->n_workloads);
                }
                diag_clear(&d);
                config_free(config);
                return r < 0 ? r : 0;
        }
        log_set_level(config->daemon.log_level);
        runtime_dir = strdup(o->paths.runtime_dir ? o->paths.runtime_dir : config->daemon.runtime_dir);
        if (!runtime_dir) {
                config_free(config);
                return -ENOMEM;
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGUSR2);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        raise_open_file_limit();

        r = sd_event_default(&event);
        if (r < 0) {
                config_free(config);
                return log_error_errno(r, "Cannot create the event loop");
        }
        r = manager_new(event, &o->paths, config, &m);
        if (r < 0) {
                config_free(config);
                sd_event_unref(event);
                return log_error_errno(r, "Cannot set up");
        }
        /* sd-event pings the watchdog from the loop itself: a stuck loop stops the pings */
        sd_event_set_watchdog(event, true);
        if ((r = sd_event_add_signal(event, NULL, SIGTERM, on_terminate, m)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGINT, on_terminate, m)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, m)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGUSR1, on_user_signal, NULL)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGUSR2, on_user_signal, NULL)) < 0 ||
            (r = sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, STATUS_INTERVAL_US, 1000000,
                                            on_status_timer, m)) < 0) {
                log_error_errno(r, "Cannot set up signal handling");
                goto out;
        }
        r = varlink_server_new(event, &info, &api_interface, api_read_group(m->paths.group), m, &server);
        if (r < 0)
                goto out;
        r = listen_control_socket(server, runtime_dir, &control);
        if (r < 0)
                goto out;
        r = manager_start(m);
        if (r < 0) {
                log_error_errno(r, "Cannot start discovery");
                goto out;
        }
        log_notice("gpreemptd %s running: %zu workloads configured, control socket in %s", GPREEMPT_VERSION,
                   m->config->n_workloads, runtime_dir);
        sd_notify(false, "READY=1");
        notify_status(m);
        r = sd_event_loop(event);
out:
        /* detaching every session makes the kernel resume their queues (kfd-interface.md §6) */
        manager_free(m);
        varlink_server_free(server);
        control_socket_done(&control);
        sd_event_unref(event);
        return r;
}

int main(int argc, char **argv)
{
        struct options o = { 0 };
        int r;

        /* before anything is opened: a closed one would take the socket or a pidfd, and the log with it */
        r = standard_fds_fill();
        if (r < 0) {
                fprintf(stderr, "gpreemptd: cannot put /dev/null on a closed standard descriptor: %s\n",
                        strerror(-r));
                return 1;
        }
        /*
         * Writing to a pipe whose reader is gone (gpreemptd 2>&1 | head)
         * raises SIGPIPE, whose default action would end the daemon as
         * abruptly as SIGKILL at its next log line. Ignored, the write
         * fails with EPIPE and the line is lost. (systemd's IgnoreSIGPIPE=
         * does the same under the unit; the daemon does not depend on it.)
         */
        signal(SIGPIPE, SIG_IGN);
        r = parse_args(argc, argv, &o);
        if (r <= 0) {
                paths_done(&o.paths);
                return r < 0 ? 2 : 0;
        }
        r = paths_fill_defaults(&o.paths);
        if (r >= 0)
                r = run(&o);
        paths_done(&o.paths);
        return r < 0 ? 1 : 0;
}
