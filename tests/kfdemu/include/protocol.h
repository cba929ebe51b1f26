/* SPDX-License-Identifier: MIT */
/*
 * The wire protocol between the kfdemu preload library (in every emulated
 * process) and the kfdemu server (kfdemu-run). One SOCK_SEQPACKET unix
 * socket, one message per packet, fixed-size little structs in host byte
 * order (both ends run on the same machine, built from the same tree).
 *
 * Two kinds of connections, told apart by their first message:
 *
 *   file     one per open("/dev/kfd") or open("/dev/dri/renderD<minor>").
 *            The client socket IS the fd the application sees, so
 *            close/dup/fork/exec act on it as on a real struct file; the
 *            server releases the file when its last reference goes (HUP).
 *            First and only message: OPEN.
 *
 *   channel  one per client thread, created lazily by the preload, carrying
 *            that thread's calls: IOCTL, MMAP, INTERRUPTED, EXEC, REFRESH, STAT.
 *            First message: HELLO. A file is named in a call by the inode number
 *            of the client's file socket (its identity while it is open).
 *
 * The caller's tgid is never taken from a message: the server reads
 * SO_PEERCRED. Thread ids are sent (the kernel's `current` is a thread) in
 * the client's pid namespace and translated by the server.
 */
#pragma once

#include <stdint.h>

/* The environment kfdemu-run gives COMMAND. */
#define KFDEMU_ENV_SOCKET "KFDEMU_SOCKET"
#define KFDEMU_ENV_PRELOAD "KFDEMU_PRELOAD"

/* The device the preload carries to the server, where kfdemu-run mounts
 * the server's socket. */
#define KFD_DEVICE "/dev/kfd"

enum kfdemu_msg_type {
        KFDEMU_MSG_OPEN = 1,        /* file: kfd_open          -> reply */
        KFDEMU_MSG_HELLO = 2,       /* channel: who is calling -> no reply */
        KFDEMU_MSG_IOCTL = 3,       /* channel: kfd_ioctl      -> reply, maybe later */
        KFDEMU_MSG_INTERRUPTED = 4, /* channel: a signal hit the waiting thread -> no reply */
        KFDEMU_MSG_MMAP = 5,        /* channel: kfd_mmap       -> mmap reply + SCM_RIGHTS */
        KFDEMU_MSG_EXEC = 6,        /* channel: the process has a new mm -> reply */
        KFDEMU_MSG_REFRESH = 7,     /* channel: a file generated on read is opened -> reply */
        KFDEMU_MSG_STAT = 8,        /* channel: which device a file is (fstat) -> reply */
};

struct kfdemu_msg_open {
        uint32_t type;
        int32_t tid;                /* gettid() of the opener */
        uint64_t file_inode;        /* st_ino of the client's socket */
        uint32_t render_minor;      /* 0: /dev/kfd; else the amdgpu render node /dev/dri/renderD<minor> */
        uint32_t pad;
};

struct kfdemu_msg_hello {
        uint32_t type;
        int32_t tid;                /* gettid() of the thread that owns the channel */
};

struct kfdemu_msg_ioctl {
        uint32_t type;
        uint32_t cmd;
        uint64_t file_inode;
        uint64_t arg;
        /* CLOCK_MONOTONIC ns at which the caller's ioctl() began: where a real
         * ioctl enters the kernel, before the emulator's socket hop. Only
         * kfdemu-run --trace reads it; the kernel's behaviour never does. */
        uint64_t entered_ns;
};

struct kfdemu_msg_interrupted {
        uint32_t type;
        uint32_t pad;
};

struct kfdemu_msg_mmap {
        uint32_t type;
        uint32_t pad;
        uint64_t file_inode;
        uint64_t offset;
        uint64_t length;
};

struct kfdemu_msg_exec {
        uint32_t type;
        uint32_t pad;
};

/* fstat of a kfdemu file: the reply's result is the render minor of a
 * render node, 0 for /dev/kfd; NOT_MINE for any other socket. */
