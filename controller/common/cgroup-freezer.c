/* SPDX-License-Identifier: MIT */
#include "cgroup-freezer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "process-facts.h"

/* A state file is one short line (v1) or a few (v2). */
#define STATE_FILE_MAX 4096

/* The path of a "<id>:<controllers>:<path>" line whose controller list holds want ("" for the unified line). */
static const char *line_path(const char *line, const char *want)
{
        const char *controllers = strchr(line, ':'), *path;
        size_t n;

        if (!controllers)
                return NULL;
        controllers++;
        path = strchr(controllers, ':');
        if (!path)
                return NULL;
        n = (size_t)(path - controllers);
        path++;
        if (path[0] != '/')
                return NULL;
        if (!*want)
                return n == 0 && strncmp(line, "0:", 2) == 0 ? path : NULL;
        for (const char *c = controllers; c < controllers + n;) {
                size_t len = strcspn(c, ",:");

                if (len == strlen(want) && strncmp(c, want, len) == 0)
                        return path;
                c += len + 1;
        }
        return NULL;
}

/* Whether a path has a ".." component: what a process outside our cgroup namespace shows ("/../.."). */
static bool climbs(const char *path)
{
        for (const char *p = path; *p;) {
                size_t len;

                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return true;
                p += len;
        }
        return false;
}

int cgroup_freezer_parse_membership(const char *text, char **ret_path)
{
        _cleanup_free_ char *copy = strdup(text);
        const char *v1 = NULL, *v2 = NULL;
        char *save = NULL;

        *ret_path = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (!v1)
                        v1 = line_path(line, "freezer");
                if (!v2)
                        v2 = line_path(line, "");
        }
        if (!v1 && !v2)
                return CGROUP_FREEZER_NONE;
        /* joined onto /sys/fs/cgroup it would name a file outside it, or another cgroup's */
        if (climbs(v1 ? v1 : v2))
                return -EXDEV;
        *ret_path = strdup(v1 ? v1 : v2);
        if (!*ret_path)
                return -ENOMEM;
        return v1 ? CGROUP_FREEZER_V1 : CGROUP_FREEZER_V2;
}

bool cgroup_freezer_parse_frozen(enum cgroup_freezer_kind kind, const char *text)
{
        const char *frozen;

        if (kind == CGROUP_FREEZER_V1)
                return strncmp(text, "FROZEN", 6) == 0 || strncmp(text, "FREEZING", 8) == 0;
        if (kind != CGROUP_FREEZER_V2)
                return false;
        for (frozen = strstr(text, "frozen "); frozen; frozen = strstr(frozen + 1, "frozen "))
                if (frozen == text || frozen[-1] == '\n')
                        return frozen[strlen("frozen ")] == '1';
        return false;
}

int cgroup_freezer_state_file(const char *proc_root, const char *cgroup_root, pid_t pid, char **ret)
{
        _cleanup_free_ char *path = NULL, *text = NULL, *cgroup = NULL;
        int kind, r;

        *ret = NULL;
        if (asprintf(&path, "%s/%d/cgroup", proc_root, (int)pid) < 0)
                return -ENOMEM;
        r = process_facts_read_file(path, PROCESS_FACT_MAX, &text, NULL);
        if (r < 0)
                return r;
        kind = cgroup_freezer_parse_membership(text, &cgroup);
        if (kind <= CGROUP_FREEZER_NONE)
                return kind;
        /* the root cgroup cannot be frozen (nor has it these files) */
        if (strcmp(cgroup, "/") == 0)
                return CGROUP_FREEZER_NONE;
        if (asprintf(ret, "%s%s%s/%s", cgroup_root, kind == CGROUP_FREEZER_V1 ? "/freezer" : "", cgroup,
                     kind == CGROUP_FREEZER_V1 ? "freezer.state" : "cgroup.events") < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return kind;
}

int cgroup_freezer_is_frozen(enum cgroup_freezer_kind kind, const char *state_file)
{
        _cleanup_free_ char *text = NULL;
        int r = process_facts_read_file(state_file, STATE_FILE_MAX, &text, NULL);

        if (r < 0)
                return r;
        return cgroup_freezer_parse_frozen(kind, text);
}
