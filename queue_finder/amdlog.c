/* SPDX-License-Identifier: MIT */
/*
 * Parser for HIP/CLR logs written with AMD_LOG_LEVEL >= 3 (rocm-userspace.md
 * §6). A line is
 *
 *   [escapes] ":" level ":" [file ":" line ":"] " " usec ["d"] " us:" " "+ [ids " "*] message
 *
 * and the ids between the timestamp and the message take one of these forms
 * (queue_finder.1.scd has a real line of each, with its source):
 *
 *   "[pid:" pid " "* "tid:" " "* tid "]"        clr 6.x - 7.x at level >= 4
 *   pid " "* ":" " "* "[tid:" " "* tid "]"      ROCclr 5.x
 *   pid " "* ":" " "* "[" tid "]"               ROCm 4.5
 *   "[" tid "]"                                 ROCm 4.5, lines printed without the pid
 *   (nothing)                                   clr at level 3
 *
 * where pid is 1 to GP_PID_MAX_LIMIT (parse-pid.h), and tid is "0x", any
 * spaces (Windows builds pad it), and 1 to 16 hex digits, or bare hex
 * digits (4.5, and a 6.3.2 build after "tid: "). A line without a pid
 * belongs to the caller's pid for such lines, else to no known process.
 * (ROCm 4.5 names the pid only on HIP API lines, which the window scan
 * skips, not on its queue lines.) Text that starts like ids but breaks
 * the grammar (pid 0, a 17-digit tid, no "]") is a warning; the line's
 * message is still read, as belonging to no known process, since a
 * damaged pid may have named any.
 *
 * Messages used (everything else is skipped after a few byte compares):
 *   created hardware queue %p with size %d with priority %d, cooperative: %i   <= 6.1, %p = amd_queue_t
 *   Created SWq=%p to map on HWq=%p with size ..., cooperative: %i            >= 6.2, HWq = ring base
 *   acquireQueue refCount: %p (%d), [Ss]elected queue [with least ]refCount: %p (%d),
 *   releaseQueue refCount:%p (%d)
 *   Deleting hardware queue %p with refCount %d                               the queue destroyed
 *   HWq=0x%zx, Dispatch|BarrierAND|BarrierValue Header = ...                  <= 6.1
 *   SWq=0x%zx, HWq=0x%zx, id=%d, ... Header = ..., rptr=%u, wptr=%u           >= 6.2
 *   ShaderName : %s
 *
 * Speed matters (real logs are 6-13 M lines, 1.5-2.6 GB): runs of lines from
 * the reader (line-reader.h) are scanned 64 bytes at a time for newlines and
 * for byte pairs that every parsed message holds (log-window.h); only the
 * lines with a pair are split out and parsed, the rest are counted. Then a
 * fixed set of prefix compares, a hash table from (pid, address) to the
 * queue record with a one-entry cache in front, and no allocation per line.
 * Memory is constant apart from one record per queue.
 */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "cleanup.h"
#include "line-reader.h"
#include "log-window.h"
#include "parse-pid.h"
#include "scan.h"
#include "sources.h"

/* The clr prefix (file padded to 25, line, usec) ends well before this. */
#define PREFIX_WINDOW 192
/* Where damaged ids are looked for their "]": the longest form, "[pid:"
 * with seven digits and padding, "tid: 0x", padding and sixteen digits,
 * is under 50 bytes. */
#define IDS_WINDOW 64
/* Until some log line is found, this many lines are read in full, so that
 * log lines behind a journald prefix count even when none holds a mark. */
#define PROBE_LINES 1000
/* Threads whose last ShaderName is remembered until their next dispatch. */
#define PENDING_KERNELS_BITS 6
#define PENDING_KERNELS (1 << PENDING_KERNELS_BITS)
/* The pid of a line that names none, inside this file only: real pids are
 * positive, and the records handed out say has_pid instead. */
#define NO_PID ((pid_t) -1)

enum addr_kind {
        ADDR_AMD_QUEUE = 1,
        ADDR_RING_BASE = 2,
        ADDR_LEGACY_HWQ = 3,
};

struct slot {
        uint64_t addr;
        pid_t pid;
        uint8_t kind;       /* 0 = empty */
        uint32_t index;     /* into out.queues */
};

struct pending_kernel {
        uint64_t tid;
        pid_t pid;
        bool valid;
        char name[sizeof(((struct qf_log_queue *) 0)->last_kernel)];
};

/* The end of a queue's last packet line, where ">= 6.2" puts rptr and wptr. */
struct packet_tail {
        char text[63];
        uint8_t len;
};

struct log_parser {
        const char *name;
        struct qf_diags *diags;
        struct qf_log out;
        struct packet_tail *tails;  /* parallel to out.queues */
        size_t n_tails;
        struct slot *slots;
        size_t n_slots;         /* power of two */
        size_t used_slots;
        struct slot cache;      /* last lookup hit */
        bool full_warned;
        struct pending_kernel pending[PENDING_KERNELS];
        pid_t unmarked_pid;     /* for lines naming no pid, or NO_PID */
        bool probing;           /* reading every line, PROBE_LINES */
        bool saw_prefixed_line; /* a log line after other text on its line */
        /* the ids text of the last line that had one, up to its "]" */
        char last_ids[48];
        size_t last_ids_len;
        enum qf_log_prefix last_prefix;
        pid_t last_pid;         /* as written, or NO_PID */
        uint64_t last_tid;
        /* set while one line is parsed */
        unsigned long lineno;
        pid_t pid;              /* NO_PID when nothing names it */
        bool pid_unnamed;       /* pid is unmarked_pid: the line named none */
        uint64_t tid;
};

