/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-run: start an emulated amdkfd node, run COMMAND inside it (its
 * sysfs/debugfs trees bound where the kernel's would be, in a mount
 * namespace of the run's own; the preload library carrying /dev/kfd's
 * calls to this server), tear the node down, exit with COMMAND's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "cleanup.h"
#include "command.h"
#include "gpu.h"
#include "kfdemu-preload-path.h"
#include "mount-namespace.h"
#include "mount-undoer.h"
#include "node-config.h"
#include "node-mounts.h"
#include "protocol.h"
#include "server.h"

/* The server's socket, in the private directory. */
#define KFDEMU_SOCKET_NAME "kfdemu.sock"

struct options {
        unsigned n_gpus;                 /* 0 = not given */
        const char *config_path;
        const char *root;
        const char *log_path;
        const char *trace_path;
        bool keep;
        bool system_wide;
        char **command;
};

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: kfdemu-run [OPTIONS] -- COMMAND [ARG...]\n"
                "\n"
                "Run COMMAND (and everything it starts) on an emulated AMD GPU node:\n"
                "its /dev/kfd, /dev/dri, /sys/class/kfd, /sys/kernel/debug/kfd... are\n"
                "kfdemu's, in a mount namespace of the run's own.\n"
                "The run ends when COMMAND exits; kfdemu-run exits with its status.\n"
                "\n"
                "Options:\n"
                "  --gpus N        number of emulated GPUs, 1..%d (default 1, or Gpus= in --config)\n"
                "  --config FILE   node and GPU settings, INI ([Node], [GPU0]..[GPU15])\n"
                "  --root DIR      render sysfs/debugfs and put the socket in DIR (kept afterwards)\n"
                "  --log FILE      append what the emulated kernel would log (dmesg) to FILE\n"
                "  --trace FILE    append one line per DBG_TRAP SUSPEND_QUEUES/RESUME_QUEUES call\n"
                "                  to FILE: the CLOCK_MONOTONIC ns it reached the emulator, op, pids\n"
                "  --keep          keep the private directory and print its path\n"
                "  --system-wide   mount the node's files in kfdemu-run's own mount namespace,\n"
                "                  for every process of the machine, until the run ends\n"
                "                  (a container standing in for a node; needs CAP_SYS_ADMIN)\n"
                "  --help          show this help\n"
                "\n"
                "Environment: KFDEMU_PRELOAD overrides the preload library's path.\n"
                "See kfdemu-run(1).\n",
                EMU_MAX_GPUS);
}

static int parse_options(int argc, char **argv, struct options *ret)
{
        enum { OPT_GPUS = 256, OPT_CONFIG, OPT_ROOT, OPT_LOG, OPT_TRACE, OPT_KEEP, OPT_SYSTEM_WIDE, OPT_HELP };
        static const struct option longopts[] = {
                { "gpus", required_argument, NULL, OPT_GPUS },
                { "config", required_argument, NULL, OPT_CONFIG },
                { "root", required_argument, NULL, OPT_ROOT },
                { "log", required_argument, NULL, OPT_LOG },
                { "trace", required_argument, NULL, OPT_TRACE },
                { "keep", no_argument, NULL, OPT_KEEP },
                { "system-wide", no_argument, NULL, OPT_SYSTEM_WIDE },
                { "help", no_argument, NULL, OPT_HELP },
                {},
        };
        struct options o = { 0 };
        int c;

        /* '+': options end at COMMAND, whose own options are its business. */
        while ((c = getopt_long(argc, argv, "+", longopts, NULL)) >= 0) {
                char *end;
                unsigned long n;

                switch (c) {
                case OPT_GPUS:
                        errno = 0;
                        n = strtoul(optarg, &end, 10);
                        if (errno || *end || end == optarg || n < 1 || n > EMU_MAX_GPUS) {
                                fprintf(stderr, "kfdemu-run: --gpus %s is not a GPU count; use 1..%d.\n", optarg,
                                        EMU_MAX_GPUS);
                                return -EINVAL;
                        }
                        o.n_gpus = (unsigned)n;
                        break;
                case OPT_CONFIG:
                        o.config_path = optarg;
                        break;
                case OPT_ROOT:
                        o.root = optarg;
                        break;
                case OPT_LOG:
                        o.log_path = optarg;
                        break;
                case OPT_TRACE:
                        o.trace_path = optarg;
                        break;
                case OPT_KEEP:
                        o.keep = true;
                        break;
                case OPT_SYSTEM_WIDE:
                        o.system_wide = true;
                        break;
                case OPT_HELP:
                        usage(stdout);
                        exit(EXIT_SUCCESS);
                default:
                        fprintf(stderr, "Try 'kfdemu-run --help'.\n");
                        return -EINVAL;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "kfdemu-run: no COMMAND given; write it after '--', e.g. kfdemu-run -- ./test.\n");
                return -EINVAL;
        }
        o.command = argv + optind;
        *ret = o;
        return 0;
}

