/* SPDX-License-Identifier: MIT */
/*
 * The time model of one emulated GPU, free of threads, clocks and I/O so
 * that it can be driven by a fake clock: the engine (engine.c) feeds it
 * dispatches and the wall-clock time, the unit tests feed it made-up times.
 * README.md ("The GPU time model") describes the model and its parameters.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define EMU_MODEL_NEVER UINT64_MAX

/* Parameters of the model beyond emu_gpu_config (see config-default.c for
 * their defaults and where they come from). */
struct emu_model_params {
        uint64_t capacity;          /* workgroup slots: cu_count * wg_slots_per_cu */
        uint32_t wg_slots_per_cu;
        uint32_t cu_count;
        /* Fraction of a dispatch's alone-time before its end at which the
         * CP reports its read index: 0 at completion, 1 at launch. */
        double read_index_lead;
        /* Runlist oversubscription (pm_calc_rlib_size): more processes than
         * this, or more active queues than hqd_slots (0 = no limit), and
         * the HWS time-slices the runlist, quantum_ns per slice; a switch
         * saves the outgoing slice's waves and restores the incoming one's
         * at cwsr_ns_per_slot. */
        unsigned max_procs_per_quantum;
        unsigned hqd_slots;
        uint64_t quantum_ns;
        double cwsr_ns_per_slot;
};

/* One hardware queue as the model sees it: at most one dispatch in flight
 * (the CP processes a queue's AQL packets in order). */
struct emu_model_queue {
        struct emu_model_queue *next;
        uint32_t owner;              /* process tag, for per-process occupancy */
        bool suspended;
        uint64_t blocked_until;      /* CWSR restore or a queue-level preemption */
        unsigned slice;              /* its share of an oversubscribed runlist */

        bool busy;                   /* a dispatch is in flight */
        bool done;                   /* ... and has finished; the engine collects it */
        uint64_t duration_ns;        /* how long it runs alone on the whole device */
        uint64_t demand;             /* workgroup slots its current round can use */
        uint64_t tail_demand;        /* workgroups of its last, possibly partial, round */
        uint64_t wave_ns;            /* alone-time of one round of its workgroups */
        double tail_from_ns;         /* alone-time at which its last round starts */
        double progress_ns;          /* alone-time already done */
        uint64_t admit_at;           /* it gets no slots before this time */
        double alloc;                /* slots it holds now */
        uint64_t finished_at;        /* when its last dispatch finished ... */
        double finished_slots;       /* ... and the slots that dispatch held then */
        double index_from_ns;        /* alone-time at which the read index moves ... */
        bool index_due;              /* ... and has been reached: the engine reports it */

        /* CWSR accounting, in slots: waves the queue held when it left the
         * runlist, which the next unmap saves, and waves in its save area
         * that go back on the CUs once it is mapped and runs again. */
        double leaving_slots;
        double saved_slots;
};

struct emu_model {
        struct emu_model_params params;
        struct emu_model_queue *queues;
        uint64_t now;
        uint64_t stall_until;        /* device-wide preemption in progress */
        unsigned n_slices;           /* > 1: the runlist is oversubscribed ... */
        unsigned active_slice;       /* ... and the HWS runs this slice ... */
        uint64_t next_switch;        /* ... until then */
};

void emu_model_init(struct emu_model *m, const struct emu_model_params *params, uint64_t now);
void emu_model_add_queue(struct emu_model *m, struct emu_model_queue *q);
void emu_model_remove_queue(struct emu_model *m, struct emu_model_queue *q);

/* Run the model up to `now`. Finished dispatches get q->done set. */
void emu_model_advance(struct emu_model *m, uint64_t now);
/* The next time at which something changes on its own, or EMU_MODEL_NEVER. */
uint64_t emu_model_next_event(const struct emu_model *m);

/* Start a dispatch on an idle queue (call emu_model_advance(now) first). */
void emu_model_start(struct emu_model *m, struct emu_model_queue *q, uint64_t duration_ns,
                     uint32_t workgroups);
/* The engine took the finished dispatch: the queue is idle again. */
void emu_model_retire(struct emu_model *m, struct emu_model_queue *q);

/* Suspension: a suspended queue makes no progress; the slots its waves
 * held stay taken until the next unmap saves them (leaving_slots). On resume it
 * waits restore_ns (CWSR restore), or with EMU_MODEL_NEVER until the next
 * emu_model_unmap_all (an HWS queue runs once the runlist maps it), and
 * goes on where it stopped. */
void emu_model_set_suspended(struct emu_model *m, struct emu_model_queue *q, bool suspended,
                             uint64_t restore_ns);
/* An unmap of every queue (HWS): returns the slots of wave state it saves
 * (resident now, or left with a queue suspended since the last unmap), the
 * slots the remap restores (queues in the runlist with saved waves) and
 * the queues in the runlist. Call emu_model_stall_device after it. */
void emu_model_unmap_all(struct emu_model *m, double *ret_saved, double *ret_restored, unsigned *ret_mapped);
/* The removal of one queue (MES): the slots of wave state it saves. */
double emu_model_unmap_queue(struct emu_model *m, struct emu_model_queue *q);

/* Preemptions: nothing on the device / on one queue runs before `until`. */
void emu_model_stall_device(struct emu_model *m, uint64_t until);
void emu_model_stall_queue(struct emu_model *m, struct emu_model_queue *q, uint64_t until);

/* CUs occupied by the queues tagged `owner` (the sysfs cu_occupancy). */
int emu_model_cu_occupancy(const struct emu_model *m, uint32_t owner);
