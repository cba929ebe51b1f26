/* SPDX-License-Identifier: MIT */
/*
 * Parser of kfdemu-run's node configuration file (inih does the INI syntax;
 * this file gives the keys their meaning and their limits).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "cleanup.h"
#include "gc-version.h"
#include "node-config.h"

enum field_kind { FIELD_U32, FIELD_BOOL, FIELD_NAME, FIELD_CHOICE };

struct gpu_field {
        const char *key;
        enum field_kind kind;
        size_t offset;
        uint32_t min, max;               /* FIELD_U32 only */
        const char *const *choices;      /* FIELD_CHOICE: the enum's names by value, NULL-terminated */
};

#define U32_FIELD(k, member, lo, hi) \
        { k, FIELD_U32, offsetof(struct emu_gpu_config, member), lo, hi, NULL }
#define BOOL_FIELD(k, member) { k, FIELD_BOOL, offsetof(struct emu_gpu_config, member), 0, 1, NULL }
#define CHOICE_FIELD(k, member, names)                                                             \
        { k, FIELD_CHOICE, offsetof(struct emu_gpu_config, member), 0, 0, names }

/* By enum value (state.h); parse_choice stores them as int. */
_Static_assert(sizeof(enum emu_preempt_model) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum emu_read_index_mode) == sizeof(int), "enum stored as int");
static const char *const preempt_models[] = { "waves", "constant", NULL };
static const char *const read_index_modes[] = { "completion", "dispatch", "master-xcc", NULL };

static const struct gpu_field gpu_fields[] = {
        /* KFD_GPU_ID_HASH_WIDTH is 16 bits; 0 lets the node derive one. */
        U32_FIELD("GpuId", gpu_id, 0, 0xffff),
        /* gfx9.0.0 (90000) .. gfx12 (120000 + stepping). */
        U32_FIELD("GfxTargetVersion", gfx_target_version, 10000, 199999),
        { "Name", FIELD_NAME, offsetof(struct emu_gpu_config, name), 0, 0, NULL },
        U32_FIELD("DeviceId", device_id, 0, 0xffff),
        U32_FIELD("PciRevision", pci_revision, 0, 0xff),
        U32_FIELD("LocationId", location_id, 0, 0xffff),
        U32_FIELD("Domain", domain, 0, 0xffff),
        U32_FIELD("DrmRenderMinor", drm_render_minor, 128, 255),
        U32_FIELD("NumXcc", num_xcc, 1, EMU_MAX_XCC),
        U32_FIELD("ComputeUnits", cu_count, 1, 1024),
        U32_FIELD("SimdPerCU", simd_per_cu, 1, 16),
        U32_FIELD("MaxWavesPerSimd", max_waves_per_simd, 1, 64),
        BOOL_FIELD("PerVmidDebug", per_vmid_debug),
        BOOL_FIELD("MES", mes),
        BOOL_FIELD("DebugFirmware", debug_firmware),
        BOOL_FIELD("CwsrWorkaround", cwsr_workaround),
        /* Model times are bounded by a minute: more would only hang tests. */
        CHOICE_FIELD("PreemptCostModel", preempt_model, preempt_models),
        U32_FIELD("PreemptMicroseconds", preempt_us, 0, 60000000),
        U32_FIELD("CwsrSaveMicroseconds", cwsr_save_us, 0, 60000000),
        U32_FIELD("CwsrRestoreMicroseconds", cwsr_restore_us, 0, 60000000),
        /* 0 = what kfd sizes the save area for; at most 16 MiB per CU. */
        U32_FIELD("CwsrBytesPerCU", cwsr_bytes_per_cu, 0, 16u << 20),
        /* 1 MB/s (a minute for 60 MB) .. 10 TB/s, beyond any memory. */
        U32_FIELD("CwsrMegabytesPerSecond", cwsr_mb_per_s, 1, 10000000),
        U32_FIELD("MapQueueMicroseconds", map_queue_us, 0, 60000),
        /* CP_IQ_WAIT_TIME2.SCH_WAVE is an 8-bit field. */
        U32_FIELD("DefaultGracePeriod", default_grace_period, 1, 0xff),
        U32_FIELD("ShaderClockMHz", shader_clock_mhz, 100, 10000),
        CHOICE_FIELD("ReadIndexAdvance", read_index_mode, read_index_modes),
        U32_FIELD("MasterXccLeadPercent", master_xcc_lead_percent, 0, 100),
        U32_FIELD("BarrierPollMicroseconds", barrier_poll_us, 1, 1000000),
        BOOL_FIELD("HwsTimeSlicing", hws_time_slicing),
        /* 16 VMIDs in all; 0 = what the part leaves to KFD. */
        U32_FIELD("KfdVmids", kfd_vmids, 0, 16),
        /* 2 MECs x 4 pipes x 8 queues at most. */
        U32_FIELD("HqdSlots", hqd_slots, 1, 64),
        U32_FIELD("HwsQuantumMicroseconds", hws_quantum_us, 1, 60000000),
        U32_FIELD("WorkgroupSlotsPerCU", wg_slots_per_cu, 1, 1024),
        /* Up to 16 TiB, more than any part has. */
        U32_FIELD("VramMiB", vram_mib, 1, 16u << 20),
};

