/* SPDX-License-Identifier: MIT */
/*
 * Scope-bound resource handling for every gpreempt component, in the style of
 * systemd's _cleanup_: a variable declared with one of these is released when
 * it leaves scope, so error paths cannot leak. TAKE_PTR/TAKE_FD hand the
 * resource out of the scope (to a ret_* output) without releasing it.
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(freep)

/* close() that keeps errno: a cleanup must not clobber the error being returned. */
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

#define TAKE_PTR(p)                                                              \
        ({                                                                       \
                __typeof__(p) _taken = (p);                                      \
                (p) = NULL;                                                      \
                _taken;                                                          \
        })

#define TAKE_FD(fd)                                                              \
        ({                                                                       \
                int _taken = (fd);                                               \
                (fd) = -1;                                                       \
                _taken;                                                          \
        })

/* Define a cleanup function for a type's destructor: DEFINE_TRIVIAL_CLEANUP_FUNC(struct foo *, foo_free). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                  \
        static inline void func##p(type *p)                                      \
        {                                                                        \
                if (*p)                                                          \
                        func(*p);                                                \
        }

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_closedir_ _cleanup_(closedirp)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Returns -errno from a libc call that reports failure as -1 + errno. */
#define NEG_ERRNO() (errno > 0 ? -errno : -EIO)
