/* SPDX-License-Identifier: MIT */
/*
 * The amdgpu render node as the ROCt thunk and libdrm_amdgpu use it
 * (kfd-interface.md §11): drm_ioctl's dispatch and copies (drm_ioctl.c),
 * DRM_IOCTL_VERSION (drm_version, drm_copy_field; amdgpu_drv.c),
 * drm_ioctl_permit on a render node, DRM_IOCTL_AMDGPU_INFO
 * (amdgpu_kms.c: amdgpu_info_ioctl), and the node as a character device.
 */
#include <amdgpu_drm.h>
#include <drm.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

/* include/uapi/drm/drm.h: the major of every DRM character device. */
#define DRM_MAJOR 226
/* soc15: GB_ADDR_CONFIG, the register libdrm reads on GFX9+ (§11). */
#define MMR_GB_ADDR_CONFIG 0x263e

static uint32_t first_gpu_id(void)
{
        uint32_t ids[16];

        assert_true(conf_gpu_ids(ids, 16) >= 1);
        return ids[0];
}

/* /dev/dri/renderD<drm_render_minor> of the first GPU, opened O_RDWR as the
 * thunk and libdrm do. */
static int open_render_node(void)
{
        long long minor = conf_gpu_property(first_gpu_id(), "drm_render_minor");
        char path[64];
        int fd;

        assert_true(minor >= 128);
        snprintf(path, sizeof(path), "/dev/dri/renderD%lld", minor);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                fail_msg("open %s: %s", path, strerror(errno));
        return fd;
}

static long amdgpu_info(int fd, uint32_t query, void *out, uint32_t size)
{
        struct drm_amdgpu_info info = {
                .return_pointer = (uintptr_t)out,
                .return_size = size,
                .query = query,
        };

        return conf_ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &info);
}

/* The node is the character device 226:<drm_render_minor>, which is how
 * libdrm's drmGetNodeTypeFromFd recognises a render node. */
static void render_node_is_drm_char_device(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        struct stat st;

        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
        assert_int_equal(major(st.st_rdev), DRM_MAJOR);
        assert_int_equal(minor(st.st_rdev), conf_gpu_property(first_gpu_id(), "drm_render_minor"));
}

/* A minor no GPU has: there is no device node. */
static void missing_render_node_is_enoent(void **state)
{
        assert_int_equal(open("/dev/dri/renderD255", O_RDWR), -1);
        assert_int_equal(errno, ENOENT);
}

/* drm_version: lengths first (NULL buffers), then the strings, never a
 * NUL; a short buffer gets its length of the string and the whole length
 * back (drm_copy_field). */
static void version_is_amdgpu_3(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        struct drm_version v = { 0 };
        char name[16], date[16], desc[16];

        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
        assert_int_equal(v.version_major, 3);
        assert_int_equal(v.name_len, strlen("amdgpu"));
        assert_int_equal(v.date_len, strlen("20150101"));
        assert_int_equal(v.desc_len, strlen("AMD GPU"));

        memset(name, 'x', sizeof(name));
        memset(date, 'x', sizeof(date));
        memset(desc, 'x', sizeof(desc));
        v.name = name;
        v.name_len = sizeof(name);
        v.date = date;
        v.date_len = sizeof(date);
        v.desc = desc;
        v.desc_len = sizeof(desc);
        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
        assert_memory_equal(name, "amdgpuxx", 8);
        assert_memory_equal(date, "20150101x", 9);
        assert_memory_equal(desc, "AMD GPUx", 8);
        assert_int_equal(v.name_len, 6);

        memset(name, 'x', sizeof(name));
        v.name_len = 3;
        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
        assert_memory_equal(name, "amdx", 4);
        assert_int_equal(v.name_len, 6);
}

/* drm_copy_field: a string buffer the caller cannot write is -EFAULT. */
static void version_bad_string_pointer_is_efault(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        struct drm_version v = { .name = (char *)8, .name_len = 16 };

        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_VERSION, &v), -EFAULT);
}

/* drm_ioctl_permit: GET_CLIENT lacks DRM_RENDER_ALLOW; a render client
 * gets -EACCES before the handler runs. */
static void get_client_on_render_node_is_eacces(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        struct drm_client client = { .idx = 0 };

        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_GET_CLIENT, &client), -EACCES);
}

