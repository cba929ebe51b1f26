/* SPDX-License-Identifier: MIT */
/*
 * /sys/class/kfd/kfd/{topology,proc} and /sys/module/amdgpu/parameters as
 * the kernel formats them (kfd_topology.c: node_show, sysprops_show;
 * kfd_process.c: kfd_procfs_show, kfd_procfs_queue_show,
 * kfd_procfs_stats_show; amdgpu_drv.c module parameters).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "cleanup.h"
#include "gpu-internal.h"

#define KFD_DIR "sys/devices/virtual/kfd/kfd"
#define PATH_LEN 256

/* Values of a gfx942 node that kfdemu does not model; each is what an
 * MI300-series node reports or, where marked, invented. */
#define GFX942_LDS_SIZE_KB 64
#define GFX942_NUM_GWS 64
#define GFX942_WAVE_FRONT_SIZE 64
#define GFX942_MAX_SLOTS_SCRATCH_CU 32
#define GFX942_NUM_SDMA_ENGINES 2
#define GFX942_NUM_SDMA_XGMI_ENGINES 6      /* 8 SDMA engines in the real hqds dump */
#define GFX942_NUM_SDMA_QUEUES_PER_ENGINE 8
#define GFX942_NUM_CP_QUEUES 24             /* 4 pipes x 6 queues per XCC (hqds dump) */
#define GFX942_CWSR_SIZE 0xba6000           /* per XCC: ctx save size in the real MQDs */
#define GFX942_CTL_STACK_SIZE 0x2000        /* cp_hqd_cntl_stack_size in the real MQDs */
#define GFX942_MAX_ENGINE_CLK_MHZ 2100
#define GFX942_SDMA_FW_VERSION 19           /* invented */
#define HOST_MAX_CLOCK_MHZ 3700             /* invented: cpufreq of the host */
#define SIMD_ID_BASE_FIRST_GPU 0x80001000u  /* invented in the kernel's style */

static void prop32(FILE *f, const char *name, uint32_t value)
{
        fprintf(f, "%s %u\n", name, value);           /* sysfs_show_32bit_prop */
}

static void prop64(FILE *f, const char *name, uint64_t value)
{
        fprintf(f, "%s %llu\n", name, (unsigned long long)value); /* sysfs_show_64bit_prop */
}