static size_t slot_hash(pid_t pid, uint64_t addr, enum addr_kind kind)
{
        uint64_t h = (addr >> 8) ^ ((uint64_t) (uint32_t) pid << 32) ^ kind;
        h *= 0x9e3779b97f4a7c15ULL;
        return (size_t) (h >> 29);
}

static struct slot *find_slot(struct slot *slots, size_t n_slots, pid_t pid, uint64_t addr, enum addr_kind kind)
{
        size_t mask = n_slots - 1;
        for (size_t i = slot_hash(pid, addr, kind) & mask;; i = (i + 1) & mask) {
                struct slot *s = &slots[i];
                if (s->kind == 0 || (s->kind == kind && s->addr == addr && s->pid == pid))
                        return s;
        }
}

static struct qf_log_queue *lookup(struct log_parser *lp, uint64_t addr, enum addr_kind kind)
{
        if (lp->cache.kind == kind && lp->cache.addr == addr && lp->cache.pid == lp->pid)
                return &lp->out.queues[lp->cache.index];
        if (lp->n_slots == 0)
                return NULL;
        struct slot *s = find_slot(lp->slots, lp->n_slots, lp->pid, addr, kind);
        if (s->kind == 0)
                return NULL;
        lp->cache = *s;
        return &lp->out.queues[s->index];
}

static int grow_slots(struct log_parser *lp)
{
        size_t n = lp->n_slots ? lp->n_slots * 2 : 256;
        struct slot *slots = calloc(n, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < lp->n_slots; i++)
                if (lp->slots[i].kind)
                        *find_slot(slots, n, lp->slots[i].pid, lp->slots[i].addr, lp->slots[i].kind) = lp->slots[i];
        free(lp->slots);
        lp->slots = slots;
        lp->n_slots = n;
        return 0;
}

/* Makes addr (of the given kind) name queue q. */
static void index_queue(struct log_parser *lp, struct qf_log_queue *q, uint64_t addr, enum addr_kind kind)
{
        if ((lp->used_slots + 1) * 4 > lp->n_slots * 3 && grow_slots(lp) < 0)
                return;
        pid_t pid = q->has_pid ? q->pid : NO_PID;
        struct slot *s = find_slot(lp->slots, lp->n_slots, pid, addr, kind);
        if (s->kind == 0)
                lp->used_slots++;
        *s = (struct slot){ .addr = addr, .pid = pid, .kind = kind,
                            .index = (uint32_t) (q - lp->out.queues) };
        lp->cache = (struct slot){ 0 };
}

static struct qf_log_queue *new_queue(struct log_parser *lp)
{
        if (lp->out.n >= QF_MAX_LOG_QUEUES) {
                if (!lp->full_warned)
                        qf_diag_add(lp->diags, lp->name, lp->lineno,
                                    "more than %d queues in the log; ignoring further queues", QF_MAX_LOG_QUEUES);
                lp->full_warned = true;
                return NULL;
        }
        if (!QF_APPEND(lp->tails, lp->n_tails))
                return NULL;
        struct qf_log_queue *q = QF_APPEND(lp->out.queues, lp->out.n);
        if (!q) {
                lp->n_tails--;
                return NULL;
        }
        /* The array may have moved: cached slots hold indices, not pointers. */
        q->has_pid = lp->pid != NO_PID;
        q->pid = q->has_pid ? lp->pid : 0;
        q->priority = -1;
        q->cooperative = -1;
        return q;
}

static void set_amd_queue(struct log_parser *lp, struct qf_log_queue *q, uint64_t addr)
{
        if (q->has_amd_queue)
                return;
        q->has_amd_queue = true;
        q->amd_queue = addr;
        index_queue(lp, q, addr, ADDR_AMD_QUEUE);
}

static void set_ring_base(struct log_parser *lp, struct qf_log_queue *q, uint64_t addr)
{
        if (q->has_ring_base)
                return;
        q->has_ring_base = true;
        q->ring_base = addr;
        index_queue(lp, q, addr, ADDR_RING_BASE);
}

/*
 * A queue that refCount or "Deleting hardware queue" lines named before a
 * line that says what their address is (a log cut at its start, or put
 * together out of order): that line's queue. Those lines print the address
 * the creation line gives first, the ring base from ROCm 6.2 and the
 * amd_queue_t before, which is the meaning it now takes.
 */
static struct qf_log_queue *adopt_legacy(struct log_parser *lp, uint64_t addr)
{
        struct qf_log_queue *q = lookup(lp, addr, ADDR_LEGACY_HWQ);
        if (!q || q->has_ring_base || q->has_amd_queue)
                return NULL;
        q->has_legacy_hwq = false;
        return q;
}

