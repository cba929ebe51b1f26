/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-run as a command: COMMAND's status comes back (128 + signal when
 * killed), COMMAND gets the node's environment with the preload first,
 * the private directory goes afterwards, --system-wide shows the node to
 * every process of the namespace while the run lasts and takes its mounts
 * down however the run ends, a private run's mounts never reach the
 * namespace it started in, and every mistake on the command line or in
 * --config, and every refused mount, is reported with a sentence.
 * argv[1] is kfdemu-run.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

static const char *kfdemu_run;

struct result {
        int status;                      /* exit status, or 128 + signal */
        char output[4096];               /* stdout and stderr together */
};

/*
 * Runs `argv` (NULL-terminated, argv[0] a path), capturing its output. The
 * signals the tests send take their default action there even when this
 * test was started with them ignored: nohup ignores SIGHUP, an ignored
 * signal stays ignored across exec, and a run told to end by one would wait
 * for good.
 */
static void spawn(struct result *r, const char *const *argv)
{
        int out[2], status;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        sigset_t defaults;
        pid_t pid;

        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
        posix_spawnattr_init(&attr);
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGHUP);
        sigaddset(&defaults, SIGTERM);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
        assert_int_equal(posix_spawn(&pid, argv[0], &actions, &attr, (char **)argv, environ), 0);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&actions);
        close(out[1]);

        size_t len = 0;
        ssize_t got;
        while ((got = read(out[0], r->output + len, sizeof(r->output) - 1 - len)) > 0)
                len += (size_t)got;
        r->output[len] = '\0';
        close(out[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs kfdemu-run with `args` (NULL-terminated). */
static void run(struct result *r, const char *const *args)
{
        const char *argv[32] = { kfdemu_run };

        for (size_t n = 1; args[n - 1] && n < 31; n++)
                argv[n] = args[n - 1];
        spawn(r, argv);
}

/* Runs a shell script, kfdemu-run's path as its $0. */
static void run_script(struct result *r, const char *script)
{
        spawn(r, (const char *[]){ "/bin/sh", "-c", script, kfdemu_run, NULL });
}

static void assert_output_has(const struct result *r, const char *needle)
{
        if (!strstr(r->output, needle))
                fail_msg("expected \"%s\" in the output:\n%s", needle, r->output);
}

static void test_exit_status_passes_through(void **state)
{
        struct result r;

        run(&r, (const char *[]){ "--", "sh", "-c", "exit 7", NULL });
        assert_int_equal(r.status, 7);
        run(&r, (const char *[]){ "--", "sh", "-c", "kill -USR1 $$", NULL });
        assert_int_equal(r.status, 128 + 10);
        run(&r, (const char *[]){ "--", "/nonexistent/command", NULL });
        assert_int_equal(r.status, 127);
        assert_output_has(&r, "cannot run /nonexistent/command");
}

static bool process_gone(pid_t pid)
{
        return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Whatever COMMAND leaves running (in the background, daemonized, deaf to
 * SIGTERM) ends with the run, never outlives the node. */
static void test_leftovers_end_with_the_run(void **state)
{
        struct result r;
        int a, b, c;

        run(&r, (const char *[]){ "--", "sh", "-c",
                                  "sleep 100 & echo \"bg=$!\";"
                                  "(trap '' TERM; exec sleep 101) & echo \"deaf=$!\";"
                                  "sh -c 'sleep 102 & echo \"daemon=$!\"';"
                                  "exit 3",
                                  NULL });
        assert_int_equal(r.status, 3);
        assert_int_equal(sscanf(strstr(r.output, "bg="), "bg=%d", &a), 1);
        assert_int_equal(sscanf(strstr(r.output, "deaf="), "deaf=%d", &b), 1);
        assert_int_equal(sscanf(strstr(r.output, "daemon="), "daemon=%d", &c), 1);
        assert_true(process_gone(a));
        assert_true(process_gone(b));
        assert_true(process_gone(c));
}

static void test_command_environment(void **state)
{
        struct result r;

        run(&r, (const char *[]){ "--gpus", "2", "--", "sh", "-c",
                                  "echo \"preload=$LD_PRELOAD\"; test -S \"$KFDEMU_SOCKET\" && echo socket-ok;"
                                  "dir=$(dirname \"$KFDEMU_SOCKET\");"
                                  "test -d \"$dir/sys/class/kfd/kfd/topology\" && echo root-ok;"
                                  "echo \"dir=$dir\"",
                                  NULL });
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "libkfdemu-preload.so");
        assert_output_has(&r, "socket-ok");
        assert_output_has(&r, "root-ok");

        /* The private directory is gone after the run. */
        char *dir = strstr(r.output, "dir=");
        assert_non_null(dir);
        dir += 4;
        dir[strcspn(dir, "\n")] = '\0';
        struct stat st;
        assert_int_equal(stat(dir, &st), -1);
        assert_int_equal(errno, ENOENT);
}

static void test_root_is_kept(void **state)
{
        char dir[] = "/tmp/kfdemu-run-root.XXXXXX", path[128];
        struct result r;
        struct stat st;

        assert_non_null(mkdtemp(dir));
        run(&r, (const char *[]){ "--root", dir, "--", "true", NULL });
        assert_int_equal(r.status, 0);
        snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/topology", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_output_has(&r, dir);
        run(&r, (const char *[]){ "--", "sh", "-c", "rm -rf \"$0\"", dir, NULL });
        assert_int_equal(r.status, 0);
}

static void test_command_line_mistakes(void **state)
{
        struct result r;

        run(&r, (const char *[]){ "--gpus", "17", "--", "true", NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "--gpus 17 is not a GPU count");
        run(&r, (const char *[]){ "--gpus", NULL });
        assert_int_equal(r.status, 1);
        run(&r, (const char *[]){ "--frobnicate", "--", "true", NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "--help");
        run(&r, (const char *[]){ NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "no COMMAND given");
        run(&r, (const char *[]){ "--help", NULL });
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "Usage: kfdemu-run");
        assert_output_has(&r, "--trace FILE");
        run(&r, (const char *[]){ "--trace", "/nonexistent/dir/trace", "--", "true", NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "cannot open the trace /nonexistent/dir/trace");
}

/* A run without debugger calls leaves the trace file there and empty (its lines: tests/controller). */
static void test_trace_file_created(void **state)
{
        char path[] = "/tmp/kfdemu-run-trace.XXXXXX";
        struct result r;
        struct stat st;
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        close(fd);
        unlink(path);
        run(&r, (const char *[]){ "--trace", path, "--", "true", NULL });
        assert_int_equal(r.status, 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, 0);
        unlink(path);
}

static void test_config_mistakes(void **state)
{
        char path[] = "/tmp/kfdemu-run-conf.XXXXXX", expected[128];
        struct result r;
        int fd = mkstemp(path);
        const char *text = "[Node]\nGpus=1\n\n[GPU0]\nMES=perhaps\n";

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        run(&r, (const char *[]){ "--config", path, "--", "true", NULL });
        assert_int_equal(r.status, 1);
        snprintf(expected, sizeof(expected), "%s:5: [GPU0] MES=perhaps is not valid", path);
        assert_output_has(&r, expected);

        /* --gpus wins over Gpus=, and a section beyond the count is refused. */
        fd = open(path, O_WRONLY | O_TRUNC);
        text = "[Node]\nGpus=4\n[GPU3]\nDebugFirmware=yes\n";
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        run(&r, (const char *[]){ "--config", path, "--gpus", "2", "--", "true", NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "[GPU3] configures a GPU the node does not have");
        run(&r, (const char *[]){ "--config", path, "--", "true", NULL });
        assert_int_equal(r.status, 0);
        unlink(path);

        run(&r, (const char *[]){ "--config", "/nonexistent.conf", "--", "true", NULL });
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "cannot read the configuration file /nonexistent.conf");
}

/* --system-wide: a process that is not COMMAND's (a service of a
 * container standing in for a node) sees the node's files while the run
 * lasts, of any user, can connect to the socket as to the kernel's
 * /dev/kfd (by the path the preload uses, in the private directory), and they
 * are gone after it. COMMAND holds the run until the script has looked
 * (a fifo each way). In a mount namespace of the test's own, so that the
 * machine running it is left alone. */
static void test_system_wide(void **state)
{
        struct result r;

        run_script(&r, "exec unshare --mount --propagation private sh -c '"
                       "dir=$(mktemp -d) && chmod 0755 \"$dir\" && mkfifo \"$dir/up\" \"$dir/go\" || exit 8;"
                       "before=$(wc -l < /proc/self/mountinfo);"
                       "\"$0\" --system-wide --gpus 2 --root \"$dir/root\" -- "
                       "sh -c \"echo up > $dir/up; read go < $dir/go\" & run=$!;"
                       "read up < \"$dir/up\";"
                       "echo nodes: $(ls /sys/class/kfd/kfd/topology/nodes);"
                       "setpriv --reuid=65534 --regid=65534 --clear-groups "
                       "sh -c \"test -w /dev/kfd && test -w $dir/root/kfdemu.sock\" && echo nobody may connect;"
                       "echo go > \"$dir/go\";"
                       "wait $run; echo status=$?; rm -r \"$dir\";"
                       "test \"$(wc -l < /proc/self/mountinfo)\" = \"$before\" && echo unmounted' \"$0\"");
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "nodes: 0 1 2");
        assert_output_has(&r, "nobody may connect");
        assert_output_has(&r, "status=0");
        assert_output_has(&r, "unmounted");
}

/* However a --system-wide run ends, its mounts go: a signal it passes on
 * to COMMAND, and SIGKILL, which it cannot see (its undoer takes them
 * down). While it runs, a second run is refused, told what clears the
 * first's mounts. `sig` is a signal name for kill(1); `expected` the
 * run's status and whether COMMAND is still running after it (only a
 * signal passed on ends it; the run is a background job of sh, which
 * starts those with SIGINT and SIGQUIT ignored, so HUP and TERM). */
static void check_system_wide_ends_clean(const char *sig, const char *expected, const char *command_state)
{
        char script[2048];
        struct result r;

        snprintf(script, sizeof(script),
                 "exec unshare --mount --propagation private sh -c '"
                 "dir=$(mktemp -d) && mkfifo \"$dir/up\" || exit 8;"
                 "before=$(wc -l < /proc/self/mountinfo);"
                 "\"$0\" --system-wide -- sh -c \"echo \\$\\$ > $dir/up; exec sleep 100\" & run=$!;"
                 "read command < \"$dir/up\"; rm -r \"$dir\";"
                 "\"$0\" --system-wide -- true; echo second=$?;"
                 "kill -%s $run; wait $run; echo status=$?;"
                 "if kill -KILL $command 2>/dev/null; then echo command=running; else echo command=gone; fi;"
                 "i=0; until test \"$(wc -l < /proc/self/mountinfo)\" = \"$before\"; do "
                 "i=$((i + 1)); test $i -lt 100 || exit 9; sleep 0.1; done; echo unmounted' \"$0\"",
                 sig);
        run_script(&r, script);
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "second=1");
        assert_output_has(&r, "/dev/kfd is already a kfdemu socket");
        assert_output_has(&r, "umount -l /dev/kfd");
        assert_output_has(&r, expected);
        assert_output_has(&r, command_state);
        assert_output_has(&r, "unmounted");
}

static void test_system_wide_ends_clean(void **state)
{
        check_system_wide_ends_clean("TERM", "status=143", "command=gone");
        check_system_wide_ends_clean("HUP", "status=129", "command=gone");
        check_system_wide_ends_clean("KILL", "status=137", "command=running");
}

/* A run's mounts stay in its namespace even where the one it starts in
 * propagates its mounts (/ shared, as systemd makes it): the test's own
 * namespace, / shared in a peer group of its own, and checked to be. */
static void test_mounts_stay_in_the_run(void **state)
{
        struct result r;

        run_script(&r, "exec unshare --mount --propagation private sh -c '"
                       "mount --make-rshared / && echo outer: $(findmnt -no PROPAGATION /);"
                       "before=$(wc -l < /proc/self/mountinfo);"
                       "\"$0\" -- sh -c \"test -S /dev/kfd && echo inside: kfd;"
                       "echo outer mounts: \\$(wc -l < /proc/$$/mountinfo)\"; echo before: $before' \"$0\"");
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "outer: shared\n");
        assert_output_has(&r, "inside: kfd\n");
        char *before = strstr(r.output, "before: "), *during = strstr(r.output, "outer mounts: ");
        assert_non_null(before);
        assert_non_null(during);
        assert_int_equal(atoi(before + strlen("before: ")), atoi(during + strlen("outer mounts: ")));
}

/* As root, the private directory goes only where nobody else may change
 * it: a --root of another user's is refused, and such an XDG_RUNTIME_DIR
 * (which su keeps) passed over. */
static void test_private_directory_of_another_user(void **state)
{
        char dir[] = "/tmp/kfdemu-run-other.XXXXXX", expected[128];
        struct result r;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(chown(dir, 65534, 65534), 0);
        run(&r, (const char *[]){ "--root", dir, "--", "true", NULL });
        assert_int_equal(r.status, 1);
        snprintf(expected, sizeof(expected), "--root %s belongs to another user", dir);
        assert_output_has(&r, expected);

        setenv("XDG_RUNTIME_DIR", dir, 1);
        run(&r, (const char *[]){ "--", "sh", "-c", "echo \"socket=$KFDEMU_SOCKET\"", NULL });
        unsetenv("XDG_RUNTIME_DIR");
        assert_int_equal(r.status, 0);
        snprintf(expected, sizeof(expected), "socket=%s", dir);
        assert_null(strstr(r.output, expected));
        assert_output_has(&r, "socket=/");
        assert_int_equal(rmdir(dir), 0);
}

/* A user other than root (and than nobody, whose uid is the one unmapped
 * ids show as in a user namespace) without a runtime directory has the
 * private directory in /dev/shm, which root owns. */
static void test_private_directory_of_a_user(void **state)
{
        struct result r;

        run_script(&r, "exec env -u XDG_RUNTIME_DIR setpriv --reuid=12345 --regid=12345 --clear-groups \"$0\" -- "
                       "sh -c 'echo \"socket=$KFDEMU_SOCKET\"'");
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "socket=/dev/shm/kfdemu.");
}

/* A user other than root runs the node too (through a user namespace),
 * also where debugfs is mounted for root only, as Debian mounts it: the
 * run shows its own kfd there. In a mount namespace of the test's own. */
static void test_not_root_beside_a_private_debugfs(void **state)
{
        struct result r;

        run_script(&r, "exec unshare --mount --propagation private sh -c '"
                       "mount -t tmpfs -o mode=0700 root-only /sys/kernel/debug &&"
                       "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" -- "
                       "sh -c \"id -u; ls /sys/kernel/debug/kfd;"
                       "touch /dev/kfdemu-test 2>/dev/null || echo /dev read-only;"
                       "rm /dev/stdin 2>/dev/null || echo /dev/stdin stays\"' \"$0\"");
        assert_int_equal(r.status, 0);
        assert_output_has(&r, "65534\n");
        assert_output_has(&r, "mqds");
        assert_output_has(&r, "/dev read-only");
        assert_output_has(&r, "/dev/stdin stays");
}

/* Without CAP_SYS_ADMIN, --system-wide cannot mount; and a user who may
 * not create a user namespace (here: none left in the namespace's quota)
 * cannot have a mount namespace. Both are told what to do. */
static void test_mounts_refused(void **state)
{
        struct result r;

        run_script(&r, "exec setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \"$0\" --system-wide -- true");
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "--system-wide needs CAP_SYS_ADMIN");

        run_script(&r, "exec unshare --user --map-root-user sh -c '"
                       "echo 0 > /proc/sys/user/max_user_namespaces &&"
                       "exec setpriv --inh-caps=-all --bounding-set=-all \"$0\" -- true' \"$0\"");
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "cannot make a mount namespace for the node's files");
        assert_output_has(&r, "allow unprivileged user namespaces");
}