/* The node as the kernel would come up: KFD 1.13, sched_policy 0 (HWS),
 * queue_preemption_timeout_ms 9000 (amdgpu's defaults), Linux 6.10's
 * amdkfd (the tree kfdemu follows), no faults; then the file,
 * then the command line. */
static int build_config(const struct options *o, struct emu_config *cfg)
{
        struct node_config_file file = { 0 };
        char error[1024];

        *cfg = (struct emu_config){
                .kfd_major = 1,
                .kfd_minor = 13,
                .sched_policy = 0,
                .queue_preemption_timeout_ms = 9000,
                .kernel.version = EMU_KERNEL_VERSION(6, 10),
        };
        for (unsigned i = 0; i < EMU_MAX_GPUS; i++)
                emu_gpu_config_default(i, &cfg->gpus[i]);

        if (o->config_path && node_config_parse_file(o->config_path, cfg, &file, error, sizeof(error)) < 0) {
                fprintf(stderr, "kfdemu-run: %s.\n", error);
                return -EINVAL;
        }
        cfg->n_gpus = o->n_gpus ? o->n_gpus : file.n_gpus ? file.n_gpus : 1;
        if (o->config_path && node_config_check_gpu_count(o->config_path, &file, cfg->n_gpus, error, sizeof(error)) < 0) {
                fprintf(stderr, "kfdemu-run: %s.\n", error);
                return -EINVAL;
        }
        return 0;
}

/* A directory nobody but the caller (and root) may change: whoever could
 * rename or replace its entries could have the node's files, or files of
 * their choosing, mounted where the kernel's would be. Opened without
 * following a symlink at its end; its fd, or -errno (-EPERM: someone
 * else's). */
static int open_own_directory(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return NEG_ERRNO();
        if (st.st_uid != geteuid() && st.st_uid != 0)
                return -EPERM;
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
                return -EPERM;
        return TAKE_FD(fd);
}

/* `su` keeps the user's XDG_RUNTIME_DIR, which root may write to as to
 * anything: writable is not enough, it must be the caller's. */
static bool usable_parent(const char *dir)
{
        _cleanup_close_ int fd = dir && *dir == '/' ? open_own_directory(dir) : -EINVAL;

        return fd >= 0 && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) == 0;
}

/* Where the private directory goes without --root. The server renders
 * sysfs/debugfs files there while an ioctl waits: on a disk-backed /tmp
 * under I/O load a suspend took many times its usual time
 * (docs/benchmarks/kfdemu.md), so a tmpfs (the user's runtime directory,
 * else /dev/shm) comes first. */
static const char *private_dir_parent(void)
{
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        const char *tmp = getenv("TMPDIR");

        if (usable_parent(runtime))
                return runtime;
        if (usable_parent("/dev/shm"))
                return "/dev/shm";
        if (tmp && *tmp == '/' && usable_parent(tmp))
                return tmp;
        return "/tmp";
}

/* The private directory, made (or for --root, taken) and opened; its fd,
 * or -errno. */