/* The queue a (SWq, HWq) pair from a >= 6.2 line belongs to. */
static struct qf_log_queue *queue_by_pair(struct log_parser *lp, uint64_t swq, uint64_t hwq)
{
        struct qf_log_queue *q = lookup(lp, hwq, ADDR_RING_BASE);
        if (!q)
                q = lookup(lp, swq, ADDR_AMD_QUEUE);
        if (!q)
                q = adopt_legacy(lp, hwq);
        if (!q && !(q = new_queue(lp)))
                return NULL;
        set_ring_base(lp, q, hwq);
        set_amd_queue(lp, q, swq);
        return q;
}

/* The queue a pre-6.2 "HWq=" belongs to: whichever meaning the log already
 * established for that address, else kept as a legacy address. */
static struct qf_log_queue *queue_by_legacy_hwq(struct log_parser *lp, uint64_t addr)
{
        struct qf_log_queue *q = lookup(lp, addr, ADDR_AMD_QUEUE);
        if (!q)
                q = lookup(lp, addr, ADDR_RING_BASE);
        if (!q)
                q = lookup(lp, addr, ADDR_LEGACY_HWQ);
        if (q)
                return q;
        if (!(q = new_queue(lp)))
                return NULL;
        q->has_legacy_hwq = true;
        q->legacy_hwq = addr;
        index_queue(lp, q, addr, ADDR_LEGACY_HWQ);
        return q;
}

static void touch(struct log_parser *lp, struct qf_log_queue *q)
{
        if (!q->first_line)
                q->first_line = lp->lineno;
        q->last_line = lp->lineno;
        q->last_tid = lp->tid;
        lp->out.unmarked_pid_lines += lp->pid_unnamed;
}

static void malformed(struct log_parser *lp, const char *what)
{
        qf_diag_add(lp->diags, lp->name, lp->lineno, "malformed %s line", what);
}

/* An address as %p prints it: "0x" and hex digits with glibc; sixteen
 * upper-case digits and no prefix with the Windows C runtime ("Created
 * SWq=00000251006B0000", ROCm/TheRock#4604). Dispatch lines print
 * "0x%zx" everywhere. */
static bool scan_percent_p(struct qf_scan *s, uint64_t *ret)
{
        if (qf_scan_hex_ptr(s, ret))
                return true;
        struct qf_scan t = *s;
        if (!qf_scan_hex(&t, 16, ret) || t.p - s->p != 16)
                return false;
        *s = t;
        return true;
}

/* "with size %d with priority %d, cooperative: %i" */
static bool parse_creation_tail(struct qf_scan *s, struct qf_log_queue *q)
{
        uint64_t size, prio, coop;
        if (!QF_SCAN_LIT(s, " with size ") || !qf_scan_dec(s, UINT32_MAX, &size) ||
            !QF_SCAN_LIT(s, " with priority ") || !qf_scan_dec(s, 1000, &prio) ||
            !QF_SCAN_LIT(s, ", cooperative: ") || !qf_scan_dec(s, 1, &coop))
                return false;
        q->has_size = true;
        q->size_packets = size;
        q->priority = (int) prio;
        q->cooperative = (int) coop;
        return true;
}

/*
 * Whether a creation line's last address is followed by the space that
 * begins its tail (" with size "): a line cut right after it (the last
 * line of a truncated file, or a paste run into the next line) may have
 * cut the address too, which then names no queue ("HWq=0x7f1654" of
 * "HWq=0x7f1654e00000"). A tail cut further on leaves the address whole.
 */
static bool address_complete(struct log_parser *lp, struct qf_scan s, const char *what)
{
        if (QF_SCAN_LIT(&s, " "))
                return true;
        qf_diag_add(lp->diags, lp->name, lp->lineno,
                    "%s line cut or run together after its address: the address may be cut too; no queue taken", what);
        return false;
}

static void parse_created_62(struct log_parser *lp, struct qf_scan s)
{
        uint64_t swq, hwq;
        struct qf_scan t = s;
        if (!scan_percent_p(&t, &swq) || !QF_SCAN_LIT(&t, " to map on HWq=") || !scan_percent_p(&t, &hwq))
                return malformed(lp, "\"Created SWq\"");
        if (!address_complete(lp, t, "\"Created SWq\""))
                return;
        struct qf_log_queue *q = queue_by_pair(lp, swq, hwq);
        if (!q)
                return;
        if (!parse_creation_tail(&t, q))
                malformed(lp, "\"Created SWq\"");
        q->created_62 = true;
        q->created_line = lp->lineno;
        q->deleted_line = 0; /* a new queue at a destroyed one's address */
        touch(lp, q);
}

static void parse_created_old(struct log_parser *lp, struct qf_scan s)
{
        uint64_t amdq;
        if (!scan_percent_p(&s, &amdq))
                return malformed(lp, "\"created hardware queue\"");
        if (!address_complete(lp, s, "\"created hardware queue\""))
                return;
        struct qf_log_queue *q = lookup(lp, amdq, ADDR_AMD_QUEUE);
        if (!q)
                q = adopt_legacy(lp, amdq);
        if (!q && !(q = new_queue(lp)))
                return;
        set_amd_queue(lp, q, amdq);
        if (!parse_creation_tail(&s, q))
                malformed(lp, "\"created hardware queue\"");
        q->created_line = lp->lineno;
        q->deleted_line = 0; /* a new queue at a destroyed one's address */
        touch(lp, q);
}

/* "%p (%d)": the address is the ring base when the log uses the >= 6.2
 * wording, the amd_queue_t otherwise; either way it names a known queue. */