/* Which [Faults] and [Kernel] keys the file gave: their checks need the
 * whole section. */
struct faults_seen {
        bool section;
        unsigned triggers;               /* OnPreemption=, EveryPreemption=, Probability= */
        bool kernel_key[4];              /* the kernel_behaviours[] set one by one */
};

struct parse_state {
        struct emu_config *cfg;
        struct node_config_file *file;
        struct faults_seen faults;
        char *error;
        size_t error_size;
        bool failed;
        unsigned line;                   /* inih reports lines only through its return */
};

static int parse_u32(const char *value, uint32_t min, uint32_t max, uint32_t *ret)
{
        char *end;

        if (*value == '\0' || *value == '-' || *value == '+')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 0);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = (uint32_t)v;
        return 0;
}

static int parse_bool(const char *value, bool *ret)
{
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(value, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(value, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static int parse_kfd_version(const char *value, uint32_t *ret_major, uint32_t *ret_minor)
{
        unsigned major, minor;
        int consumed = 0;

        if (sscanf(value, "%u.%u%n", &major, &minor, &consumed) != 2 || value[consumed] != '\0')
                return -EINVAL;
        /* GET_VERSION's major has always been 1; minors stop well below 100. */
        if (major != 1 || minor > 99)
                return -ERANGE;
        *ret_major = major;
        *ret_minor = minor;
        return 0;
}

__attribute__((format(printf, 2, 3)))
static int fail(struct parse_state *s, const char *fmt, ...)
{
        if (!s->failed) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(s->error, s->error_size, fmt, ap);
                va_end(ap);
                s->failed = true;
        }
        return 0;                        /* inih: stop and report this line */
}

static int value_error(struct parse_state *s, const char *section, const char *name, const char *value,
                       int r, const char *expected)
{
        return fail(s, "[%s] %s=%s is %s; expected %s", section, name, value,
                    r == -ERANGE ? "out of range" : "not valid", expected);
}

static int parse_choice(struct parse_state *s, const char *section, const char *name, const char *value,
                        const char *const *choices, int *field)
{
        char expected[128] = "one of";
        size_t len = strlen(expected);

        for (int i = 0; choices[i]; i++) {
                if (strcmp(value, choices[i]) == 0) {
                        *field = i;
                        return 1;
                }
                len += (size_t)snprintf(expected + len, len < sizeof(expected) ? sizeof(expected) - len : 0, "%s %s",
                                        i ? "," : "", choices[i]);
        }
        return value_error(s, section, name, value, -EINVAL, expected);
}

static int handle_node_key(struct parse_state *s, const char *name, const char *value)
{
        struct emu_config *cfg = s->cfg;
        uint32_t v;
        int r;

        if (strcmp(name, "KfdVersion") == 0) {
                r = parse_kfd_version(value, &cfg->kfd_major, &cfg->kfd_minor);
                return r < 0 ? value_error(s, "Node", name, value, r, "1.MINOR such as 1.13") : 1;
        }
        if (strcmp(name, "SchedPolicy") == 0) {
                /* amdgpu.sched_policy: 0 HWS, 1 HWS without oversubscription, 2 NO_HWS. */
                r = parse_u32(value, 0, 2, &v);
                if (r < 0)
                        return value_error(s, "Node", name, value, r, "0, 1 or 2");
                cfg->sched_policy = (int)v;
                return 1;
        }
        if (strcmp(name, "QueuePreemptionTimeoutMs") == 0) {
                r = parse_u32(value, 1, 600000, &cfg->queue_preemption_timeout_ms);
                return r < 0 ? value_error(s, "Node", name, value, r, "1..600000 milliseconds") : 1;
        }
        if (strcmp(name, "MaxNumOfQueuesPerDevice") == 0) {
                /* amdgpu.max_num_of_queues_per_device: 1..65536 (its bound in amdgpu_drv.c's range check). */
                r = parse_u32(value, 1, 65536, &cfg->max_num_of_queues_per_device);
                return r < 0 ? value_error(s, "Node", name, value, r, "1..65536 queues") : 1;
        }
        if (strcmp(name, "LocksAcrossWaits") == 0 || strcmp(name, "FenceWaitSpins") == 0) {
                bool *released = strcmp(name, "LocksAcrossWaits") == 0 ? &cfg->locks_released_while_waiting
                                                                        : &cfg->fence_wait_sleeps;
                bool modelled;

                r = parse_bool(value, &modelled);
                if (r < 0)
                        return value_error(s, "Node", name, value, r, "yes or no");
                *released = !modelled;
                return 1;
        }
        if (strcmp(name, "MemorySyncMicroseconds") == 0) {
                r = parse_u32(value, 0, 60000000, &cfg->memory_sync_us);
                return r < 0 ? value_error(s, "Node", name, value, r, "0..60000000 microseconds") : 1;
        }
        if (strcmp(name, "Gpus") == 0) {
                r = parse_u32(value, 1, EMU_MAX_GPUS, &v);
                if (r < 0)
                        return value_error(s, "Node", name, value, r, "1..16");
                s->file->n_gpus = v;
                return 1;
        }
        return fail(s, "[Node] has no key '%s'; known keys: KfdVersion, SchedPolicy, "
                       "QueuePreemptionTimeoutMs, MaxNumOfQueuesPerDevice, LocksAcrossWaits, FenceWaitSpins, "
                       "MemorySyncMicroseconds, Gpus", name);
}

static int handle_gpu_key(struct parse_state *s, const char *section, unsigned index, const char *name,
                          const char *value)
{
        struct emu_gpu_config *gpu = &s->cfg->gpus[index];
        char expected[64];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(gpu_fields); i++) {
                const struct gpu_field *f = &gpu_fields[i];
                void *field = (char *)gpu + f->offset;

                if (strcmp(name, f->key) != 0)
                        continue;
                switch (f->kind) {
                case FIELD_U32:
                        r = parse_u32(value, f->min, f->max, field);
                        snprintf(expected, sizeof(expected), "an integer in %" PRIu32 "..%" PRIu32, f->min, f->max);
                        return r < 0 ? value_error(s, section, name, value, r, expected) : 1;
                case FIELD_BOOL:
                        r = parse_bool(value, field);
                        return r < 0 ? value_error(s, section, name, value, r, "yes or no") : 1;
                case FIELD_NAME:
                        if (*value == '\0' || strlen(value) >= sizeof(gpu->name) || strpbrk(value, " \t/"))
                                return value_error(s, section, name, value, -EINVAL,
                                                   "1..31 characters without spaces or '/'");
                        snprintf(gpu->name, sizeof(gpu->name), "%s", value);
                        return 1;
                case FIELD_CHOICE:
                        return parse_choice(s, section, name, value, f->choices, field);
                }
        }

        size_t len = 0;
        char known[1024] = "";
        for (size_t i = 0; i < ELEMENTSOF(gpu_fields); i++)
                len += (size_t)snprintf(known + len, len < sizeof(known) ? sizeof(known) - len : 0, "%s%s",
                                        i ? ", " : "", gpu_fields[i].key);
        return fail(s, "[%s] has no key '%s'; known keys: %s", section, name, known);
}

/* [Kernel]: behaviours that changed between kernels, each on from the
 * mainline release named here unless the file sets it
 * (kfd-interface.md §16). */
static const struct kernel_behaviour {
        const char *key;
        size_t offset;
        uint32_t since;
} kernel_behaviours[] = {
        /* "drm/amdkfd: support per-queue reset on gfx9", Linux 6.12. */
        { "PerQueueReset", offsetof(struct emu_kernel_config, per_queue_reset), EMU_KERNEL_VERSION(6, 12) },
        /* "fix a vulnerability of integer overflow in kfd debugger" and
         * "fix NULL dereference in get_queue_ids()": 2026, in stable
         * updates of June 2026; the first release that can hold them. */
        { "QueueIdsLimit", offsetof(struct emu_kernel_config, queue_ids_limit), EMU_KERNEL_VERSION(7, 1) },
        { "QueueIdsNullCheck", offsetof(struct emu_kernel_config, queue_ids_null_check), EMU_KERNEL_VERSION(7, 1) },
        /* "fix UAF race in destroy_queue_cpsch", amd-gfx May 2026. */
        { "DestroyQueueSerialized", offsetof(struct emu_kernel_config, destroy_serialized),
          EMU_KERNEL_VERSION(7, 2) },
};
_Static_assert(ELEMENTSOF(kernel_behaviours) == ELEMENTSOF(((struct faults_seen *)0)->kernel_key),
               "one seen flag per kernel behaviour");

static int parse_kernel_version(const char *value, uint32_t *ret)
{
        unsigned major, minor;
        int consumed = 0;

        if (sscanf(value, "%u.%u%n", &major, &minor, &consumed) != 2 || value[consumed] != '\0' ||
            !isdigit((unsigned char)value[0]))
                return -EINVAL;
        /* amdkfd's debugger interface came with 6.5; 99 bounds a typo. */
        if (major < 6 || major > 99 || minor > 99 || (major == 6 && minor < 5))
                return -ERANGE;
        *ret = EMU_KERNEL_VERSION(major, minor);
        return 0;
}

static int handle_kernel_key(struct parse_state *s, const char *name, const char *value)
{
        struct emu_kernel_config *k = &s->cfg->kernel;
        int r;

        if (strcmp(name, "Version") == 0) {
                r = parse_kernel_version(value, &k->version);
                return r < 0 ? value_error(s, "Kernel", name, value, r, "MAJOR.MINOR from 6.5, such as 6.12") : 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(kernel_behaviours); i++) {
                if (strcmp(name, kernel_behaviours[i].key) != 0)
                        continue;
                r = parse_bool(value, (bool *)((char *)k + kernel_behaviours[i].offset));
                if (r < 0)
                        return value_error(s, "Kernel", name, value, r, "yes or no");
                s->faults.kernel_key[i] = true;
                return 1;
        }
        return fail(s, "[Kernel] has no key '%s'; known keys: Version, PerQueueReset, QueueIdsLimit, "
                       "QueueIdsNullCheck, DestroyQueueSerialized", name);
}

/* A comma-separated list of words from `words` (bit i for words[i]). */
static int parse_word_set(const char *value, const char *const *words, size_t n_words, uint32_t *ret)
{
        uint32_t set = 0;
        const char *p = value;

        for (;;) {
                size_t len = strcspn(p, ",");
                size_t i;

                for (i = 0; i < n_words; i++)
                        if (strlen(words[i]) == len && strncmp(p, words[i], len) == 0)
                                break;
                if (i == n_words)
                        return -EINVAL;
                set |= 1u << i;
                if (p[len] == '\0')
                        break;
                p += len + 1;
        }
        *ret = set;
        return 0;
}

/* "0.25", "1", "0.000001": a chance in parts per million. */
static int parse_probability(const char *value, uint32_t *ret_ppm)
{
        uint32_t ppm = 0, scale = 1000000;
        const char *p = value;

        if (!isdigit((unsigned char)*p))
                return -EINVAL;
        while (*p == '0')
                p++;
        if (*p == '1') {
                ppm = 1000000;
                p++;
        } else if (isdigit((unsigned char)*p)) {
                return -ERANGE;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return -EINVAL;
                for (; isdigit((unsigned char)*p); p++) {
                        scale /= 10;
                        if (scale == 0)
                                return -EINVAL;      /* finer than a millionth */
                        ppm += (uint32_t)(*p - '0') * scale;
                }
        }
        if (*p != '\0')
                return -EINVAL;
        if (ppm > 1000000)
                return -ERANGE;
        *ret_ppm = ppm;
        return 0;
}

static int handle_faults_key(struct parse_state *s, const char *name, const char *value)
{
        static const char *const kinds[] = { "timeout", "queue-hang", "error" };
        static const char *const ops[] = { "suspend", "resume" };
        struct emu_fault_config *f = &s->cfg->faults;
        uint32_t v;
        int r;

        if (strcmp(name, "Preemption") == 0) {
                r = parse_word_set(value, kinds, ELEMENTSOF(kinds), &v);
                if (r < 0 || (v & (v - 1)))
                        return value_error(s, "Faults", name, value, -EINVAL, "timeout, queue-hang or error");
                f->kind = (enum emu_fault_kind)(EMU_FAULT_TIMEOUT + __builtin_ctz(v));
                return 1;
        }
        if (strcmp(name, "Operations") == 0) {
                r = parse_word_set(value, ops, ELEMENTSOF(ops), &f->ops);
                return r < 0 ? value_error(s, "Faults", name, value, r, "suspend, resume or suspend,resume") : 1;
        }
        if (strcmp(name, "Gpus") == 0) {
                char copy[256];
                char *save = NULL;

                if (snprintf(copy, sizeof(copy), "%s", value) >= (int)sizeof(copy))
                        return value_error(s, "Faults", name, value, -EINVAL, "GPU indices 0..15, comma-separated");
                f->gpu_mask = 0;
                for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                        r = parse_u32(tok, 0, EMU_MAX_GPUS - 1, &v);
                        if (r < 0)
                                return value_error(s, "Faults", name, value, r, "GPU indices 0..15, comma-separated");
                        f->gpu_mask |= 1u << v;
                }
                return f->gpu_mask ? 1 : value_error(s, "Faults", name, value, -EINVAL,
                                                     "GPU indices 0..15, comma-separated");
        }
        if (strcmp(name, "OnPreemption") == 0 || strcmp(name, "EveryPreemption") == 0) {
                r = parse_u32(value, 1, UINT32_MAX, name[0] == 'O' ? &f->nth : &f->every);
                if (r < 0)
                        return value_error(s, "Faults", name, value, r, "a count from 1");
                s->faults.triggers++;
                return 1;
        }
        if (strcmp(name, "Probability") == 0) {
                r = parse_probability(value, &f->probability_ppm);
                if (r < 0)
                        return value_error(s, "Faults", name, value, r, "a chance from 0 to 1, such as 0.05");
                s->faults.triggers++;
                return 1;
        }
        if (strcmp(name, "Seed") == 0) {
                char *end;

                errno = 0;
                f->seed = strtoull(value, &end, 0);
                if (!isdigit((unsigned char)value[0]) || errno != 0 || *end != '\0')
                        return value_error(s, "Faults", name, value, -EINVAL, "an unsigned 64-bit integer");
                return 1;
        }
        if (strcmp(name, "WhileBusy") == 0) {
                r = parse_bool(value, &f->while_busy);
                return r < 0 ? value_error(s, "Faults", name, value, r, "yes or no") : 1;
        }
        if (strcmp(name, "QueueId") == 0) {
                r = parse_u32(value, 0, GP_KFD_MAX_QUEUES_PER_PROCESS - 1, &f->queue_id);
                if (r < 0)
                        return value_error(s, "Faults", name, value, r, "a queue id 0..1023");
                f->queue_id_set = true;
                return 1;
        }
        return fail(s, "[Faults] has no key '%s'; known keys: Preemption, Operations, Gpus, OnPreemption, "
                       "EveryPreemption, Probability, Seed, WhileBusy, QueueId", name);
}