static int make_private_dir(const struct options *o, char *dir, size_t size)
{
        int fd;

        if (o->root) {
                if (mkdir(o->root, 0700) < 0 && errno != EEXIST) {
                        fprintf(stderr, "kfdemu-run: cannot create --root %s: %m.\n", o->root);
                        return NEG_ERRNO();
                }
                if (!realpath(o->root, dir)) {
                        fprintf(stderr, "kfdemu-run: cannot resolve --root %s: %m.\n", o->root);
                        return NEG_ERRNO();
                }
                fd = open_own_directory(dir);
                if (fd == -EPERM)
                        fprintf(stderr, "kfdemu-run: --root %s belongs to another user or is writable by others; "
                                        "give a directory of your own that only you may write to.\n", dir);
                else if (fd < 0)
                        fprintf(stderr, "kfdemu-run: cannot open --root %s: %s.\n", dir, strerror(-fd));
                return fd;
        }

        const char *parent = private_dir_parent();
        if ((size_t)snprintf(dir, size, "%s/kfdemu.XXXXXX", parent) >= size) {
                fprintf(stderr, "kfdemu-run: the directory %s is too long a path; "
                                "give a shorter one with --root.\n", parent);
                return -ENAMETOOLONG;
        }
        if (!mkdtemp(dir)) {
                fprintf(stderr, "kfdemu-run: cannot create a private directory in %s: %m. "
                                "Give a writable directory with --root.\n", parent);
                return NEG_ERRNO();
        }
        /* mkdtemp made it the caller's, 0700: anything else is a swap. */
        fd = open_own_directory(dir);
        if (fd < 0)
                fprintf(stderr, "kfdemu-run: the private directory %s was replaced before it could be opened (%s); "
                                "give a directory of your own with --root.\n", dir, strerror(-fd));
        return fd;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path) < 0 ? -1 : 0;
}

static int preload_path(char path[static PATH_MAX])
{
        const char *p = getenv(KFDEMU_ENV_PRELOAD);

        if (!p || !*p)
                p = KFDEMU_PRELOAD_BUILD_PATH;
        if (!realpath(p, path) || access(path, R_OK) < 0) {
                fprintf(stderr, "kfdemu-run: cannot use the preload library %s: %m. "
                                "Build it (ninja libkfdemu-preload.so) or set KFDEMU_PRELOAD to its path.\n", p);
                return -ENOENT;
        }
        return 0;
}

/* COMMAND's environment: the preload first, so its open/ioctl win over the
 * application's own libraries. */
static int set_child_environment(const char *preload, const char *socket_path)
{
        const char *old = getenv("LD_PRELOAD");
        _cleanup_free_ char *value = NULL;

        if (asprintf(&value, "%s%s%s", preload, old && *old ? ":" : "", old && *old ? old : "") < 0)
                return -ENOMEM;
        if (setenv("LD_PRELOAD", value, 1) < 0 || setenv(KFDEMU_ENV_SOCKET, socket_path, 1) < 0)
                return NEG_ERRNO();
        return 0;
}

/* Every client thread holds a connection: give the server all the fds it
 * may have, and COMMAND the limit it would have had without kfdemu. */
static void raise_fd_limit(struct rlimit *ret_saved)
{
        struct rlimit raised;

        if (getrlimit(RLIMIT_NOFILE, ret_saved) < 0)
                return;
        raised = (struct rlimit){ .rlim_cur = ret_saved->rlim_max, .rlim_max = ret_saved->rlim_max };
        setrlimit(RLIMIT_NOFILE, &raised);
}

/* Unshare succeeds there, but the new user namespace's capabilities do
 * not let its creator mount. */
#define USERNS_MOUNTS_HINT                                                                                     \
        "A security module may forbid mounts in unprivileged user namespaces (Ubuntu's AppArmor: "              \
        "sysctl kernel.apparmor_restrict_unprivileged_userns=0); or run as root."

/* What to do about a mount namespace mount_namespace_enter_private()
 * could not make. */
static const char *namespace_hint(enum mount_namespace_step step, int r)
{
        switch (step) {
        case MOUNT_NAMESPACE_UNSHARE:
                return "Run as root.";
        case MOUNT_NAMESPACE_UNSHARE_USER:
                if (r == -ENOSPC)
                        return "The user namespace limit is reached or 0: allow unprivileged user namespaces "
                               "(sysctl user.max_user_namespaces > 0), or run as root.";
                if (r == -EPERM)
                        return "Unprivileged user namespaces are off: allow unprivileged user namespaces "
                               "(sysctl kernel.unprivileged_userns_clone=1 where it exists; outside a container "
                               "that forbids them), or run as root.";
                return "Run as root.";
        case MOUNT_NAMESPACE_MAP_IDS:
                return "The kernel refused the user namespace's id map (writing /proc/self/uid_map, gid_map or "
                       "setgroups); run as root.";
        case MOUNT_NAMESPACE_MOUNT:
                return USERNS_MOUNTS_HINT;
        }
        return "";
}