/* node_show's keys, in its order; `gpu` NULL for the CPU node. */
static void write_node_properties(FILE *f, const struct emu_gpu *gpu)
{
        const struct emu_gpu_config *c = gpu ? &gpu->cfg : NULL;
        struct emu_gpu_device_info info = { 0 };
        uint32_t arrays;

        if (gpu)
                emu_gpu_device_info(gpu, &info);
        arrays = info.array_count;

        prop32(f, "cpu_cores_count", c ? 0 : (uint32_t)get_nprocs_conf());
        prop32(f, "simd_count", c ? c->cu_count * c->simd_per_cu : 0);
        prop32(f, "mem_banks_count", 1);
        prop32(f, "caches_count", 0);
        prop32(f, "io_links_count", 0);
        prop32(f, "p2p_links_count", 0);
        prop32(f, "cpu_core_id_base", 0);
        prop32(f, "simd_id_base", c ? SIMD_ID_BASE_FIRST_GPU + emu_gpu_slot(gpu) * c->cu_count * c->simd_per_cu : 0);
        prop32(f, "max_waves_per_simd", c ? c->max_waves_per_simd : 0);
        prop32(f, "lds_size_in_kb", c ? GFX942_LDS_SIZE_KB : 0);
        prop32(f, "gds_size_in_kb", 0);
        prop32(f, "num_gws", c ? GFX942_NUM_GWS : 0);
        prop32(f, "wave_front_size", c ? GFX942_WAVE_FRONT_SIZE : 0);
        prop32(f, "array_count", arrays);
        prop32(f, "simd_arrays_per_engine", info.simd_arrays_per_engine);
        prop32(f, "cu_per_simd_array", arrays ? c->cu_count / arrays : 0);
        prop32(f, "simd_per_cu", c ? c->simd_per_cu : 0);
        prop32(f, "max_slots_scratch_cu", c ? GFX942_MAX_SLOTS_SCRATCH_CU : 0);
        prop32(f, "gfx_target_version", c ? c->gfx_target_version : 0);
        prop32(f, "vendor_id", info.vendor_id);
        prop32(f, "device_id", c ? c->device_id : 0);
        prop32(f, "location_id", c ? c->location_id : 0);
        prop32(f, "domain", c ? c->domain : 0);
        prop32(f, "drm_render_minor", c ? c->drm_render_minor : 0);
        prop64(f, "hive_id", 0);
        prop32(f, "num_sdma_engines", c ? GFX942_NUM_SDMA_ENGINES : 0);
        prop32(f, "num_sdma_xgmi_engines", c ? GFX942_NUM_SDMA_XGMI_ENGINES : 0);
        prop32(f, "num_sdma_queues_per_engine", c ? GFX942_NUM_SDMA_QUEUES_PER_ENGINE : 0);
        prop32(f, "num_cp_queues", c ? GFX942_NUM_CP_QUEUES : 0);
        prop32(f, "cwsr_size", c ? GFX942_CWSR_SIZE : 0);
        prop32(f, "ctl_stack_size", c ? GFX942_CTL_STACK_SIZE : 0);
        if (c) {
                prop32(f, "max_engine_clk_fcompute", GFX942_MAX_ENGINE_CLK_MHZ);
                prop64(f, "local_mem_size", 0);
                prop32(f, "fw_version", info.fw_version);
                prop32(f, "capability", info.capability);
                prop64(f, "debug_prop", info.debug_prop);
                prop32(f, "sdma_fw_version", GFX942_SDMA_FW_VERSION);
                /* Invented, unique per GPU as adev->unique_id is. */
                prop64(f, "unique_id", 0x1f0e3d4c00000000ull | (uint64_t)c->location_id << 16 | c->gpu_id);
                prop32(f, "num_xcc", c->num_xcc);
        }
        prop32(f, "max_engine_clk_ccompute", HOST_MAX_CLOCK_MHZ);
}

/* The GPU's DRM render node in sysfs: /sys/dev/char/226:<minor>/device/drm
 * lists it, which is how libdrm tells a DRM device from another character
 * device (drmNodeIsDRM). */
static int render_drm_node(const char *root, const struct emu_gpu *gpu)
{
        char path[PATH_LEN];
        unsigned minor = gpu->cfg.drm_render_minor;

        snprintf(path, sizeof(path), "sys/dev/char/226:%u/device/drm/renderD%u", minor, minor);
        return emu_render_dir(root, path);
}

/* The node's one memory bank (mem_show's keys): a GPU's VRAM, whole and
 * CPU-visible (HSA_MEM_HEAP_TYPE_FB_PUBLIC, large BAR), or the CPU
 * node's system memory (HSA_MEM_HEAP_TYPE_SYSTEM, all of RAM, as the
 * virtual CRAT counts it). Width and clock are not modelled: 0, as in
 * DEV_INFO. */
static int render_mem_bank(const char *root, unsigned n, const struct emu_gpu *gpu)
{
        char path[PATH_LEN];
        struct sysinfo si;
        uint64_t size;

        if (gpu) {
                size = (uint64_t)gpu->cfg.vram_mib << 20;
        } else {
                if (sysinfo(&si) < 0)
                        return -errno;
                size = (uint64_t)si.totalram * si.mem_unit;
        }
        snprintf(path, sizeof(path), KFD_DIR "/topology/nodes/%u/mem_banks/0/properties", n);
        return emu_render_printf(root, path, "heap_type %u\nsize_in_bytes %llu\nflags 0\nwidth 0\nmem_clk_max 0\n",
                                 gpu ? 1u : 0u, (unsigned long long)size);
}

