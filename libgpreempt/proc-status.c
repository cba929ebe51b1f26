/* SPDX-License-Identifier: MIT */
#include "proc-status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

int read_first_line(const char *path, char **ret_line)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        ssize_t n;

        f = fopen(path, "re");
        if (!f)
                return NEG_ERRNO();
        n = getline(&line, &size, f);
        if (n < 0)
                return feof(f) ? -ENODATA : NEG_ERRNO();
        if (n > 0 && line[n - 1] == '\n')
                line[n - 1] = '\0';
        *ret_line = TAKE_PTR(line);
        return 0;
}

static void proc_path(char *buf, size_t size, pid_t pid, const char *file)
{
        if (pid == 0)
                snprintf(buf, size, "/proc/self/%s", file);
        else
                snprintf(buf, size, "/proc/%d/%s", (int)pid, file);
}

int proc_status_field(pid_t pid, const char *key, char **ret_value)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0, key_len = strlen(key);
        char path[64];
        ssize_t n;

        proc_path(path, sizeof(path), pid, "status");
        f = fopen(path, "re");
        if (!f)
                return NEG_ERRNO();
        while ((n = getline(&line, &size, f)) >= 0) {
                char *value, *copy;

                if (strncmp(line, key, key_len) != 0 || line[key_len] != ':')
                        continue;
                value = line + key_len + 1;
                value += strspn(value, " \t");
                value[strcspn(value, "\n")] = '\0';
                copy = strdup(value);
                if (!copy)
                        return -ENOMEM;
                *ret_value = copy;
                return 0;
        }
        return -ENOENT;
}

/* /proc/<pid>/stat is one line of a few hundred bytes (fs/proc/array.c: do_task_stat). */
#define PROC_STAT_MAX 1024

int proc_stat_read(pid_t pid, struct proc_stat *ret_stat)
{
        _cleanup_close_ int fd = -1;
        struct proc_stat st = { 0 };
        char path[64], text[PROC_STAT_MAX + 1], *after_comm;
        size_t len = 0;
        int parent;

        proc_path(path, sizeof(path), pid, "stat");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();
        while (len < PROC_STAT_MAX) {
                ssize_t n = read(fd, text + len, PROC_STAT_MAX - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return NEG_ERRNO();
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (len == 0)
                return -ENODATA;
        text[len] = '\0';
        /* the command name is in parentheses and may hold anything, ')' and '\n' (PR_SET_NAME) included:
         * the whole file is read, and the last ')' ends it */
        after_comm = strrchr(text, ')');
        if (!after_comm)
                return -EBADMSG;
        /* fields 3 (state), 4 (ppid), 9 (flags) and 20 (num_threads) */
        if (sscanf(after_comm + 1, " %c %d %*s %*s %*s %*s %u %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %ld",
                   &st.state, &parent, &st.flags, &st.threads) != 4)
                return -EBADMSG;
        st.parent = parent;
        *ret_stat = st;
        return 0;
}

int proc_comm(pid_t pid, char **ret_comm)
{
        char path[64];

        proc_path(path, sizeof(path), pid, "comm");
        return read_first_line(path, ret_comm);
}