static void parse_refcount(struct log_parser *lp, struct qf_scan s)
{
        uint64_t addr, count;
        if (!scan_percent_p(&s, &addr) || !QF_SCAN_LIT(&s, " (") || !qf_scan_dec(&s, UINT32_MAX, &count) ||
            !QF_SCAN_LIT(&s, ")"))
                return malformed(lp, "refCount");
        struct qf_log_queue *q = queue_by_legacy_hwq(lp, addr);
        if (!q)
                return;
        if (count > q->max_refcount)
                q->max_refcount = count;
        touch(lp, q);
}

/*
 * "%p with refCount %d": the runtime destroys the queue (its pool lets go of
 * it at the device's end), so the KFD queue is gone from here on; its
 * address, as a refCount line's, names a known queue.
 */
static void parse_deleted(struct log_parser *lp, struct qf_scan s)
{
        uint64_t addr, count;
        if (!scan_percent_p(&s, &addr) || !QF_SCAN_LIT(&s, " with refCount ") || !qf_scan_dec(&s, UINT32_MAX, &count))
                return malformed(lp, "\"Deleting hardware queue\"");
        struct qf_log_queue *q = queue_by_legacy_hwq(lp, addr);
        if (!q)
                return;
        q->deleted_line = lp->lineno;
        touch(lp, q);
}

/* Reads the decimal number that ends at *end (exclusive), backwards. */
static bool scan_dec_backwards(const char *start, const char **end, uint64_t *ret)
{
        const char *p = *end;
        uint64_t v = 0, scale = 1;
        unsigned digits = 0;
        while (p > start && p[-1] >= '0' && p[-1] <= '9') {
                if (++digits > 19)
                        return false;
                v += (uint64_t) (p[-1] - '0') * scale;
                scale *= 10;
                p--;
        }
        if (digits == 0)
                return false;
        *end = p;
        *ret = v;
        return true;
}

static inline bool ends_with(const char *start, const char **end, const char *lit, size_t len)
{
        if ((size_t) (*end - start) < len || !qf_bytes_equal(*end - len, lit, len))
                return false;
        *end -= len;
        return true;
}

/* ", rptr=%u, wptr=%u" ends >= 6.2 packet lines; read from the end rather
 * than searched for. */
static void parse_pointers(const char *start, const char *end, struct qf_log_queue *q)
{
        uint64_t rptr, wptr;
        if (scan_dec_backwards(start, &end, &wptr) && ends_with(start, &end, ", wptr=", 7) &&
            scan_dec_backwards(start, &end, &rptr) && ends_with(start, &end, ", rptr=", 7)) {
                q->has_pointers = true;
                q->last_rptr = rptr;
                q->last_wptr = wptr;
        }
}

/* Only a queue's last pointers are reported, so each packet line just keeps
 * its tail and the numbers are read once per queue at the end. */
static void keep_tail(struct log_parser *lp, const struct qf_scan *s, const struct qf_log_queue *q)
{
        struct packet_tail *t = &lp->tails[q - lp->out.queues];
        if (qf_scan_left(s) >= sizeof(t->text)) {
                /* the usual case, a copy of constant size the compiler inlines */
                memcpy(t->text, s->end - sizeof(t->text), sizeof(t->text));
                t->len = sizeof(t->text);
        } else {
                memcpy(t->text, s->p, qf_scan_left(s));
                t->len = (uint8_t) qf_scan_left(s);
        }
}

/* Threads map to a slot of the pending-kernel table by their tid: one
 * compare per dispatch. Two busy threads in one slot only lose a name. */
static struct pending_kernel *pending_slot(struct log_parser *lp)
{
        uint64_t h = (lp->tid ^ (uint64_t) (uint32_t) lp->pid) * 0x9e3779b97f4a7c15ULL;
        return &lp->pending[h >> (64 - PENDING_KERNELS_BITS)];
}

static void take_pending_kernel(struct log_parser *lp, struct qf_log_queue *q)
{
        struct pending_kernel *k = pending_slot(lp);
        if (k->valid && k->tid == lp->tid && k->pid == lp->pid) {
                memcpy(q->last_kernel, k->name, sizeof(q->last_kernel));
                k->valid = false;
        }
}

/* After the queue address(es): "Dispatch Header = ..." or "Barrier... Header". */
static void count_packet(struct log_parser *lp, struct qf_scan s, struct qf_log_queue *q)
{
        if (QF_SCAN_LIT(&s, "Dispatch Header")) {
                q->dispatches++;
                take_pending_kernel(lp, q);
        } else if (QF_SCAN_LIT(&s, "Barrier")) {
                q->barriers++;
        } else {
                return malformed(lp, "AQL packet");
        }
        keep_tail(lp, &s, q);
        touch(lp, q);
}

static void parse_dispatch_62(struct log_parser *lp, struct qf_scan s)
{
        uint64_t swq, hwq, id;
        if (!qf_scan_hex_ptr(&s, &swq) || !QF_SCAN_LIT(&s, ", HWq=") || !qf_scan_hex_ptr(&s, &hwq) ||
            !QF_SCAN_LIT(&s, ", id=") || !qf_scan_dec(&s, UINT64_MAX, &id) || !QF_SCAN_LIT(&s, ", "))
                return malformed(lp, "AQL packet");
        struct qf_log_queue *q = queue_by_pair(lp, swq, hwq);
        if (!q)
                return;
        q->has_rocr_id = true;
        q->rocr_id = id;
        count_packet(lp, s, q);
}

