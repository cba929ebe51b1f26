/* SPDX-License-Identifier: MIT */
#include "slurm-job-record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "diag.h"
#include "ini-reader.h"

/* Root's alone: owned by root, and neither its group nor others may write it (or replace what is in it). */
static bool root_only(const struct stat *st)
{
        return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

struct reading {
        struct slurm_job_record *record;
        bool in_section;
        bool oom;
};

static void on_section(void *userdata, const char *file, unsigned line, const char *name)
{
        struct reading *r = userdata;

        (void)file;
        (void)line;
        r->in_section = strcmp(name, "SlurmJob") == 0;
}

static void on_entry(void *userdata, const char *file, unsigned line, const char *key, const char *value)
{
        struct reading *r = userdata;
        char **member = NULL;

        (void)file;
        (void)line;
        if (!r->in_section)
                return;
        if (strcmp(key, "Partition") == 0)
                member = &r->record->partition;
        else if (strcmp(key, "QOS") == 0)
                member = &r->record->qos;
        else if (strcmp(key, "Account") == 0)
                member = &r->record->account;
        else if (strcmp(key, "Comment") == 0)
                member = &r->record->comment;
        /* Slurm leaves a variable empty or unset where it has no value: both say "none" */
        if (!member || !*value)
                return;
        free(*member);
        *member = strdup(value);
        if (!*member)
                r->oom = true;
}

int slurm_job_record_read(const char *dir, uint32_t job, struct slurm_job_record *ret)
{
        static const struct ini_handler handler = { .section = on_section, .entry = on_entry };
        struct slurm_job_record record = { .error = -ENOENT };
        struct reading reading = { .record = &record };
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct diag ignored = { 0 };
        struct stat st;
        int fd, r;

        *ret = record;
        if (!job)
                return 0;
        if (asprintf(&path, "%s/%u", dir, job) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0) {
                ret->error = -errno;
                return 0;
        }
        if (!root_only(&st)) {
                ret->error = -EPERM;
                return 0;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) {
                ret->error = errno == ELOOP ? -EPERM : -errno;
                return 0;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !root_only(&st)) {
                close(fd);
                ret->error = -EPERM;
                return 0;
        }
        f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        r = ini_read(f, path, &handler, &reading, &ignored);
        diag_clear(&ignored);
        record.error = r;
        if (reading.oom) {
                slurm_job_record_done(&record);
                return -ENOMEM;
        }
        *ret = record;
        return 0;
}

void slurm_job_record_done(struct slurm_job_record *r)
{
        free(r->partition);
        free(r->qos);
        free(r->account);
        free(r->comment);
        *r = (struct slurm_job_record){ .error = -ENOENT };
}

const char *slurm_job_record_problem(int error)
{
        switch (error) {
        case 0:
                return NULL;
        case -ENOENT:
                return "no Prolog record for its job (configure gpreempt-slurm-job as slurmd's Prolog= and Epilog=)";
        case -EPERM:
                return "its job's Prolog record, or the directory it is in, is not root's alone, so it is not believed";
        default:
                return "its job's Prolog record cannot be read";
        }
}
