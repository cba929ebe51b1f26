/* SPDX-License-Identifier: MIT */
/*
 * doctor: gpreemptd's configuration, loaded with the daemon's own parser
 * (verify-config explains it in full). The loaded configuration stays for
 * the process checks, which classify each GPU process as the daemon would.
 */
#include "doctor.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "diag.h"

void doctor_check_config(struct doctor *d)
{
        struct diag diag = { 0 };
        struct doctor_check *c;
        size_t n_online = 0, n_offline = 0;
        struct stat st;
        int r;

        r = config_load(d->paths.config_dir, &d->config, &diag);
        if (r == -EACCES && diag.unreadable) {
                /* not a verdict: gpreemptd reads it as root */
                c = doctor_add(d, "configuration", DOCTOR_WARNING,
                               "the configuration in %s cannot be checked: this user may not read %s, which gpreemptd "
                               "reads as root",
                               d->paths.config_dir, diag.unreadable);
                doctor_advise(c, "run gpreemptctl doctor as root");
                diag_clear(&diag);
                return;
        }
        if (r < 0) {
                if (r == -EINVAL)
                        c = doctor_add(d, "configuration", DOCTOR_FAILED,
                                       "the configuration in %s is not valid: gpreemptd refuses to start with it, and a reload keeps the previous one",
                                       d->paths.config_dir);
                else
                        c = doctor_add(d, "configuration", DOCTOR_WARNING, "the configuration in %s cannot be read: %s",
                                       d->paths.config_dir, strerror(-r));
                if (r == -EINVAL && diag.n_messages)
                        doctor_advise(c, "%s (gpreemptctl verify-config lists every problem)", diag.messages[0]);
                else
                        doctor_advise(c, "run gpreemptctl verify-config (as root: gpreemptd reads it as root)");
                diag_clear(&diag);
                return;
        }
        diag_clear(&diag);
        for (size_t i = 0; i < d->config->n_workloads; i++) {
                n_online += d->config->workloads[i].class == WORKLOAD_CLASS_ONLINE;
                n_offline += d->config->workloads[i].class == WORKLOAD_CLASS_OFFLINE;
        }
        if (n_online && n_offline) {
                doctor_add(d, "configuration", DOCTOR_OK,
                           "the configuration in %s is valid: %zu online and %zu offline workload%s", d->paths.config_dir,
                           n_online, n_offline, n_offline == 1 ? "" : "s");
                return;
        }
        c = doctor_add(d, "configuration", DOCTOR_WARNING,
                       "the configuration in %s%s is valid but has %s: gpreemptd suspends offline work only while "
                       "online work runs, so it will suspend nothing until both are classified",
                       d->paths.config_dir, stat(d->paths.config_dir, &st) < 0 ? " (which does not exist)" : "",
                       !n_online && !n_offline ? "no workloads" : !n_online ? "no online workload" : "no offline workload");
        doctor_advise(c, "add [Workload] sections in %s/workloads.d/ (gpreemptd.conf(5)), or classify processes by "
                         "hand with gpreemptctl register",
                      d->paths.config_dir);
}