static void parse_dispatch_legacy(struct log_parser *lp, struct qf_scan s)
{
        uint64_t hwq;
        if (!qf_scan_hex_ptr(&s, &hwq) || !QF_SCAN_LIT(&s, ", "))
                return malformed(lp, "AQL packet");
        struct qf_log_queue *q = queue_by_legacy_hwq(lp, hwq);
        if (q)
                count_packet(lp, s, q);
}

static void parse_shader_name(struct log_parser *lp, struct qf_scan s)
{
        struct pending_kernel *k = pending_slot(lp);
        size_t n = qf_scan_left(&s);
        if (n > sizeof(k->name) - 1)
                n = sizeof(k->name) - 1;
        /* Kept as logged; json-c escapes control characters on output. */
        memcpy(k->name, s.p, n);
        k->name[n] = 0;
        k->tid = lp->tid;
        k->pid = lp->pid;
        k->valid = true;
}

static void parse_message(struct log_parser *lp, struct qf_scan s)
{
        if (qf_scan_left(&s) < 4)
                return;
        switch (s.p[0]) {
        case 'S':
                if (QF_SCAN_LIT(&s, "SWq="))
                        return parse_dispatch_62(lp, s);
                if (QF_SCAN_LIT(&s, "ShaderName : "))
                        return parse_shader_name(lp, s);
                if (QF_SCAN_LIT(&s, "Selected queue refCount: "))
                        return parse_refcount(lp, s);
                return;
        case 'H':
                if (QF_SCAN_LIT(&s, "HWq="))
                        return parse_dispatch_legacy(lp, s);
                return;
        case 'C':
                if (QF_SCAN_LIT(&s, "Created SWq="))
                        return parse_created_62(lp, s);
                return;
        case 'c':
                if (QF_SCAN_LIT(&s, "created hardware queue "))
                        return parse_created_old(lp, s);
                return;
        case 'a':
                if (QF_SCAN_LIT(&s, "acquireQueue refCount: "))
                        return parse_refcount(lp, s);
                return;
        case 'r':
                if (QF_SCAN_LIT(&s, "releaseQueue refCount:")) {
                        qf_scan_spaces(&s);
                        return parse_refcount(lp, s);
                }
                return;
        case 'D':
                if (QF_SCAN_LIT(&s, "Deleting hardware queue "))
                        return parse_deleted(lp, s);
                return;
        case 's':
                if (QF_SCAN_LIT(&s, "selected queue refCount: ") ||
                    QF_SCAN_LIT(&s, "selected queue with least refCount: "))
                        return parse_refcount(lp, s);
                return;
        default:
                return;
        }
}

/* Colour escapes ("\e[32m") can precede the prefix or the message. */
static void skip_escapes(struct qf_scan *s)
{
        while (qf_scan_left(s) >= 2 && s->p[0] == '\033' && s->p[1] == '[') {
                const char *p = s->p + 2;
                while (p < s->end && !(*p >= 0x40 && *p <= 0x7e))
                        p++;
                s->p = p < s->end ? p + 1 : p;
        }
}

/* "0x", the spaces Windows builds pad with, and hex digits; or bare hex
 * digits, as ROCm 4.5 prints it. */
static bool scan_tid(struct qf_scan *s, uint64_t *ret)
{
        struct qf_scan t = *s;
        if (QF_SCAN_LIT(&t, "0x"))
                qf_scan_spaces(&t);
        if (!qf_scan_hex(&t, 16, ret))
                return false;
        *s = t;
        return true;
}

/* The ids forms of the header comment, each ending in "]". On failure *s
 * is left where the text stopped fitting them. */
static bool scan_ids(struct qf_scan *s, uint64_t *ret_pid, uint64_t *ret_tid, enum qf_log_prefix *ret_prefix)
{
        uint64_t pid = 0, tid;
        enum qf_log_prefix prefix;
        if (QF_SCAN_LIT(s, "[pid:")) {
                if (!qf_scan_dec(s, GP_PID_MAX_LIMIT, &pid) || pid == 0)
                        return false;
                qf_scan_spaces(s);
                if (!QF_SCAN_LIT(s, "tid:"))
                        return false;
                qf_scan_spaces(s);
                prefix = QF_LOG_PREFIX_CLR;
        } else if (QF_SCAN_LIT(s, "[")) {
                prefix = QF_LOG_PREFIX_TID;
        } else {
                if (!qf_scan_dec(s, GP_PID_MAX_LIMIT, &pid) || pid == 0)
                        return false;
                qf_scan_spaces(s);
                if (!QF_SCAN_LIT(s, ":"))
                        return false;
                qf_scan_spaces(s);
                if (!QF_SCAN_LIT(s, "["))
                        return false;
                if (QF_SCAN_LIT(s, "tid:"))
                        qf_scan_spaces(s);
                prefix = QF_LOG_PREFIX_ROCCLR;
        }
        if (!scan_tid(s, &tid) || !QF_SCAN_LIT(s, "]"))
                return false;
        *ret_pid = pid;
        *ret_tid = tid;
        *ret_prefix = prefix;
        return true;
}