static int parse_gpu_section(const char *section, unsigned *ret_index)
{
        uint32_t index;

        /* "GPU0".."GPU15", no leading zeros or signs. */
        if (strncmp(section, "GPU", 3) != 0 || section[3] == '\0' || (section[3] == '0' && section[4] != '\0') ||
            strspn(section + 3, "0123456789") != strlen(section + 3) ||
            parse_u32(section + 3, 0, EMU_MAX_GPUS - 1, &index) < 0)
                return -EINVAL;
        *ret_index = index;
        return 0;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
        struct parse_state *s = user;
        unsigned index;

        if (s->failed)
                return 1;                /* keep the first error only */
        if (strcmp(section, "Node") == 0)
                return handle_node_key(s, name, value);
        if (strcmp(section, "Faults") == 0) {
                s->faults.section = true;
                return handle_faults_key(s, name, value);
        }
        if (strcmp(section, "Kernel") == 0)
                return handle_kernel_key(s, name, value);
        if (parse_gpu_section(section, &index) == 0) {
                if (index + 1 > s->file->highest_gpu_section)
                        s->file->highest_gpu_section = index + 1;
                return handle_gpu_key(s, section, index, name, value);
        }
        if (*section == '\0')
                return fail(s, "key '%s' is outside any section; put it under [Node], [GPUn], [Faults] or [Kernel]",
                            name);
        return fail(s, "unknown section [%s]; sections are [Node], [GPU0]..[GPU15], [Faults] and [Kernel]",
                    section);
}

