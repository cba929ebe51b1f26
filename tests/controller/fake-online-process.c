/* SPDX-License-Identifier: MIT */
#include "fake-online-process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct store_command {
        uint32_t by;
        uint32_t queue;
        uint64_t value;
};

/* The child's side: one store, then its report on done_fd. */
struct store_job {
        struct fake_online_process *f;
        struct store_command c;
};

static void child_store(struct store_job *job)
{
        char done = 1;

        *fake_write_index(job->f, job->c.queue) = job->c.value;
        if (write(job->f->done_fd, &done, 1) != 1)
                _exit(1);
}

static void *store_thread(void *userdata)
{
        child_store(userdata);
        for (;;)
                pause(); /* stays, as a runtime's threads do */
        return NULL;
}

/* The early thread takes its stores from a pipe of its own. */
static int early_fd;

static void *early_thread(void *userdata)
{
        struct store_job job = { .f = userdata };

        while (read(early_fd, &job.c, sizeof(job.c)) == sizeof(job.c))
                child_store(&job);
        _exit(1);
}

static void child_main(struct fake_online_process *f)
{
        static struct store_job jobs[64];
        size_t n_jobs = 0;
        int early[2];
        pthread_t t;
        struct store_job job = { .f = f };

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (pipe(early) < 0)
                _exit(1);
        early_fd = early[0];
        if (pthread_create(&t, NULL, early_thread, f) != 0)
                _exit(1);
        /* the early thread exists before the parent hears from us */
        if (write(f->done_fd, &(char){ 1 }, 1) != 1)
                _exit(1);
        while (read(f->command_fd, &job.c, sizeof(job.c)) == sizeof(job.c)) {
                if (job.c.by == FAKE_STORE_BY_MAIN)
                        child_store(&job);
                else if (job.c.by == FAKE_STORE_BY_EARLY_THREAD) {
                        if (write(early[1], &job.c, sizeof(job.c)) != sizeof(job.c))
                                _exit(1);
                } else if (n_jobs < 64) {
                        jobs[n_jobs] = job;
                        if (pthread_create(&t, NULL, store_thread, &jobs[n_jobs++]) != 0)
                                _exit(1);
                }
        }
        for (;;)
                pause(); /* the test has nothing more to say: wait for SIGKILL */
}

void fake_online_process_start(struct fake_online_process *f, size_t n_queues)
{
        int command[2], done[2];
        char ready;

        f->n = n_queues;
        f->queues = mmap(NULL, n_queues * FAKE_AMD_QUEUE_SIZE, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        f->rings = mmap(NULL, n_queues * FAKE_RING_PACKETS * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
        f->signals = mmap(NULL, FAKE_SIGNALS * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (f->queues == MAP_FAILED || f->rings == MAP_FAILED || f->signals == MAP_FAILED)
                abort();
        if (pipe2(command, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)
                abort();
        f->pid = fork();
        if (f->pid < 0)
                abort();
        if (f->pid == 0) {
                close(command[1]);
                close(done[0]);
                f->command_fd = command[0];
                f->done_fd = done[1];
                child_main(f);
        }
        close(command[0]);
        close(done[1]);
        f->command_fd = command[1];
        f->done_fd = done[0];
        if (read(f->done_fd, &ready, 1) != 1)
                abort();
}

void fake_child_store(struct fake_online_process *f, size_t q, uint64_t value, enum fake_store_by by)
{
        struct store_command c = { .by = by, .queue = (uint32_t)q, .value = value };
        char done;

        if (write(f->command_fd, &c, sizeof(c)) != sizeof(c) || read(f->done_fd, &done, 1) != 1)
                abort();
}

void fake_online_process_stop(struct fake_online_process *f)
{
        if (f->pid > 0) {
                kill(f->pid, SIGKILL);
                waitpid(f->pid, NULL, 0);
                f->pid = 0;
                close(f->command_fd);
                close(f->done_fd);
        }
        munmap(f->queues, f->n * FAKE_AMD_QUEUE_SIZE);
        munmap(f->rings, f->n * FAKE_RING_PACKETS * 64);
        munmap(f->signals, FAKE_SIGNALS * 64);
}

volatile uint64_t *fake_write_index(struct fake_online_process *f, size_t q)
{
        return (volatile uint64_t *)(f->queues + q * FAKE_AMD_QUEUE_SIZE + FAKE_WRITE_OFFSET);
}

volatile uint64_t *fake_read_index(struct fake_online_process *f, size_t q)
{
        return (volatile uint64_t *)(f->queues + q * FAKE_AMD_QUEUE_SIZE + FAKE_READ_OFFSET);
}

unsigned char *fake_ring_packet(struct fake_online_process *f, size_t q, uint64_t index)
{
        return f->rings + (q * FAKE_RING_PACKETS + index % FAKE_RING_PACKETS) * 64;
}

uint64_t fake_signal_handle(struct fake_online_process *f, size_t i)
{
        return (uint64_t)(uintptr_t)(f->signals + i * 64);
}

volatile int64_t *fake_signal_value(struct fake_online_process *f, size_t i)
{
        return (volatile int64_t *)(f->signals + i * 64 + 8); /* amd_signal_t.value */
}

/* The header last, as a producer publishes a packet (hsa.h: type in bits 0-7). */
static void publish(unsigned char *packet, uint16_t header)
{
        __atomic_store_n((uint16_t *)(void *)packet, header, __ATOMIC_RELEASE);
}

void fake_write_barrier(struct fake_online_process *f, size_t q, uint64_t index, unsigned type, const uint64_t *deps,
                        size_t n_deps)
{
        unsigned char *packet = fake_ring_packet(f, q, index);

        memset(packet, 0, 64);
        publish(packet, 1); /* INVALID while it is written */
        if (n_deps) /* deps may be NULL when there are none */
                memcpy(packet + 8, deps, n_deps * sizeof(*deps)); /* dep_signal[5] */
        publish(packet, (uint16_t)(type | 1u << 8));      /* the barrier bit, as CLR sets it */
}

void fake_write_dispatch(struct fake_online_process *f, size_t q, uint64_t index)
{
        unsigned char *packet = fake_ring_packet(f, q, index);

        memset(packet, 0, 64);
        publish(packet, 2);
}

struct detector_queue_addr fake_queue_addr(struct fake_online_process *f, size_t q, uint32_t gpu_id)
{
        return (struct detector_queue_addr){
                .gpu_id = gpu_id,
                .read_pointer_address = (uint64_t)(uintptr_t)fake_read_index(f, q),
                .write_pointer_address = (uint64_t)(uintptr_t)fake_write_index(f, q),
                .ring_base_address = (uint64_t)(uintptr_t)fake_ring_packet(f, q, 0),
                .ring_size = FAKE_RING_PACKETS * 64,
        };
}