/* Whether text that is no ids form starts as one would: "[pid:", "[tid:",
 * "[" and a number, or a number and ":". Messages start with a letter
 * ("Created", "hipMalloc") or a colour escape. */
static bool looks_like_ids(const char *p, const char *end)
{
        struct qf_scan s = { .p = p, .end = end };
        if (QF_SCAN_LIT(&s, "[pid:") || QF_SCAN_LIT(&s, "[tid:"))
                return true;
        if (QF_SCAN_LIT(&s, "["))
                return s.p < end && *s.p >= '0' && *s.p <= '9';
        while (s.p < end && *s.p >= '0' && *s.p <= '9')
                s.p++;
        if (s.p == p)
                return false;
        qf_scan_spaces(&s);
        return s.p < end && *s.p == ':';
}

/* Damaged ids: the message starts after their "]", or, without one close
 * by, where the ids stopped fitting the grammar. */
static void skip_damaged_ids(struct qf_scan *s, const char *start, const char *stopped)
{
        size_t window = (size_t) (s->end - start) < IDS_WINDOW ? (size_t) (s->end - start) : IDS_WINDOW;
        const char *bracket = memchr(start, ']', window);
        s->p = bracket ? bracket + 1 : stopped;
}

/* The ids after the timestamp, if any, and the spaces before the message. */
static void parse_ids(struct log_parser *lp, struct qf_scan *s)
{
        /* Runs of lines come from one thread: the same text as last time
         * means the same ids, without parsing them. The text ends at "]",
         * so a longer number cannot match it. */
        size_t n = lp->last_ids_len;
        if (n && qf_scan_left(s) >= n && qf_bytes_equal(s->p, lp->last_ids, n)) {
                s->p += n;
                lp->tid = lp->last_tid;
                lp->pid = lp->last_pid != NO_PID ? lp->last_pid : lp->unmarked_pid;
                lp->pid_unnamed = lp->last_pid == NO_PID && lp->unmarked_pid != NO_PID;
                lp->out.prefix = lp->last_prefix;
                qf_scan_spaces(s);
                return;
        }
        const char *start = s->p;
        uint64_t pid, tid;
        enum qf_log_prefix prefix;
        struct qf_scan t = *s;
        if (!scan_ids(&t, &pid, &tid, &prefix)) {
                lp->tid = 0;
                lp->out.prefix = QF_LOG_PREFIX_NONE;
                if (looks_like_ids(start, s->end)) {
                        malformed(lp, "pid/tid prefix");
                        skip_damaged_ids(s, start, t.p);
                        qf_scan_spaces(s);
                        lp->pid = NO_PID;
                        lp->pid_unnamed = false;
                        return;
                }
                lp->pid = lp->unmarked_pid;
                lp->pid_unnamed = lp->unmarked_pid != NO_PID;
                return;
        }
        *s = t;
        pid_t named = prefix == QF_LOG_PREFIX_TID ? NO_PID : (pid_t) pid;
        lp->tid = tid;
        lp->pid = named != NO_PID ? named : lp->unmarked_pid;
        lp->pid_unnamed = named == NO_PID && lp->unmarked_pid != NO_PID;
        lp->out.prefix = prefix;
        n = (size_t) (s->p - start);
        lp->last_ids_len = n <= sizeof(lp->last_ids) ? n : 0;
        memcpy(lp->last_ids, start, lp->last_ids_len);
        lp->last_pid = named;
        lp->last_tid = tid;
        lp->last_prefix = prefix;
        qf_scan_spaces(s);
}

/* Skips " <digits> us:" at q, and the spaces after it; NULL if it is not
 * there. Some clr 6.x builds print the number as "%lldd" ("1917470247183d
 * us:", ROCm/hip#3769). Without a space after "us:" the result follows the
 * ':', which the caller warns about. */
static inline const char *skip_timestamp(const char *q, const char *end)
{
        if (q < end && *q == ' ')
                q++;
        const char *digits = q;
        /* The timestamp is "%010lld": ten digits in one step, then any more. */
        if (end - q >= 10 && qf_all_digits8(q) && q[8] >= '0' && q[8] <= '9' && q[9] >= '0' && q[9] <= '9')
                q += 10;
        while (q < end && *q >= '0' && *q <= '9')
                q++;
        if (q == digits)
                return NULL;
        if (q < end && *q == 'd')
                q++;
        if (end - q < 4 || q[0] != ' ' || q[1] != 'u' || q[2] != 's' || q[3] != ':')
                return NULL;
        q += 4;
        while (q < end && *q == ' ')
                q++;
        return q;
}

/* The end of the ":<level>:" tag at p, or NULL. A prefix needs more than
 * four bytes anyway, so fewer are not looked at. */
static inline const char *level_tag_end(const char *p, const char *end)
{
        if (end - p < 4 || p[0] != ':' || p[1] < '0' || p[1] > '9')
                return NULL;
        if (p[2] == ':')
                return p + 3;
        if (p[2] >= '0' && p[2] <= '9' && p[3] == ':')
                return p + 4;
        return NULL;
}

/* What log_lines counts: lines that start, colour escapes aside, with a
 * level tag. */
