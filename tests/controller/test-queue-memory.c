/* SPDX-License-Identifier: MIT */
/*
 * The queue-memory reader against a real second process whose memory
 * process_vm_readv cannot read but /proc/PID/mem can.
 *
 * Without a GPU there is no TTM mapping (VM_IO|VM_PFNMAP with an access
 * handler) to read. A PROT_NONE page gives the same split through another
 * rule of the same kernel path: get_user_pages refuses a page without
 * VM_READ (EFAULT) unless the caller forces it, and /proc/PID/mem forces it
 * (FOLL_FORCE, mem_rw()). The reader does not know which kind of mapping
 * it met; what is tested is that it switches, reads the right bytes, keeps
 * reading them live, and reports what it cannot read as an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "queue-memory.h"

/* Where the child's words are, as it reports them. */
struct child_layout {
        uint64_t *readable;   /* two words 0x48 bytes apart, as amd_queue_t's indices */
        uint64_t *protected;  /* the same in a PROT_NONE page */
        uint64_t *unmapped;   /* an address with nothing mapped */
};

struct child {
        pid_t pid;
        int to_child, from_child;
        struct child_layout layout;
};

#define READ_OFFSET (0x48 / sizeof(uint64_t))

static void child_main(int commands, int replies)
{
        long page = sysconf(_SC_PAGESIZE);
        char *pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct child_layout l;
        char c;

        if (pages == MAP_FAILED)
                _exit(2);
        l.readable = (uint64_t *)pages;
        l.protected = (uint64_t *)(pages + page);
        l.unmapped = (uint64_t *)(pages + 2 * page);
        munmap(pages + 2 * page, page);
        l.readable[0] = 0x1111;
        l.readable[READ_OFFSET] = 0x2222;
        l.protected[0] = 0x3333;
        l.protected[READ_OFFSET] = 0x4444;
        mprotect(l.protected, page, PROT_NONE);
        if (write(replies, &l, sizeof(l)) != sizeof(l))
                _exit(2);
        /* each command byte: the protected words move on, as a queue's write index would */
        while (read(commands, &c, 1) == 1) {
                mprotect(l.protected, page, PROT_READ | PROT_WRITE);
                l.protected[0] += 1;
                l.protected[READ_OFFSET] += 1;
                mprotect(l.protected, page, PROT_NONE);
                if (write(replies, &c, 1) != 1)
                        _exit(2);
        }
        _exit(0);
}

static void child_start(struct child *c)
{
        int commands[2], replies[2];

        assert_int_equal(pipe2(commands, O_CLOEXEC), 0);
        assert_int_equal(pipe2(replies, O_CLOEXEC), 0);
        c->pid = fork();
        assert_true(c->pid >= 0);
        if (c->pid == 0) {
                close(commands[1]);
                close(replies[0]);
                child_main(commands[0], replies[1]);
        }
        close(commands[0]);
        close(replies[1]);
        c->to_child = commands[1];
        c->from_child = replies[0];
        assert_int_equal(read(c->from_child, &c->layout, sizeof(c->layout)), sizeof(c->layout));
}

static void child_advance(struct child *c)
{
        char b = 'w';

        assert_int_equal(write(c->to_child, &b, 1), 1);
        assert_int_equal(read(c->from_child, &b, 1), 1);
}

