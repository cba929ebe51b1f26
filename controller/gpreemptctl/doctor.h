/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl doctor: the checks a node must pass for gpreempt, each
 * read-only, and the report they fill. Every doctor-*.c file adds the
 * checks of one concern; verb-doctor.c runs them in order and prints the
 * report. What one check learns and a later one needs (the configuration,
 * gpreemptd's Status reply) is kept in struct doctor.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "paths.h"

struct config;
struct json_object;

enum doctor_status {
        DOCTOR_OK,
        DOCTOR_WARNING, /* gpreempt works, with a limit the operator should know */
        DOCTOR_FAILED,  /* gpreempt cannot do its work until this is fixed */
};

struct doctor_check {
        char *name;   /* "kfd-version", "gpu", "process" */
        enum doctor_status status;
        char *found;  /* one sentence: what the check saw */
        char *advice; /* one sentence: what to do; NULL when nothing */
        /* what the check is about, for the per-item checks: 0 when none */
        uint32_t gpu_id;
        pid_t pid;
};

struct doctor {
        struct paths paths; /* sysfs_root, proc_root, kfd_device, runtime_dir, config_dir */
        struct doctor_check *checks;
        size_t n_checks;
        bool out_of_memory;

        /* Learnt on the way, for the checks after. */
        bool kfd_opened;               /* /dev/kfd opened and speaks KFD >= 1.13 */
        bool debug_firmware_missing;   /* a GPU lacks TRAP_DEBUG_FIRMWARE_SUPPORTED */
        struct config *config;         /* NULL: it did not load */
        struct json_object *daemon_status; /* gpreemptd's Status reply; NULL: none */
};

/*
 * Adds a check with what it found (printf format) and returns it, so that
 * the caller can add advice and what it is about; NULL when out of memory
 * (the report then says so, and doctor fails).
 */
struct doctor_check *doctor_add(struct doctor *d, const char *name, enum doctor_status status, const char *format,
                                ...) __attribute__((format(printf, 4, 5)));
/* Sets the check's advice (printf format); c may be NULL (out of memory before). */
void doctor_advise(struct doctor_check *c, const char *format, ...) __attribute__((format(printf, 2, 3)));
/*
 * Adds a check from one of the sentences libgpreempt's gp_explain() and
 * daemon-client.c make, which say what failed and, after "; ", what to do:
 * the first part becomes what the check found, the rest its advice.
 */
struct doctor_check *doctor_add_sentence(struct doctor *d, const char *name, enum doctor_status status,
                                         const char *sentence);
/* "ok", "warning", "failed". */
const char *doctor_status_to_string(enum doctor_status status);
/* The worst status of the report. */
enum doctor_status doctor_worst(const struct doctor *d);
void doctor_print_text(const struct doctor *d);
void doctor_print_json(const struct doctor *d);
void doctor_done(struct doctor *d);

/*
 * The number (an optional minus, decimal digits, at most one newline) in
 * root/relative, whose path is written into ret_path for the caller's
 * sentence (doctor-files.c). Returns 0, -ENOENT when the file does not exist,
 * -EBADMSG when it holds no such number, or another -errno.
 */
int doctor_read_number(const char *root, const char *relative, char *ret_path, size_t path_size,
                       long long *ret_value);

/* The checks, in the order verb-doctor.c runs them (doctor-*.c). */
void doctor_check_kfd(struct doctor *d);         /* doctor-kfd.c: /dev/kfd and its version */
void doctor_check_amdgpu(struct doctor *d);      /* doctor-amdgpu.c: sched_policy, cwsr_enable, preemption timeout */
void doctor_check_gpus(struct doctor *d);        /* doctor-gpus.c: each GPU's debugging scope and firmware */
void doctor_check_ptrace(struct doctor *d);      /* doctor-ptrace.c: Yama ptrace_scope, capabilities */
void doctor_check_debugfs(struct doctor *d);     /* doctor-debugfs.c: lockdown, debugfs kfd/mqds */
void doctor_check_breakpoint(struct doctor *d);  /* doctor-breakpoint.c: perf_event_paranoid, a write breakpoint */
void doctor_check_config(struct doctor *d);      /* doctor-config.c: gpreemptd's configuration */
void doctor_check_daemon(struct doctor *d);      /* doctor-daemon.c: gpreemptd running and answering */
void doctor_check_processes(struct doctor *d);   /* doctor-processes.c: each process using the GPU */
