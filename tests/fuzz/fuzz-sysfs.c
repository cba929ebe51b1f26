/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the KFD sysfs files queue_finder and gpreemptd read
 * (kfd-interface.md §8.1-8.2), and the debugfs mqds the daemon reads beside
 * them: a process's pasid and queues/<id>/{size,type,gpuid},
 * stats_<gpu_id>/cu_occupancy, and each topology node's gpu_id, name and
 * properties, read by qf_sysfs_list_pids(), qf_sysfs_read_process(),
 * qf_topology_read() and qf_gpu_name_resolve(), and by the daemon's
 * process_queues_read() and online_queues_read().
 *
 * These readers take a directory, so the input becomes a small file tree
 * standing in for /sys, rewritten on each run in a directory of this
 * process on a tmpfs. The input is records separated by the byte RS (0x1e);
 * a record's first byte picks its file from names[] (byte - ' ', modulo the
 * table's size, so a seed's names are printable characters) and the rest is
 * what the file holds. A name given twice holds the last record's bytes; a
 * name that ends in '/' makes only the directory. Besides what the kernel
 * makes, the table has names it never makes (leading zeros, numbers out of
 * range, a file where a directory belongs), which the walkers must skip or
 * refuse without mistaking one entry for another.
 *
 * The seeds in tests/fuzz/corpus/sysfs/ index names[] by position: add names
 * at the end only, and keep the table under 95 names so that each has a
 * printable byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "online-queues.h"
#include "process-queues.h"
#include "sources.h"

#define FUZZ_PID 94314 /* the HIP process of tests/data/real/mi308x-mqds-5queues.txt */
#define SEP 0x1e

#define KFD "class/kfd/kfd/"
#define PROC KFD "proc/94314/"
#define NODE(n) KFD "topology/nodes/" #n "/"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {
        /* what the kernel makes: one process on two GPUs (gpu_id 63420 and
         * 61531), two CPU and two GPU nodes as on the node of tests/data/real */
        PROC "pasid",
        PROC "queues/0/size", PROC "queues/0/type", PROC "queues/0/gpuid",
        PROC "queues/1/size", PROC "queues/1/type", PROC "queues/1/gpuid",
        PROC "queues/2/size", PROC "queues/2/type", PROC "queues/2/gpuid",
        PROC "stats_63420/cu_occupancy", PROC "stats_63420/evicted_ms",
        PROC "stats_61531/cu_occupancy", PROC "stats_61531/evicted_ms",
        PROC "vram_63420", PROC "sdma_63420", PROC "vram_61531", PROC "sdma_61531",
        NODE(0) "gpu_id", NODE(0) "name", NODE(0) "properties",
        NODE(1) "gpu_id", NODE(1) "name", NODE(1) "properties",
        NODE(2) "gpu_id", NODE(2) "name", NODE(2) "properties",
        NODE(3) "gpu_id", NODE(3) "name", NODE(3) "properties",
        KFD "topology/generation_id", KFD "topology/system_properties",
        "kernel/debug/kfd/mqds",
        KFD "proc/1/pasid", KFD "proc/1/queues/0/size", KFD "proc/1/queues/0/type", KFD "proc/1/queues/0/gpuid",
        KFD "proc/2147483647/pasid",
        /* the largest queue id, and what the kernel never names so */
        PROC "queues/4294967295/size", PROC "queues/4294967295/type", PROC "queues/4294967295/gpuid",
        PROC "queues/4294967296/size",
        PROC "queues/01/size", PROC "queues/01/type", PROC "queues/01/gpuid",
        PROC "queues/00/size", PROC "queues/+2/size", PROC "queues/x/size",
        PROC "stats_/cu_occupancy", PROC "stats_063420/cu_occupancy", PROC "stats_4294967296/cu_occupancy",
        PROC "stats_63420x/cu_occupancy",
        KFD "proc/0/pasid", KFD "proc/094314/pasid", KFD "proc/2147483648/pasid", KFD "proc/-1/pasid",
        KFD "proc/94314 /pasid",
        NODE(01) "gpu_id", NODE(01) "name", NODE(01) "properties",
        NODE(4294967296) "gpu_id",
        /* empty directories, files where directories belong and the reverse */
        PROC, PROC "queues/", PROC "queues/3/", KFD "proc/", KFD "topology/nodes/",
        PROC "queues", PROC "queues/0", PROC "queues/0/size/", PROC "stats_63420/cu_occupancy/",
        PROC "pasid/", NODE(2) "gpu_id/", NODE(2) "name/", NODE(2) "properties/",
        KFD "topology/nodes", "kernel/debug/kfd/mqds/",
};

_Static_assert(ELEMENTSOF(names) <= 95, "a seed names each file with a printable byte");

#define NODE_NAME(n) (19 + 3 * (n)) /* names[] index of NODE(n) "name" */

