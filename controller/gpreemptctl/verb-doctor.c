/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl doctor: the operator's preflight. Checks, without gpreemptd
 * and without touching any other process, everything a node needs for
 * gpreempt, and says for each check what it found and what to do
 * (doctor-*.c). The checks read; the only things doctor creates are its own
 * KFD process (opening /dev/kfd) and a breakpoint on its own memory, closed
 * at once.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "ctl-report.h"
#include "doctor.h"
#include "verbs.h"

static void print_help(void)
{
        printf("Usage: gpreemptctl doctor [--json]\n"
               "\n"
               "Check everything this node needs for gpreempt, without gpreemptd and without\n"
               "attaching to or stopping any process: /dev/kfd and its version, amdgpu's\n"
               "sched_policy, cwsr_enable and preemption timeout, each GPU's debugging support,\n"
               "Yama ptrace_scope, capabilities, kernel lockdown, debugfs kfd/mqds,\n"
               "perf_event_paranoid and a hardware breakpoint, gpreemptd's configuration,\n"
               "whether gpreemptd runs, and each process using the GPU (its class, tracer and\n"
               "ROCm runtime). Each check is ok, warning or failed, with what it found and\n"
               "what to do. Run it as root to check with gpreemptd's privileges.\n"
               "\n"
               "Exit status: 0 when no check failed (warnings allowed), 2 when one did.\n"
               "\n"
               "  --json       print an array of {check, status, found, advice} (and gpu_id or\n"
               "               pid for the checks of one GPU or process)\n"
               "  -h, --help   show this help\n");
}

int verb_doctor(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100 };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct doctor d = { 0 };
        enum doctor_status worst;
        bool json = false;
        int c;

        (void)globals;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        print_help();
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("doctor", argc, argv, options);
                }
        }
        if (optind < argc)
                return ctl_report_usage("doctor", "doctor takes no arguments.");
        if (paths_fill_defaults(&d.paths) < 0) {
                fputs("gpreemptctl: out of memory.\n", stderr);
                return CTL_EXIT_FAILURE;
        }

        doctor_check_kfd(&d);
        doctor_check_amdgpu(&d);
        doctor_check_gpus(&d);
        doctor_check_ptrace(&d);
        doctor_check_debugfs(&d);
        doctor_check_breakpoint(&d);
        doctor_check_config(&d);
        /* before the processes: gpreemptd's Status says what it knows of each */
        doctor_check_daemon(&d);
        doctor_check_processes(&d);

        if (json)
                doctor_print_json(&d);
        else
                doctor_print_text(&d);
        worst = doctor_worst(&d);
        doctor_done(&d);
        return worst == DOCTOR_FAILED ? CTL_EXIT_PRECONDITION : CTL_EXIT_OK;
}