/* drm_ioctl: a number past amdgpu's table (DRM_COMMAND_BASE + its
 * count) is -EINVAL before any copy. */
static void unknown_driver_ioctl_is_einval(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        uint8_t buf[32];

        memset(buf, 0x5a, sizeof(buf));
        assert_int_equal(conf_ioctl(fd, DRM_IOWR(DRM_COMMAND_BASE + 0x5f, buf), buf), -EINVAL);
        for (size_t i = 0; i < sizeof(buf); i++)
                assert_int_equal(buf[i], 0x5a);
}

/* amdgpu_info_ioctl: no return size or no pointer is -EINVAL; a result
 * is cut to the caller's size; an unknown query is -EINVAL. */
static void info_checks_its_return_buffer(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        uint32_t working = 0;
        uint8_t two[4] = { 0x5a, 0x5a, 0x5a, 0x5a };

        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_ACCEL_WORKING, &working, 0), -EINVAL);
        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_ACCEL_WORKING, NULL, 4), -EINVAL);
        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_ACCEL_WORKING, &working, 4), 0);
        assert_int_equal(working, 1);
        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_ACCEL_WORKING, two, 2), 0);
        assert_int_equal(two[0], 1);
        assert_int_equal(two[2], 0x5a);
        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_ACCEL_WORKING, (void *)8, 4), -EFAULT);
        assert_int_equal(amdgpu_info(fd, 0xff, &working, 4), -EINVAL);
}

/* AMDGPU_INFO_DEV_INFO: the PCI device id of the topology, the GFX9
 * family for a gfx9 GPU, a user VA range that starts above 0. */
static void dev_info_matches_topology(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        struct drm_amdgpu_info_device d;
        uint32_t gpu_id = first_gpu_id();

        memset(&d, 0, sizeof(d));
        assert_int_equal(amdgpu_info(fd, AMDGPU_INFO_DEV_INFO, &d, sizeof(d)), 0);
        assert_int_equal(d.device_id, conf_gpu_property(gpu_id, "device_id"));
        if (conf_gpu_property(gpu_id, "gfx_target_version") / 10000 == 9)
                assert_int_equal(d.family, AMDGPU_FAMILY_AI);
        assert_true(d.virtual_address_offset > 0);
        assert_true(d.virtual_address_max > d.virtual_address_offset);
        assert_int_equal(d.cu_active_number, conf_gpu_property(gpu_id, "simd_count") /
                                                     conf_gpu_property(gpu_id, "simd_per_cu"));
}

/* AMDGPU_INFO_READ_MMR_REG: more than 128 registers or an engine index
 * past the hardware's is -EINVAL, a register outside the allowed list
 * -EFAULT; GB_ADDR_CONFIG is allowed. */
static void read_mmr_reg_checks(void **state)
{
        _cleanup_close_ int fd = open_render_node();
        uint32_t regs[4];
        struct drm_amdgpu_info info = {
                .return_pointer = (uintptr_t)regs,
                .return_size = sizeof(regs),
                .query = AMDGPU_INFO_READ_MMR_REG,
                .read_mmr_reg = { .dword_offset = MMR_GB_ADDR_CONFIG, .count = 1, .instance = 0xffffffff },
        };

        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &info), 0);
        info.read_mmr_reg.count = 129;
        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &info), -EINVAL);
        info.read_mmr_reg.count = 1;
        info.read_mmr_reg.instance = 4 << AMDGPU_INFO_MMR_SE_INDEX_SHIFT |
                                     AMDGPU_INFO_MMR_SH_INDEX_MASK << AMDGPU_INFO_MMR_SH_INDEX_SHIFT;
        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &info), -EINVAL);
        info.read_mmr_reg.instance = 0xffffffff;
        info.read_mmr_reg.dword_offset = 0;
        assert_int_equal(conf_ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &info), -EFAULT);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(render_node_is_drm_char_device),
                cmocka_unit_test(missing_render_node_is_enoent),
                cmocka_unit_test(version_is_amdgpu_3),
                cmocka_unit_test(version_bad_string_pointer_is_efault),
                cmocka_unit_test(get_client_on_render_node_is_eacces),
                cmocka_unit_test(unknown_driver_ioctl_is_einval),
                cmocka_unit_test(info_checks_its_return_buffer),
                cmocka_unit_test(dev_info_matches_topology),
                cmocka_unit_test(read_mmr_reg_checks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