/* What this run made under the root, in order: removed in reverse after it. */
struct made {
        uint8_t name;  /* index in names[] */
        uint16_t len;  /* the path is the first len bytes of the name */
        bool dir;
};
static struct made made[ELEMENTSOF(names) * 16];
static size_t n_made;

/* What each file holds this run, for the checks; NULL when not written. */
static const uint8_t *content[ELEMENTSOF(names)];
static size_t content_len[ELEMENTSOF(names)];

static char root[64];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return ftw->level > 0 && remove(path) < 0 ? -1 : 0;
}

static void remove_root(void)
{
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        rmdir(root);
}

/* A broken promise aborts, which libFuzzer reports with the input (the tree
 * is made again from it); the line says which promise. */
#define check(ok) ((ok) ? (void)0 : failed(__LINE__, #ok))
static _Noreturn void failed(int line, const char *what)
{
        fprintf(stderr, "fuzz-sysfs.c:%d: %s\n", line, what);
        if (root[0])
                remove_root();
        abort();
}

/* A directory of this process on a tmpfs, made once: runs only rewrite what
 * is in it, so its cost is the few files of each input. */
static void setup_root(void)
{
        const char *tmp = getenv("TMPDIR");

        if (access("/dev/shm", W_OK) == 0)
                tmp = "/dev/shm";
        else if (!tmp)
                tmp = "/tmp";
        for (unsigned n = 0; n < 4; n++) {
                char name[32];

                snprintf(name, sizeof(name), "/nodes/%u/name", n);
                check(strstr(names[NODE_NAME(n)], name) != NULL); /* NODE_NAME() follows names[] */
        }
        check(snprintf(root, sizeof(root), "%s/fuzz-sysfs-%d", tmp, (int)getpid()) < (int)sizeof(root));
        remove_root(); /* left by an earlier process with this pid */
        check(mkdir(root, 0700) == 0);
        atexit(remove_root);
}

static void path_of(char *buf, size_t size, size_t name, size_t len)
{
        check(snprintf(buf, size, "%s/%.*s", root, (int)len, names[name]) < (int)size);
}

static void note_made(size_t name, size_t len, bool dir)
{
        check(n_made < ELEMENTSOF(made));
        made[n_made++] = (struct made){ .name = (uint8_t)name, .len = (uint16_t)len, .dir = dir };
}

/* mkdir -p of the first len bytes of names[name], going up only as far as
 * a directory is missing: most records go where an earlier one made the
 * directories. false when a file is where a directory belongs. */
static bool make_dir(size_t name, size_t len)
{
        const char *slash = memrchr(names[name], '/', len);
        char path[PATH_MAX];

        path_of(path, sizeof(path), name, len);
        if (mkdir(path, 0700) < 0) {
                if (errno == EEXIST)
                        return true; /* or a file, which the open below it then finds */
                if (errno != ENOENT || !slash || !make_dir(name, (size_t)(slash - names[name])) ||
                    mkdir(path, 0700) < 0)
                        return false;
        }
        note_made(name, len, true);
        return true;
}

/* Makes names[name] with its parents; a record whose place is taken by
 * something of the other kind (a file for a directory) is left out. */
static void put(size_t name, const uint8_t *bytes, size_t size)
{
        const char *n = names[name];
        size_t len = strlen(n);
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;

        if (n[len - 1] == '/') {
                (void)make_dir(name, len - 1);
                return;
        }
        path_of(path, sizeof(path), name, len);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == ENOENT && make_dir(name, (size_t)(strrchr(n, '/') - n)))
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
                note_made(name, len, false);
        else if (errno == EEXIST)
                fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* EISDIR when a directory is there */
        if (fd < 0)
                return;
        for (size_t done = 0; done < size;) {
                ssize_t w = write(fd, bytes + done, size - done);

                check(w > 0);
                done += (size_t)w;
        }
        content[name] = bytes;
        content_len[name] = size;
}

static void clear_tree(void)
{
        char path[PATH_MAX];

        while (n_made > 0) {
                const struct made *m = &made[--n_made];

                path_of(path, sizeof(path), m->name, m->len);
                check((m->dir ? rmdir(path) : unlink(path)) == 0);
        }
        memset(content, 0, sizeof(content));
}

static void check_diags(struct qf_diags *d)
{
        check(d->n <= QF_DIAG_MAX);
        /* every warning names the file it is about, which is in the tree */
        for (size_t i = 0; i < d->n; i++)
                check(d->items[i].file && d->items[i].message && strncmp(d->items[i].file, root, strlen(root)) == 0);
        qf_diags_clear(d);
}

static bool is_errno(int r)
{
        return r == 0 || (r < 0 && r > -4096);
}

