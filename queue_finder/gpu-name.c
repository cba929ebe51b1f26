/* SPDX-License-Identifier: MIT */
/*
 * The marketing name of a GPU, as rocminfo shows it: libdrm_amdgpu's
 * amdgpu_get_marketing_name() looks the PCI device and revision up in
 * amdgpu.ids, which needs an open render node: /dev/dri/renderD<minor> with
 * the topology's drm_render_minor, opened as libdrm's drmOpenRender() does.
 * (Opening it directly keeps <xf86drm.h>, and its dependence on the libdrm
 * copy of drm.h, out of the build.) Debian 12's amdgpu.ids lacks recent parts
 * such as MI300X (74A1), and nodes without a render node (containers, the
 * test emulator) cannot ask at all; both get a name built from topology:
 * "AMD GPU <gfx> [1002:<device_id>] <domain:bus:dev.fn>".
 */
#include <amdgpu.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "sources.h"

static void fallback_name(struct qf_gpu *gpu)
{
        if (gpu->has_location)
                snprintf(gpu->marketing_name, sizeof(gpu->marketing_name),
                         "AMD GPU %s [%04x:%04x] %04x:%02x:%02x.%x", gpu->gfx, gpu->vendor_id ? gpu->vendor_id : 0x1002,
                         gpu->device_id, gpu->domain, gpu->bus, gpu->dev, gpu->fn);
        else
                snprintf(gpu->marketing_name, sizeof(gpu->marketing_name), "AMD GPU %s [%04x:%04x]", gpu->gfx,
                         gpu->vendor_id ? gpu->vendor_id : 0x1002, gpu->device_id);
        gpu->marketing_name_from_libdrm = false;
}

void qf_gpu_name_resolve(struct qf_gpu *gpu)
{
        fallback_name(gpu);
        if (gpu->drm_render_minor < 0)
                return;

        char path[64];
        snprintf(path, sizeof(path), "/dev/dri/renderD%d", gpu->drm_render_minor);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return;

        uint32_t major, minor;
        amdgpu_device_handle dev;
        if (amdgpu_device_initialize(fd, &major, &minor, &dev) == 0) {
                const char *name = amdgpu_get_marketing_name(dev);
                if (name && *name) {
                        snprintf(gpu->marketing_name, sizeof(gpu->marketing_name), "%s", name);
                        gpu->marketing_name_from_libdrm = true;
                }
                amdgpu_device_deinitialize(dev);
        }
        close(fd);
}