/* While the process still has one thread: a user namespace can only be
 * entered by a single-threaded process (unshare(2)). */
static int enter_private_namespace(void)
{
        enum mount_namespace_step step;
        int r = mount_namespace_enter_private(&step);

        if (r < 0)
                fprintf(stderr, "kfdemu-run: cannot make a mount namespace for the node's files: %s. %s\n",
                        strerror(-r), namespace_hint(step, r));
        return r;
}

/* A bind mount's source must be in the caller's mount namespace: the
 * private directory opened before entering a new one is opened again,
 * and must be the same directory. */
static int reopen_in_namespace(const char *dir, int *fd)
{
        _cleanup_close_ int again = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat before, after;

        if (again < 0 || fstat(again, &after) < 0 || fstat(*fd, &before) < 0) {
                fprintf(stderr, "kfdemu-run: cannot open the private directory %s again: %m.\n", dir);
                return NEG_ERRNO();
        }
        if (before.st_dev != after.st_dev || before.st_ino != after.st_ino) {
                fprintf(stderr, "kfdemu-run: the private directory %s was replaced during the start; "
                                "give a directory of your own with --root.\n", dir);
                return -ESTALE;
        }
        close(*fd);
        *fd = TAKE_FD(again);
        return 0;
}

/* What to do about a mount that failed with `r`. */
static const char *mount_hint(const struct options *o, int r)
{
        switch (r) {
        case -EPERM:
        case -EACCES:
                if (o->system_wide)
                        return "--system-wide needs CAP_SYS_ADMIN; run it as root.";
                return USERNS_MOUNTS_HINT;
        case -ENOTDIR:
        case -EISDIR:
                return "The machine has a file of the other kind there: run in a container or a VM whose "
                       "tree has no such entry.";
        case -ELOOP:
        case -EXDEV:
                return "The private directory holds a symlink where a rendered tree goes: give a clean --root.";
        default:
                return "";
        }
}

static int present_node_files(const struct options *o, int root_fd, const char *root, struct node_mounts *mounts)
{
        const char *failed = NULL;
        int r = node_mounts_present(mounts, root_fd, KFDEMU_SOCKET_NAME, &failed);

        if (r < 0)
                fprintf(stderr, "kfdemu-run: cannot mount the node's %s: %s at %s%s%s. %s\n", failed, strerror(-r),
                        mounts->failed_at[0] == '/' ? "" : root, mounts->failed_at[0] == '/' ? "" : "/",
                        mounts->failed_at, mount_hint(o, r));
        return r;
}

/* A --system-wide run's mounts are in a namespace that outlives it: a run
 * killed before removing them, or one still going, has its socket at
 * /dev/kfd, and its mounts under this run's would be unmounted by path
 * with this run's. */
static int refuse_if_presented(void)
{
        struct stat st;

        if (lstat(KFD_DEVICE, &st) < 0 || !S_ISSOCK(st.st_mode))
                return 0;
        fprintf(stderr, "kfdemu-run: %s is already a kfdemu socket: another kfdemu-run --system-wide is running, "
                        "or one was killed before removing its mounts. End that run, or remove them with: umount -l",
                KFD_DEVICE);
        node_mounts_print_presented(stderr);
        fputc('\n', stderr);
        return -EEXIST;
}