static int render_node(const char *root, unsigned n, const struct emu_gpu *gpu)
{
        _cleanup_free_ char *text = NULL;
        char path[PATH_LEN];
        size_t len = 0;
        FILE *f;
        int r;

        snprintf(path, sizeof(path), KFD_DIR "/topology/nodes/%u/gpu_id", n);
        r = emu_render_printf(root, path, "%u\n", gpu ? gpu->cfg.gpu_id : 0);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), KFD_DIR "/topology/nodes/%u/name", n);
        r = emu_render_printf(root, path, "%s\n", gpu ? gpu->cfg.name : "");
        if (r < 0)
                return r;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        write_node_properties(f, gpu);
        if (fclose(f) != 0)
                return -ENOMEM;
        snprintf(path, sizeof(path), KFD_DIR "/topology/nodes/%u/properties", n);
        r = emu_render_write(root, path, text, len);
        if (r >= 0)
                r = render_mem_bank(root, n, gpu);
        if (r >= 0 && gpu)
                r = render_drm_node(root, gpu);
        return r;
}

int emu_render_topology(struct emu_node *node)
{
        const char *root = node->cfg.root;
        int r;

        r = emu_render_symlink(root, "sys/class/kfd/kfd", "../../devices/virtual/kfd/kfd");
        if (r < 0)
                return r;
        /* kfd_init() -> kfd_procfs_init(): proc/ exists from module load, before any process opens /dev/kfd. */
        r = emu_render_dir(root, KFD_DIR "/proc");
        if (r < 0)
                return r;
        /* generation_count: 1 for the CPU node, +1 per GPU added. */
        r = emu_render_printf(root, KFD_DIR "/topology/generation_id", "%u\n", node->n_gpus + 1);
        if (r < 0)
                return r;
        r = emu_render_printf(root, KFD_DIR "/topology/system_properties",
                              "platform_oem 0\nplatform_id 0\nplatform_rev 0\n");
        if (r < 0)
                return r;
        r = render_node(root, 0, NULL);
        for (unsigned i = 0; r >= 0 && i < node->n_gpus; i++)
                r = render_node(root, 1 + i, &node->gpus[i]);
        if (r < 0)
                return r;
        r = emu_render_printf(root, "sys/module/amdgpu/parameters/sched_policy", "%d\n", node->cfg.sched_policy);
        if (r >= 0)
                r = emu_render_printf(root, "sys/module/amdgpu/parameters/queue_preemption_timeout_ms", "%u\n",
                                      node->cfg.queue_preemption_timeout_ms);
        if (r >= 0)
                r = emu_render_printf(root, "sys/module/amdgpu/parameters/cwsr_enable", "%d\n", 1);
        if (r >= 0 && node->cfg.max_num_of_queues_per_device)
                r = emu_render_printf(root, "sys/module/amdgpu/parameters/max_num_of_queues_per_device", "%u\n",
                                      node->cfg.max_num_of_queues_per_device);
        return r;
}

/* enum kfd_queue_type (kfd_priv.h, trees with DIQ): what queues/<id>/type shows. */
static int internal_queue_type(uint32_t ioctl_type)
{
        switch (ioctl_type) {
        case KFD_IOC_QUEUE_TYPE_SDMA:
                return 1;
        case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
                return 4;
        default:
                return 0;                 /* COMPUTE, PM4 and AQL alike */
        }
}

static void render_queue(const char *root, pid_t tgid, const struct emu_queue *q)
{
        char path[PATH_LEN];

        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/queues/%u/size", (int)tgid, q->id);
        emu_render_printf(root, path, "%llu", (unsigned long long)q->ring_size);
        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/queues/%u/type", (int)tgid, q->id);
        emu_render_printf(root, path, "%d", internal_queue_type(q->type));
        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/queues/%u/gpuid", (int)tgid, q->id);
        emu_render_printf(root, path, "%u", q->gpu->cfg.gpu_id);
}

void emu_render_queue_created(const struct emu_queue *q)
{
        render_queue(q->process->node->cfg.root, q->process->tgid, q);
}