/* A machine whose /dev/dri is a file (a tmpfs /dev here, in a mount
 * namespace of the test's own): the message names it and says what to do. */
static void test_mount_point_of_the_wrong_kind(void **state)
{
        struct result r;

        run_script(&r, "exec unshare --mount --propagation private sh -c '"
                       "mount -t tmpfs none /dev && touch /dev/dri && exec \"$0\" -- true' \"$0\"");
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "cannot mount the node's /dev/dri: Not a directory at /dev/dri.");
        assert_output_has(&r, "run in a container or a VM");
}

static void test_bad_preload_override(void **state)
{
        struct result r;

        setenv("KFDEMU_PRELOAD", "/nonexistent/libkfdemu-preload.so", 1);
        run(&r, (const char *[]){ "--", "true", NULL });
        unsetenv("KFDEMU_PRELOAD");
        assert_int_equal(r.status, 1);
        assert_output_has(&r, "cannot use the preload library /nonexistent/libkfdemu-preload.so");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_status_passes_through),
                cmocka_unit_test(test_leftovers_end_with_the_run),
                cmocka_unit_test(test_command_environment),
                cmocka_unit_test(test_root_is_kept),
                cmocka_unit_test(test_command_line_mistakes),
                cmocka_unit_test(test_trace_file_created),
                cmocka_unit_test(test_config_mistakes),
                cmocka_unit_test(test_bad_preload_override),
                cmocka_unit_test(test_system_wide),
                cmocka_unit_test(test_system_wide_ends_clean),
                cmocka_unit_test(test_mounts_stay_in_the_run),
                cmocka_unit_test(test_private_directory_of_another_user),
                cmocka_unit_test(test_private_directory_of_a_user),
                cmocka_unit_test(test_not_root_beside_a_private_debugfs),
                cmocka_unit_test(test_mounts_refused),
                cmocka_unit_test(test_mount_point_of_the_wrong_kind),
        };

        if (argc != 2) {
                fprintf(stderr, "usage: %s PATH-TO-KFDEMU-RUN\n", argv[0]);
                return 2;
        }
        kfdemu_run = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
