/* SPDX-License-Identifier: MIT */
#include "fake-online-process.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void fake_online_process_start(struct fake_online_process *f, size_t n_queues)
{
        f->n = n_queues;
        f->queues = mmap(NULL, n_queues * FAKE_AMD_QUEUE_SIZE, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (f->queues == MAP_FAILED)
                abort();
        f->pid = fork();
        if (f->pid < 0)
                abort();
        if (f->pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
}

void fake_online_process_stop(struct fake_online_process *f)
{
        if (f->pid > 0) {
                kill(f->pid, SIGKILL);
                waitpid(f->pid, NULL, 0);
                f->pid = 0;
        }
        munmap(f->queues, f->n * FAKE_AMD_QUEUE_SIZE);
}

volatile uint64_t *fake_write_index(struct fake_online_process *f, size_t q)
{
        return (volatile uint64_t *)(f->queues + q * FAKE_AMD_QUEUE_SIZE + FAKE_WRITE_OFFSET);
}

volatile uint64_t *fake_read_index(struct fake_online_process *f, size_t q)
{
        return (volatile uint64_t *)(f->queues + q * FAKE_AMD_QUEUE_SIZE + FAKE_READ_OFFSET);
}

struct detector_queue_addr fake_queue_addr(struct fake_online_process *f, size_t q, uint32_t gpu_id)
{
        return (struct detector_queue_addr){
                .gpu_id = gpu_id,
                .read_pointer_address = (uint64_t)(uintptr_t)fake_read_index(f, q),
                .write_pointer_address = (uint64_t)(uintptr_t)fake_write_index(f, q),
        };
}
