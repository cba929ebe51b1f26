/* SPDX-License-Identifier: MIT */
#include "config-fixture.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

void config_fixture_init(struct config_fixture *f)
{
        char path[128];

        /* mkdtemp's template: the name, then six 'X' it replaces */
        snprintf(f->dir, sizeof(f->dir), "/tmp/gpreempt-test-%6s", "");
        memset(f->dir + strlen(f->dir) - 6, 'X', 6);
        assert_non_null(mkdtemp(f->dir));
        snprintf(path, sizeof(path), "%s/workloads.d", f->dir);
        assert_int_equal(mkdir(path, 0755), 0);
}

void config_fixture_write(struct config_fixture *f, const char *relpath, const char *text)
{
        char path[256];
        FILE *file;

        snprintf(path, sizeof(path), "%s/%s", f->dir, relpath);
        file = fopen(path, "we");
        assert_non_null(file);
        assert_int_equal(fwrite(text, 1, strlen(text), file), strlen(text));
        assert_int_equal(fclose(file), 0);
}

void config_fixture_cleanup(struct config_fixture *f)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
}
