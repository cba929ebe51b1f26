/* SPDX-License-Identifier: MIT */
/*
 * gpu/'s private state behind the `hw` pointers of state.h, and the
 * functions its files share. Everything here is protected by node->lock.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu-model.h"
#include "gpu.h"

/* Hardware contexts (a doorbell frame, per process and GPU) the aperture
 * holds: 64 processes on 16 GPUs, more than the scale case of
 * docs/evaluation.md §2 (64 processes on 8 GPUs). */
#define EMU_MAX_FRAMES 1024u
#define EMU_PAGE_SIZE 4096u

/* Time of one MES REMOVE_QUEUE (one queue unmapped, no runlist rebuilt),
 * to be calibrated; emu_gpu_config has no field for it yet. */
#define EMU_MES_REMOVE_QUEUE_US 50u

/* One process's doorbell frame on one GPU: page 0 of the frame lives at
 * aperture offset EMU_PAGE_SIZE * (1 + index); page 1 is the node strobe. */
struct emu_frame {
        bool used;
        pid_t tgid;
        unsigned gpu_slot;            /* index in node->gpus */
};

/* Rendered debugfs text kept until what it shows changes (render-debugfs.c). */
struct emu_text_cache {
        char *data;
        size_t len;
        uint64_t key;
        bool valid;
};
void emu_text_cache_free(struct emu_text_cache *c);

/* A completion that kernel/ asked for with emu_gpu_complete_after. */
struct emu_pending_call {
        struct emu_pending_call *next;
        uint64_t due_ns;
        struct emu_call *call;
        long ret;
};

/* Shared by all GPUs of a node: the aperture and the model thread. */
struct emu_node_hw {
        int aperture_fd;
        uint8_t *aperture;            /* the server's own mapping of the whole memfd */
        size_t aperture_size;
        struct emu_frame frames[EMU_MAX_FRAMES];
        struct emu_pending_call *pending_calls; /* by due time */
        struct emu_text_cache sdma_text;        /* hqds: the SDMA engines, never changes */
        uint64_t mqds_key, hqds_key, rls_key;   /* of the debugfs files last written */
        pthread_t thread;
        bool thread_running;
        bool stop;
};

struct emu_gpu_hw {
        struct emu_node_hw *node_hw;
        struct emu_model model;
        /* dqm->current_logical_xcc_start: incremented per queue created
         * (init_mqd_v9_4_3), gives each queue's compute_current_logic_xcc_id. */
        uint32_t logical_xcc_next;
        uint64_t next_mqd_addr;       /* where the next queue's (invented) MQD buffer goes */
        struct emu_text_cache hqds_text;        /* this GPU's HIQ and CP slots in hqds */
};

struct emu_queue_hw {
        struct emu_model_queue mq;
        struct emu_queue *q;
        unsigned frame;
        uint64_t next_fetch;          /* index of the next AQL packet to read */
        /* The doorbell as the model thread last saw it: the packets below it
         * were published by then, so they may start at any later model time. */
        uint64_t doorbell_seen;
        uint64_t doorbell_now;        /* read in this look, before its clock */
        uint64_t read_index;          /* what the CP last reported to read_pointer_address */
        bool barrier_waiting;         /* a barrier-AND at next_fetch waits for its signals */
        /* The dispatch in flight: its completion signal (0 = none) and the
         * model time the CP began it, for the signal's timestamps. */
        uint64_t completion_signal;
        uint64_t started_ns;
        uint32_t logical_xcc_start;
        uint64_t mqd_gpu_addr;
        struct emu_text_cache mqds_text;        /* this queue's part of mqds */
};

/* clock.c */
uint64_t emu_now_ns(void);

/* doorbell.c */
int emu_aperture_open(struct emu_node_hw *nh);
void emu_aperture_close(struct emu_node_hw *nh);
int emu_frame_get(struct emu_node_hw *nh, pid_t tgid, unsigned gpu_slot, unsigned *ret_frame);
void emu_frames_release(struct emu_node_hw *nh, pid_t tgid);
uint32_t *emu_node_strobe(struct emu_node_hw *nh);
uint64_t *emu_doorbell_word(struct emu_node_hw *nh, unsigned frame, unsigned slot);
void emu_completion_strobe_bump(struct emu_node_hw *nh, unsigned frame, unsigned slot);
/* Wake the model thread (kernel/ changed something it must look at). */
void emu_node_strobe_bump(struct emu_node_hw *nh);
/* The dword offset of a doorbell in the (invented) doorbell BAR, as
 * CP_HQD_PQ_DOORBELL_CONTROL carries it. */
uint32_t emu_doorbell_bar_dword(unsigned frame, unsigned slot);

/* engine.c */
struct emu_node_hw *emu_node_hw_of(struct emu_node *node);
unsigned emu_gpu_slot(const struct emu_gpu *gpu);
int emu_gpu_cu_occupancy(struct emu_gpu *gpu, pid_t tgid);

/* gpu-vm.c: the GPU's reads and writes of q's process's memory at a GPU
 * virtual address (the BO mapped there in q's GPU's VM, else the process's
 * own memory). 0 or -EFAULT, also for a short transfer. */
int emu_gpu_vm_read(const struct emu_queue *q, void *dst, uint64_t addr, size_t len);
int emu_gpu_vm_write(const struct emu_queue *q, uint64_t addr, const void *src, size_t len);

/* render-file.c: files under cfg.root, each written atomically. */
int emu_render_write(const char *root, const char *relpath, const char *data, size_t len);
int emu_render_printf(const char *root, const char *relpath, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
int emu_render_remove_tree(const char *root, const char *relpath);
int emu_render_symlink(const char *root, const char *relpath, const char *target);
/* An empty directory (and its parents). */
int emu_render_dir(const char *root, const char *relpath);

/* render-sysfs.c */
int emu_render_topology(struct emu_node *node);
void emu_render_cu_occupancy(struct emu_process *p, struct emu_gpu *gpu);
void emu_render_cu_occupancy_on_read(struct emu_node *node, pid_t tgid, uint32_t gpu_id);
/* render-debugfs.c */
void emu_render_debugfs_file(struct emu_node *node, enum emu_render_on_read file);

/* render-mqd.c: the v9 compute MQD of one XCC, as kfd_mqd_manager_v9 fills it. */
#define EMU_V9_MQD_DWORDS 512u
#define EMU_V9_SDMA_MQD_DWORDS 128u
void emu_v9_compute_mqd(const struct emu_queue *q, unsigned xcc, uint32_t ret_mqd[EMU_V9_MQD_DWORDS]);
void emu_v9_sdma_mqd(const struct emu_queue *q, uint32_t ret_mqd[EMU_V9_SDMA_MQD_DWORDS]);
bool emu_queue_is_compute(const struct emu_queue *q);
/* Bytes between the MQDs of two XCCs (mqd_stride_v9). */
uint64_t emu_mqd_stride(const struct emu_queue *q);
