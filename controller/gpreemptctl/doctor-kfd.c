/* SPDX-License-Identifier: MIT */
/*
 * doctor: /dev/kfd and its interface version. libgpreempt's gp_context_new()
 * opens the device and asks AMDKFD_IOC_GET_VERSION, as gpreemptd does at
 * every attach, and gp_explain() says what a failure means; this file only
 * splits that into the two checks. Opening /dev/kfd makes the kernel create
 * a KFD process for doctor itself, no one else (kfd-interface.md §8.1).
 */
#include "doctor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpreempt/gpreempt.h>

#include "cleanup.h"
#include "explain-sentence.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct gp_context *, gp_context_free);

void doctor_check_kfd(struct doctor *d)
{
        struct gp_context_opts opts = { .sz = sizeof(opts), .kfd_path = d->paths.kfd_device };
        _cleanup_(gp_context_freep) struct gp_context *context = NULL;
        _cleanup_free_ char *sentence = NULL;
        enum doctor_status status = DOCTOR_FAILED;
        struct doctor_check *c;
        uint32_t major, minor;
        int r;

        r = gp_context_new(&opts, &context);
        if (r >= 0) {
                gp_context_kfd_version(context, &major, &minor);
                doctor_add(d, "kfd-device", DOCTOR_OK, "%s opens", d->paths.kfd_device);
                doctor_add(d, "kfd-version", DOCTOR_OK,
                           "KFD interface %u.%u: the debugger interface (DBG_TRAP, 1.13 or newer) is there", major,
                           minor);
                d->kfd_opened = true;
                return;
        }

        sentence = explain_sentence(r, GP_OP_OPEN, 0, -1, NULL);
        if (!sentence) {
                d->out_of_memory = true;
                return;
        }
        /* The device answered, but not with an interface gpreempt can use. */
        if (r == -GP_ERR_KFD_TOO_OLD || r == -ENOTTY || r == -EINVAL) {
                doctor_add(d, "kfd-device", DOCTOR_OK, "%s opens", d->paths.kfd_device);
                doctor_add_sentence(d, "kfd-version", DOCTOR_FAILED, sentence);
                return;
        }
        /* gpreemptd runs as root: a user's refusal says nothing about the daemon */
        if ((r == -EACCES || r == -EPERM) && geteuid() != 0)
                status = DOCTOR_WARNING;
        c = doctor_add_sentence(d, "kfd-device", status, sentence);
        /* gp_explain names /dev/kfd; say which file was tried when it was another one */
        if (c && strcmp(d->paths.kfd_device, "/dev/kfd") != 0) {
                _cleanup_free_ char *found = c->found;

                c->found = NULL;
                if (asprintf(&c->found, "%s (tried %s, from $GPREEMPT_KFD_DEVICE)", found, d->paths.kfd_device) < 0) {
                        c->found = TAKE_PTR(found);
                        d->out_of_memory = true;
                }
        }
        c = doctor_add(d, "kfd-version", status, "not known: %s cannot be opened", d->paths.kfd_device);
        doctor_advise(c, status == DOCTOR_FAILED ? "fix kfd-device first" : "run gpreemptctl doctor as root");
}