static int run_node(const struct options *o, const struct emu_config *cfg, int root_fd, const char *socket_path,
                    int log_fd, int trace_fd)
{
        static const int forwarded[] = COMMAND_FORWARDED_SIGNALS;
        static struct kfdemu_server server;
        static struct node_mounts mounts = { .undo_fd = -1 };
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        struct command_run run;
        struct rlimit saved_limit = { 0 };
        sigset_t mask, saved_mask;
        int r;

        raise_fd_limit(&saved_limit);

        /* sd-event's signal sources need these blocked in every
         * thread: block them before the GPU model thread starts. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                sigaddset(&mask, forwarded[i]);
        sigprocmask(SIG_BLOCK, &mask, &saved_mask);

        /* Mounts in the machine's namespace must go however the run ends;
         * services of any user, not COMMAND's children, connect to the
         * socket (the preload by its path in the private directory) as
         * udev lets anyone open the kernel's /dev/kfd (systemd's
         * 50-udev-default.rules: SUBSYSTEM=="kfd", MODE="0666"). */
        if (o->system_wide) {
                if (fchmod(root_fd, 0755) < 0) {
                        fprintf(stderr, "kfdemu-run: cannot open the private directory %s to every user: %m.\n",
                                cfg->root);
                        return EXIT_FAILURE;
                }
                mounts.undo_fd = mount_undoer_start();
                if (mounts.undo_fd < 0) {
                        fprintf(stderr, "kfdemu-run: cannot start the process that removes the mounts after the "
                                        "run: %s.\n", strerror(-mounts.undo_fd));
                        return EXIT_FAILURE;
                }
                mounts.device_mode = 0666;
        }
        r = sd_event_new(&event);
        if (r < 0)
                fprintf(stderr, "kfdemu-run: cannot create the event loop: %s.\n", strerror(-r));
        else {
                r = server_start(&server, event, cfg, socket_path, log_fd);
                if (r < 0)
                        fprintf(stderr, "kfdemu-run: cannot start the emulated node: %s. "
                                        "Run with --log FILE for the emulator's own messages.\n", strerror(-r));
        }
        if (r >= 0) {
                server.trace_fd = trace_fd;
                r = present_node_files(o, root_fd, cfg->root, &mounts);
                if (r >= 0) {
                        r = command_start(&run, event, o->command, &saved_mask, &saved_limit);
                        if (r >= 0) {
                                r = sd_event_loop(event);
                                command_done(&run);
                        }
                        if (r < 0)
                                fprintf(stderr, "kfdemu-run: cannot run %s: %s.\n", o->command[0], strerror(-r));
                }
                server_stop(&server);
        }

        /* A private namespace takes its mounts along when its last process
         * goes; a --system-wide run's are the undoer's to take down. */
        if (mounts.undo_fd >= 0)
                mount_undoer_finish(mounts.undo_fd);
        return r < 0 ? EXIT_FAILURE : run.exit_status;
}

int main(int argc, char **argv)
{
        struct options o;
        static struct emu_config cfg;
        char dir[PATH_MAX], socket_path[PATH_MAX + 16], preload[PATH_MAX];
        _cleanup_close_ int log_fd = -1, trace_fd = -1;

        if (parse_options(argc, argv, &o) < 0 || build_config(&o, &cfg) < 0)
                return EXIT_FAILURE;
        if (preload_path(preload) < 0)
                return EXIT_FAILURE;
        /* Writing to a reader gone (stderr a closed pipe) is an error to
         * go on from, not a reason to die with the mounts in place. */
        signal(SIGPIPE, SIG_IGN);
        if (o.system_wide && refuse_if_presented() < 0)
                return EXIT_FAILURE;
        if (o.log_path) {
                log_fd = open(o.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (log_fd < 0) {
                        fprintf(stderr, "kfdemu-run: cannot open the log %s: %m.\n", o.log_path);
                        return EXIT_FAILURE;
                }
        }
        if (o.trace_path) {
                trace_fd = open(o.trace_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (trace_fd < 0) {
                        fprintf(stderr, "kfdemu-run: cannot open the trace %s: %m. Check the path.\n",
                                o.trace_path);
                        return EXIT_FAILURE;
                }
        }
        _cleanup_close_ int root_fd = make_private_dir(&o, dir, sizeof(dir));
        if (root_fd < 0)
                return EXIT_FAILURE;
        snprintf(cfg.root, sizeof(cfg.root), "%s", dir);
        snprintf(socket_path, sizeof(socket_path), "%s/" KFDEMU_SOCKET_NAME, dir);

        /* The private directory is made, and its owner checked, outside
         * the user namespace, where ids the namespace does not map (root's
         * of /dev/shm) still show as themselves. */
        int status = EXIT_FAILURE;
        if (!o.system_wide && (enter_private_namespace() < 0 || reopen_in_namespace(dir, &root_fd) < 0))
                ;
        else if (set_child_environment(preload, socket_path) < 0)
                fprintf(stderr, "kfdemu-run: cannot set COMMAND's environment: %m.\n");
        else
                status = run_node(&o, &cfg, root_fd, socket_path, log_fd, trace_fd);

        if (o.keep || o.root)
                fprintf(stderr, "kfdemu-run: the node's files are kept in %s\n", dir);
        else
                nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (o.root)
                unlink(socket_path);
        return status;
}