/* The line of `key` in section [`section`] of `f` (of the section's header
 * for a NULL key), or 0: inih reports lines only for errors found while a
 * key is read, and a combination of keys can only be judged once the whole
 * section is. */
static unsigned key_line(FILE *f, const char *section, const char *key)
{
        char line[512], current[64] = "";
        unsigned n = 0;

        rewind(f);
        while (fgets(line, sizeof(line), f)) {
                const char *p = line + strspn(line, " \t");
                size_t len = strcspn(p, " \t=");

                n++;
                if (*p == '[') {
                        snprintf(current, sizeof(current), "%.*s", (int)strcspn(p + 1, "]"), p + 1);
                        if (!key && strcmp(current, section) == 0)
                                return n;
                        continue;
                }
                if (!key)
                        continue;
                if (strcmp(current, section) == 0 && len == strlen(key) && strncmp(p, key, len) == 0 &&
                    p[len + strspn(p + len, " \t")] == '=')
                        return n;
        }
        return 0;
}

/* Combinations no GPU has: MES schedules GC 11 and later only
 * (amdgpu_discovery enables it there), and kfd_dbg_is_per_vmid_supported
 * is true on GC 9.4.2, 9.4.3, 9.4.4 and 11+ whatever the configuration. */
static int check_gpu_combinations(FILE *f, const struct emu_config *cfg, const struct node_config_file *file,
                                  char *error, size_t error_size, const char *path)
{
        for (unsigned i = 0; i < file->highest_gpu_section; i++) {
                const struct emu_gpu_config *g = &cfg->gpus[i];
                uint32_t gc = emu_gc_version(g->gfx_target_version);
                char section[16];

                snprintf(section, sizeof(section), "GPU%u", i);
                if (g->mes && gc != 0 && gc < EMU_IP_VERSION(11, 0, 0)) {
                        snprintf(error, error_size,
                                 "%s:%u: [%s] MES=yes on GfxTargetVersion=%u (GC %u.%u.%u): MES schedules only "
                                 "GC 11 and later; set GfxTargetVersion= to a gfx11+ part or MES=no",
                                 path, key_line(f, section, "MES"), section, g->gfx_target_version, gc >> 16,
                                 (gc >> 8) & 0xff, gc & 0xff);
                        return -EINVAL;
                }
                if (!g->per_vmid_debug &&
                    (gc == EMU_IP_VERSION(9, 4, 2) || gc == EMU_IP_VERSION(9, 4, 3) ||
                     gc == EMU_IP_VERSION(9, 4, 4) || gc >= EMU_IP_VERSION(11, 0, 0))) {
                        snprintf(error, error_size,
                                 "%s:%u: [%s] PerVmidDebug=no on GfxTargetVersion=%u (GC %u.%u.%u), which debugs "
                                 "per VMID; one debug VMID per GPU is gfx9.0-9.4.1 and gfx10 (e.g. "
                                 "GfxTargetVersion=90008)",
                                 path, key_line(f, section, "PerVmidDebug"), section, g->gfx_target_version,
                                 gc >> 16, (gc >> 8) & 0xff, gc & 0xff);
                        return -EINVAL;
                }
        }
        return 0;
}

