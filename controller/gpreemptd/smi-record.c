/* SPDX-License-Identifier: MIT */
#include "smi-record.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

struct cursor {
        const char *p, *end;
};

static bool at_end(const struct cursor *c)
{
        return c->p == c->end;
}

static bool take_char(struct cursor *c, char ch)
{
        if (at_end(c) || *c->p != ch)
                return false;
        c->p++;
        return true;
}

static int hex_digit(char ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        return -1;
}

/* Lower-case hex as the kernel's %x/%llx writes it, at least one digit, at most max. */
static bool take_hex(struct cursor *c, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;
        const char *start = c->p;

        for (int d; !at_end(c) && (d = hex_digit(*c->p)) >= 0; c->p++) {
                if (v > (max - (uint64_t)d) / 16)
                        return false;
                v = v * 16 + (uint64_t)d;
        }
        *ret = v;
        return c->p != start;
}

static bool take_decimal(struct cursor *c, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;
        const char *start = c->p;

        for (; !at_end(c) && *c->p >= '0' && *c->p <= '9'; c->p++) {
                uint64_t d = (uint64_t)(*c->p - '0');

                if (v > (max - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        *ret = v;
        return c->p != start;
}

/* The rest of the line as a string of at most max bytes, without NULs. */
static bool take_rest(struct cursor *c, char *buf, size_t max)
{
        size_t n = (size_t)(c->end - c->p);

        if (n > max || memchr(c->p, '\0', n))
                return false;
        memcpy(buf, c->p, n);
        buf[n] = '\0';
        c->p = c->end;
        return true;
}

/* "%x" or "%x %s": the sequence number, then the cause where the kernel gives one. */
static const char *parse_reset(struct cursor *c, struct smi_record *r)
{
        uint64_t v;

        if (!take_hex(c, UINT32_MAX, &v))
                return "expected the reset's sequence number (hexadecimal)";
        r->reset_seq = (uint32_t)v;
        if (at_end(c))
                return NULL;
        if (!take_char(c, ' ') || at_end(c))
                return "expected the reset's cause after its sequence number";
        if (!take_rest(c, r->reset_cause, SMI_RESET_CAUSE_MAX))
                return "the reset's cause is longer than a record or holds a NUL";
        return NULL;
}

/* "%lld -%d %x": the part QUEUE_EVICTION and QUEUE_RESTORE share. */
static const char *parse_queue_event_head(struct cursor *c, struct smi_record *r)
{
        uint64_t v;

        if (!take_decimal(c, INT64_MAX, &v))
                return "expected a timestamp in nanoseconds";
        r->timestamp_ns = v;
        if (!take_char(c, ' ') || !take_char(c, '-') || !take_decimal(c, INT_MAX, &v) || v == 0)
                return "expected \" -PID\" after the timestamp";
        r->pid = (pid_t)v;
        if (!take_char(c, ' ') || !take_hex(c, UINT32_MAX, &v))
                return "expected the GPU id (hexadecimal) after the pid";
        r->gpu_id = (uint32_t)v;
        return NULL;
}

static const char *parse_queue_eviction(struct cursor *c, struct smi_record *r)
{
        const char *why = parse_queue_event_head(c, r);
        uint64_t v;

        if (why)
                return why;
        if (!take_char(c, ' ') || !take_decimal(c, INT_MAX, &v) || !at_end(c))
                return "expected the eviction's trigger (a number) to end the record";
        r->trigger = (int)v;
        return NULL;
}

static const char *parse_queue_restore(struct cursor *c, struct smi_record *r)
{
        const char *why = parse_queue_event_head(c, r);

        if (why)
                return why;
        if (at_end(c))
                return NULL;
        if (!take_char(c, ' ') || at_end(c))
                return "expected the rescheduled flag after the GPU id";
        /* the kernel writes 'R' when rescheduled, another character (' ' or '0') when not */
        r->rescheduled = *c->p == 'R';
        c->p++;
        return at_end(c) ? NULL : "unexpected text after the rescheduled flag";
}

static const char *parse_vmfault(struct cursor *c, struct smi_record *r)
{
        uint64_t v;

        if (!take_hex(c, INT_MAX, &v) || v == 0 || !take_char(c, ':'))
                return "expected PID:TASK with the pid in hexadecimal";
        r->pid = (pid_t)v;
        if (!take_rest(c, r->task_name, SMI_TASK_NAME_MAX))
                return "the task name is longer than 16 bytes or holds a NUL";
        return NULL;
}

int smi_record_parse(const char *line, size_t len, struct smi_record *ret, const char **ret_why)
{
        struct cursor c = { line, line + len };
        struct smi_record r = { 0 };
        const char *why = NULL;
        uint64_t event;

        if (!take_hex(&c, 63, &event) || event == 0) {
                *ret_why = "expected an event number (hexadecimal, 1 to 3f) at the start of the record";
                return -EINVAL;
        }
        if (!take_char(&c, ' ')) {
                *ret_why = "expected a space after the event number";
                return -EINVAL;
        }
        r.event = (enum smi_event)event;
        r.parsed = true;
        switch (event) {
        case SMI_EVENT_GPU_PRE_RESET:
        case SMI_EVENT_GPU_POST_RESET:
                why = parse_reset(&c, &r);
                break;
        case SMI_EVENT_QUEUE_EVICTION:
                why = parse_queue_eviction(&c, &r);
                break;
        case SMI_EVENT_QUEUE_RESTORE:
                why = parse_queue_restore(&c, &r);
                break;
        case SMI_EVENT_VMFAULT:
                why = parse_vmfault(&c, &r);
                break;
        case SMI_EVENT_THERMAL_THROTTLE:
        case SMI_EVENT_MIGRATE_START:
        case SMI_EVENT_MIGRATE_END:
        case SMI_EVENT_PAGE_FAULT_START:
        case SMI_EVENT_PAGE_FAULT_END:
        case SMI_EVENT_UNMAP_FROM_GPU:
        case SMI_EVENT_PROCESS_START:
        case SMI_EVENT_PROCESS_END:
                r.parsed = false;
                break;
        default:
                *ret_why = "unknown event number (a kernel newer than this daemon?)";
                return -EOPNOTSUPP;
        }
        if (why) {
                *ret_why = why;
                return -EINVAL;
        }
        *ret = r;
        return 0;
}

static void emit_line(const char *line, size_t len, const struct smi_stream_callbacks *cb, void *userdata)
{
        struct smi_record r;
        const char *why;

        if (smi_record_parse(line, len, &r, &why) < 0)
                cb->bad_record(why, line, len, userdata);
        else
                cb->record(&r, userdata);
}

void smi_stream_feed(struct smi_stream *s, const char *data, size_t n, const struct smi_stream_callbacks *cb,
                     void *userdata)
{
        while (n > 0) {
                const char *newline = memchr(data, '\n', n);
                size_t piece = newline ? (size_t)(newline - data) : n;

                if (!s->overlong && s->len + piece > sizeof(s->line)) {
                        /* report it once, with what it began with, and drop it up to its newline */
                        size_t keep = sizeof(s->line) - s->len;

                        memcpy(s->line + s->len, data, keep);
                        cb->bad_record("longer than any record the kernel writes", s->line, sizeof(s->line),
                                       userdata);
                        s->overlong = true;
                        s->len = 0;
                }
                if (!s->overlong) {
                        memcpy(s->line + s->len, data, piece);
                        s->len += piece;
                }
                if (!newline)
                        return;
                if (!s->overlong)
                        emit_line(s->line, s->len, cb, userdata);
                s->overlong = false;
                s->len = 0;
                data += piece + 1;
                n -= piece + 1;
        }
}
