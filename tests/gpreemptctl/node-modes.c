/* SPDX-License-Identifier: MIT */
#include "node-modes.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

int node_mode_run(const char *name, const struct node_mode *modes, size_t n_modes)
{
        for (size_t i = 0; i < n_modes; i++)
                if (strcmp(name, modes[i].name) == 0)
                        return _cmocka_run_group_tests(modes[i].name, modes[i].tests, modes[i].n_tests, NULL, NULL);
        fprintf(stderr, "unknown mode '%s'\n", name);
        return 2;
}
