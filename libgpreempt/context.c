/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "context.h"
#include "kfd.h"
#include "opts.h"

GP_EXPORT int gp_context_new(const struct gp_context_opts *opts, struct gp_context **ret_context)
{
        _cleanup_free_ struct gp_context *context = NULL;
        const char *path = "/dev/kfd";
        int r;

        if (!ret_context || !OPTS_VALID(opts))
                return -EINVAL;

        context = calloc(1, sizeof(*context));
        if (!context)
                return -ENOMEM;
        context->logger.fn = OPTS_GET(opts, log_fn, NULL);
        context->logger.userdata = OPTS_GET(opts, log_userdata, NULL);
        context->logger.max_level = OPTS_GET(opts, log_level, 0) ?: GP_LOG_INFO;
        path = OPTS_GET(opts, kfd_path, NULL) ?: path;

        r = kfd_open(path, &context->kfd_fd, &context->kfd_major, &context->kfd_minor);
        if (r < 0) {
                log_err(&context->logger, "cannot use %s: %s", path, strerror(-r));
                return r;
        }
        log_debug(&context->logger, "%s speaks KFD %u.%u", path, context->kfd_major,
                  context->kfd_minor);

        *ret_context = TAKE_PTR(context);
        return 0;
}

GP_EXPORT struct gp_context *gp_context_free(struct gp_context *context)
{
        if (!context)
                return NULL;
        /* Closing the file ends no debug session (kfd_release only drops a
         * reference); sessions end with their targets' detach. */
        close(context->kfd_fd);
        free(context);
        return NULL;
}

GP_EXPORT void gp_context_kfd_version(const struct gp_context *context, uint32_t *ret_major,
                                      uint32_t *ret_minor)
{
        *ret_major = context->kfd_major;
        *ret_minor = context->kfd_minor;
}