/* One process as qf_sysfs_read_process() reads it; its queue count, or -errno. */
static long read_process(const char *kfd, pid_t pid)
{
        struct qf_diags d = { 0 };
        struct qf_sysfs_process p;
        long n;
        int r;

        r = qf_sysfs_read_process(kfd, pid, &d, &p);
        check(is_errno(r));
        check_diags(&d);
        if (r < 0)
                return r;
        check(p.pid == pid && p.n_queues <= QF_MAX_QUEUES_PER_PROCESS && p.n_occupancy <= QF_MAX_GPUS);
        /* sorted by queue id, each queue once: a directory is one queue */
        for (size_t i = 1; i < p.n_queues; i++)
                check(p.queues[i - 1].queue_id < p.queues[i].queue_id);
        for (size_t i = 0; i < p.n_occupancy; i++)
                for (size_t j = 0; j < i; j++)
                        check(p.occupancy[i].gpu_id != p.occupancy[j].gpu_id);
        n = (long)p.n_queues;
        qf_sysfs_process_clear(&p);
        return n;
}

static void read_processes(const char *kfd)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n;
        int r;

        r = qf_sysfs_list_pids(kfd, &pids, &n);
        check(is_errno(r));
        if (r < 0)
                return;
        check(n <= QF_MAX_PROCESSES);
        /* sorted, each process once */
        for (size_t i = 0; i < n; i++)
                check(pids[i] > 0 && (i == 0 || pids[i - 1] < pids[i]));
        for (size_t i = 0; i < n; i++)
                if (pids[i] != FUZZ_PID)
                        (void)read_process(kfd, pids[i]);
}

/* gpreemptd's reading of the same process: the queue count qf_sysfs_read_process() gave. */
static void read_daemon(long n_queues)
{
        struct process_queues q;
        struct detector_queue_addr *queues = NULL;
        size_t n;
        int r;

        r = process_queues_read(root, FUZZ_PID, &q);
        check(is_errno(r) && (r < 0) == (n_queues < 0));
        if (r == 0) {
                check(q.n_queues == (size_t)n_queues && q.n_compute_queues <= q.n_queues);
                check(q.n_gpu_ids <= PROCESS_QUEUES_MAX_GPUS && q.n_gpu_ids <= q.n_queues);
                for (size_t i = 0; i < q.n_gpu_ids; i++)
                        for (size_t j = 0; j < i; j++)
                                check(q.gpu_ids[i] != q.gpu_ids[j]);
        }
        r = online_queues_read(root, FUZZ_PID, &queues, &n);
        check(is_errno(r));
        if (r == 0)
                free(queues);
}

/* A node's name is its name file without the trailing newline, or empty
 * when the file is missing or does not fit: never cut short. */
static void check_name(const struct qf_gpu *g)
{
        const uint8_t *c;
        size_t len;

        check(memchr(g->name, 0, sizeof(g->name)) && memchr(g->gfx, 0, sizeof(g->gfx)));
        if (g->node > 3 || !(c = content[NODE_NAME(g->node)]))
                return;
        len = content_len[NODE_NAME(g->node)];
        if (len + 1 >= sizeof(g->name)) {
                check(g->name[0] == 0);
                return;
        }
        while (len > 0 && (c[len - 1] == '\n' || c[len - 1] == ' '))
                len--;
        check(memcmp(g->name, c, len) == 0 && g->name[len] == 0);
}

static void read_topology(const char *kfd)
{
        struct qf_diags d = { 0 };
        _cleanup_free_ struct qf_gpu *gpus = NULL;
        size_t n;
        int r;

        r = qf_topology_read(kfd, &d, &gpus, &n);
        check(is_errno(r));
        check_diags(&d);
        if (r < 0)
                return;
        check(n <= QF_MAX_GPUS);
        for (size_t i = 0; i < n; i++) {
                struct qf_gpu g = gpus[i];

                /* sorted by node, each node once; CPU nodes are left out */
                check(g.gpu_id != 0 && (i == 0 || gpus[i - 1].node < g.node));
                check(g.drm_render_minor >= -1);
                check_name(&g);
                /* The fallback name only: a render node the input names
                 * would be a real device of this machine. */
                g.drm_render_minor = -1;
                qf_gpu_name_resolve(&g);
                check(memchr(g.marketing_name, 0, sizeof(g.marketing_name)) && !g.marketing_name_from_libdrm);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char kfd[128];

        if (!root[0])
                setup_root();
        for (const uint8_t *p = data, *end = data + size; p < end;) {
                const uint8_t *sep = memchr(p, SEP, (size_t)(end - p));
                const uint8_t *record_end = sep ? sep : end;

                if (record_end > p)
                        put((uint8_t)(p[0] - ' ') % ELEMENTSOF(names), p + 1, (size_t)(record_end - p - 1));
                p = record_end + (sep != NULL);
        }

        snprintf(kfd, sizeof(kfd), "%s/class/kfd/kfd", root);
        read_processes(kfd);
        read_daemon(read_process(kfd, FUZZ_PID));
        read_topology(kfd);
        clear_tree();
        return 0;
}