/* Once the file is read: the kernel behaviours not set one by one follow
 * Version=, and [Faults] names what fails and exactly one trigger. */
static int finish_faults(FILE *f, struct emu_config *cfg, const struct faults_seen *seen, char *error,
                         size_t error_size, const char *path)
{
        struct emu_fault_config *faults = &cfg->faults;

        for (size_t i = 0; i < ELEMENTSOF(kernel_behaviours); i++)
                if (!seen->kernel_key[i])
                        *(bool *)((char *)&cfg->kernel + kernel_behaviours[i].offset) =
                                cfg->kernel.version >= kernel_behaviours[i].since;

        if (!seen->section)
                return 0;
        if (faults->kind == EMU_FAULT_NONE) {
                snprintf(error, error_size, "%s:%u: [Faults] says when a preemption fails but not how; add "
                         "Preemption=timeout, queue-hang or error", path, key_line(f, "Faults", NULL));
                return -EINVAL;
        }
        if (seen->triggers != 1) {
                snprintf(error, error_size, "%s:%u: [Faults] needs exactly one of OnPreemption=, EveryPreemption= "
                         "and Probability= (it has %u)", path, key_line(f, "Faults", NULL), seen->triggers);
                return -EINVAL;
        }
        /* QueueId= names the busy queue that hangs. */
        if (faults->queue_id_set)
                faults->while_busy = true;
        if (!faults->ops)
                faults->ops = EMU_FAULT_OP_SUSPEND;
        return 0;
}