void emu_render_queue_destroyed(const struct emu_queue *q)
{
        char path[PATH_LEN];

        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/queues/%u", (int)q->process->tgid, q->id);
        emu_render_remove_tree(q->process->node->cfg.root, path);
}

/* kfd_procfs_del_queue: directories of destroyed queues go away. */
static void remove_stale_queues(const char *root, const struct emu_process *p)
{
        char path[PATH_MAX];
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/" KFD_DIR "/proc/%d/queues", root, (int)p->tgid);
        dir = opendir(path);
        if (!dir)
                return;
        while ((de = readdir(dir))) {
                char *end;
                unsigned long id = strtoul(de->d_name, &end, 10);
                bool live = false;

                if (de->d_name[0] == '.' || *end != '\0')
                        continue;
                for (const struct emu_queue *q = p->queues; q && !live; q = q->next)
                        live = q->id == id;
                if (!live) {
                        char rel[PATH_LEN];

                        snprintf(rel, sizeof(rel), KFD_DIR "/proc/%d/queues/%lu", (int)p->tgid, id);
                        emu_render_remove_tree(root, rel);
                }
        }
        closedir(dir);
}

void emu_render_cu_occupancy(struct emu_process *p, struct emu_gpu *gpu)
{
        char path[PATH_LEN];

        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/stats_%u/cu_occupancy", (int)p->tgid, gpu->cfg.gpu_id);
        emu_render_printf(p->node->cfg.root, path, "%d\n", emu_gpu_cu_occupancy(gpu, p->tgid));
}

/* kfd_procfs_stats_show samples the hardware on every read. */
void emu_render_cu_occupancy_on_read(struct emu_node *node, pid_t tgid, uint32_t gpu_id)
{
        struct emu_gpu *gpu = NULL;
        struct emu_process *p;

        for (p = node->processes; p && p->tgid != tgid; p = p->next)
                ;
        for (unsigned i = 0; p && i < p->n_pdds && !gpu; i++)
                if (p->pdds[i].gpu->cfg.gpu_id == gpu_id)
                        gpu = p->pdds[i].gpu;
        if (gpu)
                emu_render_cu_occupancy(p, gpu);
}

void emu_render_process(struct emu_process *p)
{
        const char *root = p->node->cfg.root;
        char path[PATH_LEN];

        snprintf(path, sizeof(path), KFD_DIR "/proc/%d/pasid", (int)p->tgid);
        emu_render_printf(root, path, "%u\n", p->pasid);
        for (unsigned i = 0; i < p->n_pdds; i++) {
                struct emu_gpu *gpu = p->pdds[i].gpu;
                uint32_t id = gpu->cfg.gpu_id;

                /* kfdemu allocates no memory for processes: 0 bytes. */
                snprintf(path, sizeof(path), KFD_DIR "/proc/%d/vram_%u", (int)p->tgid, id);
                emu_render_printf(root, path, "%llu\n", 0ull);
                snprintf(path, sizeof(path), KFD_DIR "/proc/%d/sdma_%u", (int)p->tgid, id);
                emu_render_printf(root, path, "%llu\n", 0ull);
                snprintf(path, sizeof(path), KFD_DIR "/proc/%d/stats_%u/evicted_ms", (int)p->tgid, id);
                emu_render_printf(root, path, "%llu\n", 0ull);
                emu_render_cu_occupancy(p, gpu);
        }
        for (const struct emu_queue *q = p->queues; q; q = q->next)
                render_queue(root, p->tgid, q);
        remove_stale_queues(root, p);
}

void emu_render_process_removed(struct emu_node *node, pid_t tgid)
{
        struct emu_node_hw *nh = emu_node_hw_of(node);
        char path[PATH_LEN];

        snprintf(path, sizeof(path), KFD_DIR "/proc/%d", (int)tgid);
        emu_render_remove_tree(node->cfg.root, path);
        /* The process's doorbell frames are free for the next process. */
        if (nh)
                emu_frames_release(nh, tgid);
}
