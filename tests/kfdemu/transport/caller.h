/* SPDX-License-Identifier: MIT */
/*
 * Who is calling: the thread id a client reports, translated into the
 * server's pid namespace (the kernel's `current` is a host task).
 */
#pragma once

#include <sys/types.h>

/* `tgid` is the peer's SO_PEERCRED pid (already in our namespace); `tid` is
 * gettid() as the client saw it. Returns 0, -ESRCH (no such thread in that
 * process) or -EINVAL. */
int caller_resolve_tid(pid_t tgid, pid_t tid, pid_t *ret_host_tid);