static inline bool starts_as_log_line(const char *p, const char *end)
{
        if (p < end && p[0] == '\033') {
                struct qf_scan s = { .p = p, .end = end };
                skip_escapes(&s);
                p = s.p;
        }
        return level_tag_end(p, end) != NULL;
}

/* p points at ':' of ":<level>:". Returns false when this is no log prefix:
 *   :<level>:<file padded>:<line padded>: <usec> us:     or
 *   :<level>: <usec> us:                                 (no LOG_LOCATION) */
static bool parse_log_line(struct log_parser *lp, const char *p, const char *end)
{
        const char *q = level_tag_end(p, end);
        if (!q)
                return false;
        /* The usual layout first: file "%-25s:", line "%-4d:" (debug.cpp),
         * then no location at all. */
        const char *msg = NULL;
        if (end - q > 31 && q[25] == ':' && q[30] == ':')
                msg = skip_timestamp(q + 31, end);
        if (!msg)
                msg = skip_timestamp(q, end);
        if (!msg) {
                /* File name and line number, each ended by ':'; a plain
                 * loop beats memchr over these few bytes. */
                const char *window_end = end - q > PREFIX_WINDOW ? q + PREFIX_WINDOW : end;
                for (unsigned colons = 0; colons < 2; q++) {
                        if (q >= window_end)
                                return false;
                        colons += *q == ':';
                }
                msg = skip_timestamp(q, end);
                if (!msg)
                        return false;
        }
        if (msg[-1] == ':')
                malformed(lp, "log prefix");
        struct qf_scan s = { .p = msg, .end = end };
        parse_ids(lp, &s);
        if (s.p < s.end && s.p[0] == '\033')
                skip_escapes(&s);
        parse_message(lp, s);
        return true;
}

static void parse_line(struct log_parser *lp, const struct qf_line *l)
{
        lp->lineno = l->lineno;
        if (l->truncated)
                qf_diag_add(lp->diags, lp->name, l->lineno, "line longer than %d bytes; only its start was read",
                            QF_LINE_MAX);

        /* Logs copied through Windows tools end their lines in CRLF; the
         * CR would hide the numbers that end packet lines. */
        size_t len = l->len;
        if (len > 0 && l->p[len - 1] == '\r' && !l->truncated)
                len--;
        struct qf_scan s = qf_scan_init(l->p, len);
        if (s.p < s.end && s.p[0] == '\033')
                skip_escapes(&s);
        if (s.p < s.end && s.p[0] == ':' && parse_log_line(lp, s.p, s.end))
                return;

        /* Not a log line at its start. Programs print to the same stream
         * without a newline, so a log line can follow other text; the rare
         * non-log lines can afford a search. */
        bool binary = memchr(l->p, 0, len) != NULL;
        for (const char *c = s.p; c < s.end && (c = memchr(c, ':', (size_t) (s.end - c))); c++)
                if (parse_log_line(lp, c, s.end)) {
                        lp->saw_prefixed_line = true;
                        return;
                }
        if (binary)
                qf_diag_add(lp->diags, lp->name, l->lineno, "binary data (NUL bytes) in a line without a log prefix");
}

/* A line the window scan marked, or one too long (the warning): split as
 * every other reader of the block would, for the same line number,
 * truncation and end, and parsed. eol is its newline or the run's end. */
static void read_line(struct log_parser *lp, struct qf_line_block *b, const char *line, const char *eol)
{
        struct qf_line l;
        b->p = line;
        qf_line_block_take(b, eol < b->end ? eol : NULL, &l);
        lp->out.log_lines += starts_as_log_line(l.p, l.p + l.len);
        parse_line(lp, &l);
}

/* A line found by the slow path: read if it holds a mark or is too long
 * (the warning), else only counted. */
static void take_line(struct log_parser *lp, struct qf_line_block *b, const char *line, const char *eol, bool marked)
{
        if (marked || eol - line >= QF_LINE_MAX)
                return read_line(lp, b, line, eol);
        b->lineno++;
        lp->out.log_lines += starts_as_log_line(line, eol);
}

typedef struct qf_log_window (*window_scan)(const char *p);

/* The last bytes before end, at most a window's, with the rest of the
 * window masked off (the padding is a newline, which no pair holds). */
static inline __attribute__((always_inline)) struct qf_log_window last_window(const char *p, const char *end,
                                                                              window_scan scan)
{
        size_t left = (size_t) (end - p);
        char tail[QF_LOG_WINDOW + 1];
        memset(tail, '\n', sizeof(tail));
        memcpy(tail, p, left);
        struct qf_log_window w = scan(tail);
        uint64_t valid = left == QF_LOG_WINDOW ? UINT64_MAX : (UINT64_C(1) << left) - 1;
        w.newlines &= valid;
        w.marks &= valid;
        return w;
}

enum count_stop {
        COUNTED,        /* the window's lines are counted */
        AT_MARK,        /* *stop is the window's first mark */
        AT_LINE,        /* *stop ends a line to take on the slow path: too
                         * long, or starting with a colour escape */
};

/* Counts the lines of window w, at p, that end before its first mark, and
 * says where it stopped. Makes no calls, so that the loop over windows
 * keeps the vector constants in registers. */
