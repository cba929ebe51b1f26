/* SPDX-License-Identifier: MIT */
#include "explain-sentence.h"

#include <string.h>

char *explain_sentence(int error, enum gp_op op, pid_t pid, int runtime_state, const struct gp_context *gp)
{
        struct gp_explain_opts opts = { .sz = sizeof(opts), .error = error, .op = op, .pid = pid,
                                        .runtime_state = runtime_state };
        char *sentence = NULL;

        if (gp)
                gp_context_kfd_version(gp, &opts.kfd_major, &opts.kfd_minor);
        if (gp_explain(&opts, &sentence) < 0)
                return strdup(strerror(error < 0 ? -error : error));
        return sentence;
}
