/* SPDX-License-Identifier: MIT */
#include "proc-status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int proc_comm(pid_t pid, char **ret_comm)
{
        char path[64];

        proc_path(path, sizeof(path), pid, "comm");
        return read_first_line(path, ret_comm);
}