static inline __attribute__((always_inline)) enum count_stop count_lines(struct log_parser *lp,
                                                                         struct qf_line_block *b, const char *p,
                                                                         struct qf_log_window w, const char **line,
                                                                         const char **stop)
{
        uint64_t before_mark = (w.marks & -w.marks) - 1; /* all ones without a mark */
        for (uint64_t nl = w.newlines & before_mark; nl; nl &= nl - 1) {
                const char *eol = p + __builtin_ctzll(nl);
                if (eol - *line >= QF_LINE_MAX || **line == '\033') {
                        *stop = eol;
                        return AT_LINE;
                }
                b->lineno++;
                lp->out.log_lines += level_tag_end(*line, eol) != NULL;
                *line = eol + 1;
        }
        if (!w.marks)
                return COUNTED;
        *stop = p + __builtin_ctzll(w.marks);
        return AT_MARK;
}

/* A run of lines, a window at a time, the way grep looks for matches: the
 * lines before a mark are counted, the line that holds it is found and
 * read, and the scan starts again after it (a packet line is ~400 bytes,
 * its mark in the first ~100). Inlined into one function per instruction
 * set, so that scan is inlined too. */
static inline __attribute__((always_inline)) void parse_block_with(struct log_parser *lp, struct qf_line_block *b,
                                                                   window_scan scan)
{
        const char *line = b->p, *end = b->end, *p = b->p, *stop = NULL;
        while (p < end) {
                enum count_stop why = COUNTED;
                while (end - p > QF_LOG_WINDOW && (why = count_lines(lp, b, p, scan(p), &line, &stop)) == COUNTED)
                        p += QF_LOG_WINDOW;
                if (why == COUNTED) {
                        why = count_lines(lp, b, p, last_window(p, end, scan), &line, &stop);
                        if (why == COUNTED)
                                break;
                }
                const char *eol = stop;
                if (why == AT_MARK) {
                        eol = memchr(stop, '\n', (size_t) (end - stop));
                        if (!eol)
                                eol = end;
                }
                take_line(lp, b, line, eol, why == AT_MARK);
                p = line = eol < end ? eol + 1 : end;
        }
        if (line < end)
                take_line(lp, b, line, end, false);
        b->p = end;
}

/* Until a log line is found, the first lines are read in full, marked or
 * not: a log of HIP API lines behind a journald prefix holds no mark, and
 * only a full read finds its lines (parse_line's search), which the
 * "no AMD log lines" warning needs to know. A real log's first line ends
 * this. */
static void probe_block(struct log_parser *lp, struct qf_line_block *b)
{
        struct qf_line l;
        while (lp->probing && qf_line_block_next(b, &l)) {
                lp->out.log_lines += starts_as_log_line(l.p, l.p + l.len);
                parse_line(lp, &l);
                lp->probing = l.lineno < PROBE_LINES && lp->out.log_lines == 0 && !lp->saw_prefixed_line;
        }
}

static void parse_block_baseline(struct log_parser *lp, struct qf_line_block *b)
{
        parse_block_with(lp, b, QF_LOG_WINDOW_BASELINE);
}

#if defined(QF_LOG_WINDOW_AVX2)
__attribute__((target("avx2"))) static void parse_block_avx2(struct log_parser *lp, struct qf_line_block *b)
{
        parse_block_with(lp, b, qf_log_window_avx2);
}
#endif

int qf_log_parse(int fd, const char *name, const pid_t *unmarked_pid, struct qf_diags *diags, struct qf_log *ret)
{
        _cleanup_line_reader_ struct qf_line_reader *reader = NULL;
        _cleanup_free_ struct log_parser *lp = calloc(1, sizeof(*lp));
        if (!lp)
                return -ENOMEM;
        lp->name = name;
        lp->diags = diags;
        lp->unmarked_pid = unmarked_pid ? *unmarked_pid : NO_PID;
        lp->probing = true;

        int r = qf_line_reader_new(fd, &reader);
        if (r >= 0) {
                void (*parse_block)(struct log_parser *, struct qf_line_block *) = parse_block_baseline;
#if defined(QF_LOG_WINDOW_AVX2)
                if (qf_log_window_have_avx2())
                        parse_block = parse_block_avx2;
#endif
                struct qf_line_block b = { 0 };
                while ((r = qf_line_reader_next_block(reader, &b)) > 0) {
                        probe_block(lp, &b);
                        parse_block(lp, &b);
                }
                lp->out.lines = b.lineno;
        }
        for (size_t i = 0; i < lp->out.n; i++)
                parse_pointers(lp->tails[i].text, lp->tails[i].text + lp->tails[i].len, &lp->out.queues[i]);
        free(lp->tails);
        free(lp->slots);
        if (r < 0) {
                qf_log_clear(&lp->out);
                return r;
        }
        /* Lines behind a journald or program prefix are not counted in
         * log_lines (only a line's start is looked at for that), but are
         * log lines all the same: found among the first PROBE_LINES lines,
         * or anywhere when they hold a mark. */
        if (lp->out.lines > 0 && lp->out.log_lines == 0 && !lp->saw_prefixed_line)
                qf_diag_add(diags, name, 0,
                            "no AMD log lines found (behind other text, only the first %d lines are searched); "
                            "the application must run with AMD_LOG_LEVEL=3 or higher", PROBE_LINES);
        *ret = lp->out;
        return 0;
}

void qf_log_clear(struct qf_log *l)
{
        free(l->queues);
        *l = (struct qf_log){ 0 };
}