struct kfdemu_msg_stat {
        uint32_t type;
        uint32_t pad;
        uint64_t file_inode;
};

/* The files the kernel generates when they are read (seq_file dumps,
 * hardware samples). The preload sends REFRESH before it lets an open or
 * stat of one through, and the server renders that file before replying,
 * so nothing is rendered that nobody reads. */
enum kfdemu_refresh_file {
        KFDEMU_REFRESH_MQDS = 1,         /* /sys/kernel/debug/kfd/mqds */
        KFDEMU_REFRESH_HQDS = 2,         /* /sys/kernel/debug/kfd/hqds */
        KFDEMU_REFRESH_RLS = 3,          /* /sys/kernel/debug/kfd/rls */
        KFDEMU_REFRESH_CU_OCCUPANCY = 4, /* .../kfd/kfd/proc/<tgid>/stats_<gpu_id>/cu_occupancy */
};

struct kfdemu_msg_refresh {
        uint32_t type;
        uint32_t file;              /* enum kfdemu_refresh_file */
        int32_t tgid;               /* cu_occupancy: the directory's pid (host namespace, as named) */
        uint32_t gpu_id;            /* cu_occupancy: the stats_<gpu_id> directory's */
};

/* The largest message a client may send; anything larger is hostile. */
#define KFDEMU_MSG_MAX sizeof(struct kfdemu_msg_mmap)
_Static_assert(sizeof(struct kfdemu_msg_open) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_hello) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_ioctl) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_interrupted) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_exec) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_refresh) <= KFDEMU_MSG_MAX, "message size");
_Static_assert(sizeof(struct kfdemu_msg_stat) <= KFDEMU_MSG_MAX, "message size");

enum kfdemu_reply_status {
        KFDEMU_REPLY_RESULT = 0,    /* `result` is the call's return (>= 0 or -errno); an
                                     * interrupted IOCTL may end with -512 (the kernel's
                                     * ERESTARTSYS): the preload restarts it after an
                                     * SA_RESTART handler, else returns EINTR */
        KFDEMU_REPLY_NOT_MINE = 1,  /* the fd is no kfdemu file: do the real syscall */
        KFDEMU_REPLY_SPINNING = 2,  /* not the end: the IOCTL entered the unmap fence wait,
                                     * which keeps its CPU (a schedule() loop) for `result`
                                     * ns, the modelled unmap; the reply follows */
};

struct kfdemu_reply {
        uint32_t status;
        /* An IOCTL whose kernel made a new fd for the caller (SMI_EVENTS):
         * the fd comes with the reply (SCM_RIGHTS), and this is 1 + the
         * offset in the ioctl's argument where the kernel put its number;
         * the preload writes there the number the fd got in the caller. */
        uint32_t fd_arg_offset;
        int64_t result;
};

/* The sockets the server hands out as SMI event fds are accepted from an
 * abstract address with this prefix, which is how the preload tells them
 * from an application's own sockets (getpeername). */
#define KFDEMU_SMI_SOCKET_PREFIX "kfdemu-smi/"

#define KFDEMU_MMAP_MAX_SEGMENTS 2

/* The kernel maps it VM_IO|VM_PFNMAP (a render node's BO): the preload
 * leaves PROT_READ out of a writable mapping, so that process_vm_readv
 * fails on it with EFAULT as GUP does on such a VMA (kfdemu-run(1),
 * DEVICE MEMORY). */
#define KFDEMU_MMAP_PFNMAP 1u

/* Sent with one memfd per segment in SCM_RIGHTS, in segment order. */
struct kfdemu_reply_mmap {
        uint32_t status;
        uint32_t n_segments;
        int64_t result;
        uint32_t flags;                  /* KFDEMU_MMAP_* */
        uint32_t reserved;
        struct {
                uint64_t memfd_offset;
                uint64_t length;
        } segments[KFDEMU_MMAP_MAX_SEGMENTS];
};
