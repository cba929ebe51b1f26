/* SPDX-License-Identifier: MIT */
/* Running a program from a test and capturing what it prints. */
#pragma once

struct cli_output {
        char *out;
        char *err;
};

/* Runs argv (argv[0] is the path), feeding stdin_text (NULL: empty stdin).
 * Returns the exit status; fails the test if the program did not exit. */
int cli_run(const char *const *argv, const char *stdin_text, struct cli_output *ret);
void cli_output_free(struct cli_output *o);
