/* SPDX-License-Identifier: MIT */
/*
 * Internals of libkfdemu-preload.so, the library kfdemu-run preloads into
 * COMMAND and everything it starts (see protocol.h for the other end).
 *
 * Global state, all of it set once and then only read:
 *   - the server's socket path, copied from the environment once, on
 *     first use (pthread_once; later setenv or unsetenv by the application
 *     does not matter);
 *   - the real libc functions, looked up once each with dlsym(RTLD_NEXT);
 *   - the pthread key whose destructor closes a thread's call channel.
 * Per thread: the call channel (preload-channel.c).
 */
#pragma once

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PRELOAD_EXPORT __attribute__((visibility("default")))

/* The next definition of a libc function (libc's own, or a sanitizer's
 * interceptor), looked up once per call site. */
void *preload_next_symbol(const char *name);
#define REAL(name)                                                               \
        ({                                                                       \
                static void *real_fn_;                                           \
                void *fn_ = __atomic_load_n(&real_fn_, __ATOMIC_ACQUIRE);        \
                if (!fn_) {                                                      \
                        fn_ = preload_next_symbol(#name);                        \
                        __atomic_store_n(&real_fn_, fn_, __ATOMIC_RELEASE);      \
                }                                                                \
                (__typeof__(&name))fn_;                                          \
        })

/* The server's socket, or NULL outside kfdemu-run. */
const char *preload_socket_path(void);
/* If `path` (as an open names it) is a file the kernel generates on
 * read, has the server render it now (preload-refresh.c). */
void preload_refresh_on_read(const char *path);

/* The inode of `fd` if it is a socket (a kfdemu file is one), else 0. */
uint64_t preload_socket_inode(int fd);

/* One request on the calling thread's channel, one reply back.
 * `interruptible`: a signal handler running while the server has the call
 * asleep is reported to it (KFDEMU_MSG_INTERRUPTED), as a signal wakes an
 * interruptible sleep in the kernel. Received fds (SCM_RIGHTS) land in
 * `fds` (at most `max_fds`, O_CLOEXEC). Returns the reply's size or -errno
 * for a transport failure. */
ssize_t preload_call(const void *request, size_t request_size, bool interruptible, void *reply,
                     size_t reply_size, int *fds, unsigned max_fds, unsigned *ret_n_fds);

/* preload-signals.c: whether the handler that last interrupted this
 * thread's wait asked for SA_RESTART (reset before each wait). */
void preload_signals_before_wait(void);
bool preload_signals_handler_restarts(void);
/* The last interruptible call of this thread was interrupted, and by a
 * handler with SA_RESTART (preload-channel.c). */
bool preload_call_interrupt_restarts(void);

/* open("/dev/kfd") (render_minor 0) or open("/dev/dri/renderD<render_minor>"):
 * a new file connection; returns the fd or -1 + errno. */
int preload_device_open(uint32_t render_minor, int flags);
