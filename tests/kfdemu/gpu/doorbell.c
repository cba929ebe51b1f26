/* SPDX-License-Identifier: MIT */
/*
 * The doorbell aperture of a node: one memfd holding the node strobe page
 * and one page per (process, GPU) doorbell frame. kfd_mmap hands a client
 * its frame page followed by the strobe page, so the client sees the 8 KiB
 * frame of emu-hw.h; the model thread reads every doorbell through its own
 * mapping of the whole memfd.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpu-internal.h"

_Static_assert(EMU_DOORBELL_SLOTS * EMU_DOORBELL_SIZE <= EMU_COMPLETION_STROBE_OFFSET,
               "doorbells overlap the completion strobes");
_Static_assert(EMU_COMPLETION_STROBE_OFFSET + 4 * EMU_DOORBELL_SLOTS <= EMU_PAGE_SIZE,
               "completion strobes leave the frame's first page");
_Static_assert(EMU_NODE_STROBE_OFFSET == EMU_PAGE_SIZE, "the node strobe is page 1 of a frame");

/* The first doorbell dword of the first process in the doorbell BAR, as the
 * real MI308X dump shows it (mi308x-mqds-5queues.txt: 0x1000 + 2 * slot). */
#define DOORBELL_BAR_FIRST_DWORD 0x1000u

static size_t frame_offset(unsigned frame)
{
        return (size_t)EMU_PAGE_SIZE * (1 + frame);
}

int emu_aperture_open(struct emu_node_hw *nh)
{
        _cleanup_close_ int fd = -1;
        size_t size = (size_t)EMU_PAGE_SIZE * (1 + EMU_MAX_FRAMES);
        void *map;

        fd = memfd_create("kfdemu-doorbells", MFD_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();
        if (ftruncate(fd, (off_t)size) < 0)
                return NEG_ERRNO();
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return NEG_ERRNO();
        nh->aperture = map;
        nh->aperture_size = size;
        nh->aperture_fd = TAKE_FD(fd);
        return 0;
}

void emu_aperture_close(struct emu_node_hw *nh)
{
        if (nh->aperture)
                munmap(nh->aperture, nh->aperture_size);
        nh->aperture = NULL;
        closep(&nh->aperture_fd);
        nh->aperture_fd = -1;
}

static int frame_find(const struct emu_node_hw *nh, pid_t tgid, unsigned gpu_slot)
{
        for (unsigned i = 0; i < EMU_MAX_FRAMES; i++)
                if (nh->frames[i].used && nh->frames[i].tgid == tgid && nh->frames[i].gpu_slot == gpu_slot)
                        return (int)i;
        return -ENOENT;
}

/* kfd_alloc_process_doorbells: the first mmap or queue of a process on a
 * GPU gives it a frame. A recycled frame starts zeroed, as a freshly
 * allocated doorbell page would. */
int emu_frame_get(struct emu_node_hw *nh, pid_t tgid, unsigned gpu_slot, unsigned *ret_frame)
{
        int found = frame_find(nh, tgid, gpu_slot);

        if (found >= 0) {
                *ret_frame = (unsigned)found;
                return 0;
        }
        for (unsigned i = 0; i < EMU_MAX_FRAMES; i++)
                if (!nh->frames[i].used) {
                        memset(nh->aperture + frame_offset(i), 0, EMU_PAGE_SIZE);
                        nh->frames[i] = (struct emu_frame){ .used = true, .tgid = tgid, .gpu_slot = gpu_slot };
                        *ret_frame = i;
                        return 0;
                }
        return -ENOSPC;
}

void emu_frames_release(struct emu_node_hw *nh, pid_t tgid)
{
        for (unsigned i = 0; i < EMU_MAX_FRAMES; i++)
                if (nh->frames[i].used && nh->frames[i].tgid == tgid)
                        nh->frames[i].used = false;
}

uint32_t *emu_node_strobe(struct emu_node_hw *nh)
{
        return (uint32_t *)nh->aperture;
}

uint64_t *emu_doorbell_word(struct emu_node_hw *nh, unsigned frame, unsigned slot)
{
        return (uint64_t *)(nh->aperture + frame_offset(frame) + (size_t)EMU_DOORBELL_SIZE * slot);
}

static void futex_wake_all(uint32_t *word)
{
        syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void emu_completion_strobe_bump(struct emu_node_hw *nh, unsigned frame, unsigned slot)
{
        uint32_t *strobe = (uint32_t *)(nh->aperture + frame_offset(frame) +
                                        EMU_COMPLETION_STROBE_OFFSET + 4 * (size_t)slot);

        __atomic_add_fetch(strobe, 1, __ATOMIC_RELEASE);
        futex_wake_all(strobe);
}

void emu_node_strobe_bump(struct emu_node_hw *nh)
{
        __atomic_add_fetch(emu_node_strobe(nh), 1, __ATOMIC_RELEASE);
        futex_wake_all(emu_node_strobe(nh));
}

uint32_t emu_doorbell_bar_dword(unsigned frame, unsigned slot)
{
        /* A 64-bit doorbell is two dwords; a frame is EMU_DOORBELL_FRAME_SIZE / 4. */
        return DOORBELL_BAR_FIRST_DWORD + frame * (EMU_DOORBELL_FRAME_SIZE / 4) + 2 * slot;
}

int emu_gpu_doorbell_segments(struct emu_gpu *gpu, struct emu_process *process,
                              struct emu_mmap_result *ret)
{
        struct emu_node_hw *nh = gpu->hw ? gpu->hw->node_hw : NULL;
        unsigned frame;
        int r;

        if (!nh)
                return -ENODEV;
        r = emu_frame_get(nh, process->tgid, emu_gpu_slot(gpu), &frame);
        if (r < 0)
                return r;
        *ret = (struct emu_mmap_result){
                .n_segments = 2,
                .segments = {
                        { .memfd = nh->aperture_fd, .memfd_offset = frame_offset(frame), .length = EMU_PAGE_SIZE },
                        { .memfd = nh->aperture_fd, .memfd_offset = 0, .length = EMU_PAGE_SIZE },
                },
        };
        return 0;
}