static void child_stop(struct child *c)
{
        int status;

        close(c->to_child);
        close(c->from_child);
        assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* One range covering both indices of a queue at base, as the detector reads it. */
static struct iovec queue_range(uint64_t *base)
{
        return (struct iovec){ base, (READ_OFFSET + 1) * sizeof(uint64_t) };
}

static void assert_indices(const uint64_t *words, uint64_t write_index, uint64_t read_index)
{
        assert_int_equal(words[0], write_index);
        assert_int_equal(words[READ_OFFSET], read_index);
}

static void test_readable_memory_stays_on_process_vm_readv(void **state)
{
        struct child c;
        struct queue_memory *m = NULL;
        struct iovec remote[1];
        uint64_t buf[READ_OFFSET + 1];
        size_t bytes;
        bool switched;

        child_start(&c);
        remote[0] = queue_range(c.layout.readable);
        assert_int_equal(queue_memory_new("/proc", c.pid, &m), 0);
        assert_int_equal(queue_memory_read(m, buf, remote, 1, &bytes, &switched), 0);
        assert_int_equal(bytes, sizeof(buf));
        assert_false(switched);
        assert_false(queue_memory_uses_proc_mem(m));
        assert_indices(buf, 0x1111, 0x2222);
        queue_memory_free(m);
        child_stop(&c);
}

static void test_efault_switches_to_proc_mem_once(void **state)
{
        struct child c;
        struct queue_memory *m = NULL;
        struct iovec remote[1], local;
        uint64_t buf[READ_OFFSET + 1];
        size_t bytes;
        bool switched;
        int r;

        child_start(&c);
        remote[0] = queue_range(c.layout.protected);
        /* the premise: process_vm_readv cannot read it */
        local = (struct iovec){ buf, sizeof(buf) };
        assert_int_equal(process_vm_readv(c.pid, &local, 1, remote, 1, 0), -1);
        assert_int_equal(errno, EFAULT);

        assert_int_equal(queue_memory_new("/proc", c.pid, &m), 0);
        r = queue_memory_read(m, buf, remote, 1, &bytes, &switched);
        if (r < 0)
                fail_msg("/proc/PID/mem did not read a PROT_NONE page either (%s): a kernel booted with "
                         "proc_mem.force_override=never cannot run this test", strerror(-r));
        assert_true(switched);
        assert_true(queue_memory_uses_proc_mem(m));
        assert_int_equal(bytes, sizeof(buf));
        assert_indices(buf, 0x3333, 0x4444);

        /* later reads: no second report, and live values, not a copy */
        child_advance(&c);
        assert_int_equal(queue_memory_read(m, buf, remote, 1, &bytes, &switched), 0);
        assert_false(switched);
        assert_indices(buf, 0x3334, 0x4445);
        queue_memory_free(m);
        child_stop(&c);
}

static void test_mixed_ranges_keep_their_order(void **state)
{
        struct child c;
        struct queue_memory *m = NULL;
        struct iovec remote[3];
        uint64_t buf[3 * (READ_OFFSET + 1)];
        size_t bytes;
        bool switched;

        child_start(&c);
        remote[0] = queue_range(c.layout.readable);
        remote[1] = queue_range(c.layout.protected);
        remote[2] = (struct iovec){ c.layout.readable + READ_OFFSET, sizeof(uint64_t) };
        assert_int_equal(queue_memory_new("/proc", c.pid, &m), 0);
        assert_int_equal(queue_memory_read(m, buf, remote, 3, &bytes, &switched), 0);
        assert_true(switched);
        assert_int_equal(bytes, 2 * (READ_OFFSET + 1) * sizeof(uint64_t) + sizeof(uint64_t));
        assert_indices(buf, 0x1111, 0x2222);
        assert_indices(buf + READ_OFFSET + 1, 0x3333, 0x4444);
        assert_int_equal(buf[2 * (READ_OFFSET + 1)], 0x2222);
        queue_memory_free(m);
        child_stop(&c);
}

static void test_unmapped_range_is_an_error_not_idle(void **state)
{
        struct child c;
        struct queue_memory *m = NULL;
        struct iovec remote[2];
        uint64_t buf[2 * (READ_OFFSET + 1)];
        size_t bytes;
        bool switched;

        child_start(&c);
        remote[0] = queue_range(c.layout.readable);
        remote[1] = queue_range(c.layout.unmapped);
        assert_int_equal(queue_memory_new("/proc", c.pid, &m), 0);
        assert_int_equal(queue_memory_read(m, buf, remote, 2, &bytes, &switched), -EIO);
        assert_int_equal(bytes, (READ_OFFSET + 1) * sizeof(uint64_t));
        assert_false(switched);
        assert_false(queue_memory_uses_proc_mem(m));

        /* the same once on /proc/PID/mem */
        remote[0] = queue_range(c.layout.protected);
        assert_int_equal(queue_memory_read(m, buf, remote, 2, &bytes, &switched), -EIO);
        assert_true(switched);
        assert_int_equal(bytes, (READ_OFFSET + 1) * sizeof(uint64_t));
        assert_indices(buf, 0x3333, 0x4444);
        queue_memory_free(m);
        child_stop(&c);
}

static void test_gone_process_is_esrch(void **state)
{
        struct child c;
        struct queue_memory *on_readv = NULL, *on_mem = NULL;
        struct iovec remote[1];
        uint64_t buf[READ_OFFSET + 1];
        size_t bytes;
        bool switched;

        child_start(&c);
        assert_int_equal(queue_memory_new("/proc", c.pid, &on_readv), 0);
        assert_int_equal(queue_memory_new("/proc", c.pid, &on_mem), 0);
        remote[0] = queue_range(c.layout.protected);
        assert_int_equal(queue_memory_read(on_mem, buf, remote, 1, &bytes, &switched), 0);
        assert_true(switched);
        child_stop(&c);

        remote[0] = queue_range(c.layout.readable);
        assert_int_equal(queue_memory_read(on_readv, buf, remote, 1, &bytes, &switched), -ESRCH);
        assert_int_equal(bytes, 0);
        /* the kept /proc/PID/mem outlives its address space: that is gone too */
        assert_int_equal(queue_memory_read(on_mem, buf, remote, 1, &bytes, &switched), -ESRCH);
        assert_int_equal(bytes, 0);
        assert_false(switched);
        queue_memory_free(on_readv);
        queue_memory_free(on_mem);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_readable_memory_stays_on_process_vm_readv),
                cmocka_unit_test(test_efault_switches_to_proc_mem_once),
                cmocka_unit_test(test_mixed_ranges_keep_their_order),
                cmocka_unit_test(test_unmapped_range_is_an_error_not_idle),
                cmocka_unit_test(test_gone_process_is_esrch),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
