/* SPDX-License-Identifier: MIT */
/*
 * The per-GPU doorbell frame: mapped from the kfd fd at the offset
 * CREATE_QUEUE returned, once per GPU, as libhsakmt does on the first queue
 * of a node (emu-hw.h gives the frame's size and layout).
 */
#include <errno.h>
#include <sys/mman.h>

#include "cleanup.h"
#include "emu-hw.h"
#include "runtime-internal.h"

int emu_doorbell_frame(struct emu_runtime *rt, unsigned index, uint64_t doorbell_offset,
                       void **ret_frame)
{
        void *frame;

        if (index >= rt->n_gpus)
                return -EINVAL;
        if (!rt->doorbell_frames[index]) {
                frame = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                             rt->kfd_fd, (off_t)(doorbell_offset & ~(uint64_t)(EMU_DOORBELL_FRAME_SIZE - 1)));
                if (frame == MAP_FAILED)
                        return NEG_ERRNO();
                rt->doorbell_frames[index] = frame;
        }
        *ret_frame = rt->doorbell_frames[index];
        return 0;
}

void emu_doorbell_unmap_all(struct emu_runtime *rt)
{
        for (unsigned i = 0; i < rt->n_gpus; i++)
                if (rt->doorbell_frames[i]) {
                        munmap(rt->doorbell_frames[i], EMU_DOORBELL_FRAME_SIZE);
                        rt->doorbell_frames[i] = NULL;
                }
}
