/* SPDX-License-Identifier: MIT */
/*
 * Reading the small attribute files of sysfs and procfs, and walking the
 * directories they sit in, which are named by number.
 *
 * Kernel attributes are one page at most; anything that does not fit the
 * caller's buffer is an error rather than silently cut. Paths are opened
 * with open(2) on the full path (no openat on a directory fd) so that a
 * preload library watching paths sees them: the test emulator renders a
 * file the kernel generates on read (cu_occupancy) when it is opened.
 */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true when name is a plain decimal number of at most max, leading zeros
 * allowed, as a user may write a pid (queue_finder --pid-ns). */
bool qf_parse_decimal_name(const char *name, uint64_t max, uint64_t *ret);

/* The same for the name of a directory entry, as sysfs and procfs name pids,
 * queue ids and topology nodes: also false for a leading zero, which the
 * kernel never prints (%d, %u). The readers open an entry again by its
 * number, so "094314" would be read as "94314", listed twice. */
bool qf_parse_entry_name(const char *name, uint64_t max, uint64_t *ret);

/* Calls fn for each entry of dir named by a decimal number of at most max
 * (qf_parse_entry_name), in readdir order, with the inode number the listing
 * gave for it (d_ino). fn returns 0 to go on, > 0 to stop (the walk then
 * returns 0), or -errno, which the walk returns. -errno from opendir when
 * dir cannot be listed. */
typedef int (*qf_numbered_entry_fn)(const char *dir, uint64_t number, uint64_t ino, void *userdata);
int qf_for_each_numbered_entry(const char *dir, uint64_t max, qf_numbered_entry_fn fn, void *userdata);

/* snprintf for paths: -ENAMETOOLONG instead of a silently cut path. */
int qf_pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads the whole file into buf (NUL-terminated); -EFBIG when it does not fit. */
int qf_read_file(const char *path, char *buf, size_t size, size_t *ret_len);

/* A decimal unsigned value, optionally followed by one newline (procfs queue
 * attributes have none, most sysfs attributes have one). */
int qf_read_u64(const char *path, uint64_t *ret);
/* The same with an optional minus sign (/proc/sys/kernel/perf_event_paranoid can be -1). */
int qf_read_s64(const char *path, int64_t *ret);
