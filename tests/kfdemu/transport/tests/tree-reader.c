/* SPDX-License-Identifier: MIT */
/*
 * A reader of the node's files that kfdemu's preload cannot see: glob(3)
 * and nftw(3) open directories through glibc's internal calls, and this
 * program is also built statically (test-tree-readers.py).
 *
 *   tree-reader glob PATTERN   each match and its first line, "PATH TEXT"
 *   tree-reader walk DIR...    each path under each DIR, symlinks not followed
 */
#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_glob(const char *pattern)
{
        glob_t g = { 0 };
        int r = glob(pattern, 0, NULL, &g);

        if (r == GLOB_NOMATCH)
                return EXIT_SUCCESS;
        if (r != 0) {
                fprintf(stderr, "tree-reader: glob %s failed (%d)\n", pattern, r);
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < g.gl_pathc; i++) {
                char line[256] = "";
                FILE *f = fopen(g.gl_pathv[i], "re");

                if (!f || !fgets(line, sizeof(line), f)) {
                        fprintf(stderr, "tree-reader: cannot read %s: %s\n", g.gl_pathv[i], strerror(errno));
                        if (f)
                                fclose(f);
                        globfree(&g);
                        return EXIT_FAILURE;
                }
                fclose(f);
                line[strcspn(line, "\n")] = '\0';
                printf("%s %s\n", g.gl_pathv[i], line);
        }
        globfree(&g);
        return EXIT_SUCCESS;
}

static int print_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        puts(path);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "glob") == 0)
                return print_glob(argv[2]);
        if (argc >= 3 && strcmp(argv[1], "walk") == 0) {
                for (int i = 2; i < argc; i++)
                        if (nftw(argv[i], print_entry, 16, FTW_PHYS) != 0) {
                                fprintf(stderr, "tree-reader: cannot walk %s: %s\n", argv[i], strerror(errno));
                                return EXIT_FAILURE;
                        }
                return EXIT_SUCCESS;
        }
        fprintf(stderr, "usage: tree-reader glob PATTERN | tree-reader walk DIR...\n");
        return EXIT_FAILURE;
}
