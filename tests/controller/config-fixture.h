/* SPDX-License-Identifier: MIT */
/* A throw-away configuration directory for tests: gpreemptd.conf and workloads.d/. */
#pragma once

struct config_fixture {
        char dir[64];
};

/* Creates the directory (and workloads.d/); aborts the test on failure. */
void config_fixture_init(struct config_fixture *f);
/* Writes <dir>/<relpath> with the given text. */
void config_fixture_write(struct config_fixture *f, const char *relpath, const char *text);
void config_fixture_cleanup(struct config_fixture *f);