int node_config_parse_file(const char *path, struct emu_config *cfg, struct node_config_file *ret_file,
                           char *error, size_t error_size)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        struct emu_config parsed = *cfg;
        struct node_config_file file = { 0 };
        char message[512] = "";
        struct parse_state s = {
                .cfg = &parsed, .file = &file, .error = message, .error_size = sizeof(message),
        };

        if (!f) {
                int r = -errno;
                snprintf(error, error_size, "cannot read the configuration file %s: %s", path, strerror(-r));
                return r;
        }

        int line = ini_parse_file(f, handler, &s);
        if (line != 0 || s.failed) {
                if (!s.failed)
                        snprintf(message, sizeof(message), "%s",
                                 line < 0 ? "cannot be read" : "is not INI syntax ([Section] or Key=Value)");
                snprintf(error, error_size, "%s:%d: %s", path, line, message);
                return -EINVAL;
        }
        int r = check_gpu_combinations(f, &parsed, &file, error, error_size, path);
        if (r < 0)
                return r;
        r = finish_faults(f, &parsed, &s.faults, error, error_size, path);
        if (r < 0)
                return r;

        *cfg = parsed;
        *ret_file = file;
        return 0;
}

int node_config_check_gpu_count(const char *path, const struct node_config_file *file, unsigned n_gpus,
                                char *error, size_t error_size)
{
        if (file->highest_gpu_section > n_gpus) {
                snprintf(error, error_size,
                         "%s: [GPU%u] configures a GPU the node does not have (it has %u); "
                         "raise Gpus= or --gpus, or remove the section",
                         path, file->highest_gpu_section - 1, n_gpus);
                return -EINVAL;
        }
        return 0;
}
