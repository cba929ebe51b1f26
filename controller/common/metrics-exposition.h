/* SPDX-License-Identifier: MIT */
/*
 * Metric families, as io.gpreempt.Metrics returns them (a JSON array of
 * {name, type, help, samples}), written in Prometheus's text exposition
 * format 0.0.4: "# HELP", "# TYPE", then a line per sample, histograms as
 * their _bucket (with le), _sum and _count series. The families come over
 * a socket: every name, label and type is checked before anything is
 * written.
 */
#pragma once

#include <stdio.h>

struct json_object;

/* The Content-Type of what metrics_exposition_write() writes. */
#define METRICS_EXPOSITION_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Writes families to out. Returns 0; -EBADMSG when a family is malformed (a
 * name the format does not allow, an unknown type, a sample without its
 * value), with what was wrong in *ret_problem (static text; may be NULL),
 * and then nothing is written; -EIO when out failed.
 */
int metrics_exposition_write(FILE *out, struct json_object *families, const char **ret_problem);
