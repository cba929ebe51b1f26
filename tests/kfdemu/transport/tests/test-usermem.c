/* SPDX-License-Identifier: MIT */
/* copy_from_user/copy_to_user through process_vm_readv/writev: whole
 * transfers succeed, anything short is -EFAULT as in the kernel. The
 * mapping probe a userptr BO's ALLOC makes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "usermem.h"

static void test_round_trip(void **state)
{
        uint64_t src = 0x1122334455667788ull, dst = 0;
        char text[32] = "kfdemu", back[32];

        assert_int_equal(emu_copy_from_user(getpid(), &dst, (uintptr_t)&src, sizeof(src)), 0);
        assert_true(dst == src);
        assert_int_equal(emu_copy_to_user(getpid(), (uintptr_t)back, text, sizeof(text)), 0);
        assert_string_equal(back, "kfdemu");
        assert_int_equal(emu_copy_from_user(getpid(), &dst, 0, 0), 0);
}

static void test_faults(void **state)
{
        long page = sysconf(_SC_PAGESIZE);
        char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char buf[64];

        assert_true(two != MAP_FAILED);
        assert_int_equal(munmap(two + page, page), 0);
        /* Half in the mapped page, half beyond: a partial copy is a fault. */
        assert_int_equal(emu_copy_from_user(getpid(), buf, (uintptr_t)(two + page - 32), sizeof(buf)), -EFAULT);
        assert_int_equal(emu_copy_to_user(getpid(), (uintptr_t)(two + page - 32), buf, sizeof(buf)), -EFAULT);
        assert_int_equal(emu_copy_from_user(getpid(), buf, 0, sizeof(buf)), -EFAULT);
        /* A range that wraps around the address space. */
        assert_int_equal(emu_copy_from_user(getpid(), buf, UINT64_MAX - 8, sizeof(buf)), -EFAULT);
        /* Read-only memory cannot be written. */
        assert_int_equal(mprotect(two, page, PROT_READ), 0);
        assert_int_equal(emu_copy_to_user(getpid(), (uintptr_t)two, buf, 8), -EFAULT);
        munmap(two, page);
}

/* A range is accessible when mappings cover it without a gap: a hole is
 * -EFAULT, memory that cannot be read too, memory that cannot be written
 * -EPERM only when writing is asked for. */
static void test_range_accessible(void **state)
{
        long page = sysconf(_SC_PAGESIZE);
        char *three = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        assert_true(three != MAP_FAILED);
        /* Two mappings side by side (different protections) are one range. */
        assert_int_equal(mprotect(three + page, page, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 3 * page, true), 0);
        assert_int_equal(mprotect(three + 2 * page, page, PROT_READ), 0);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 3 * page, false), 0);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 3 * page, true), -EPERM);
        assert_int_equal(mprotect(three + 2 * page, page, PROT_NONE), 0);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 3 * page, false), -EFAULT);
        assert_int_equal(munmap(three + page, page), 0);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 2 * page, false), -EFAULT);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three + page, 1, false), -EFAULT);
        assert_int_equal(emu_user_range_accessible(getpid(), UINT64_MAX - 8, 64, false), -EFAULT);
        assert_int_equal(emu_user_range_accessible(getpid(), (uintptr_t)three, 0, true), 0);
        munmap(three, page);
        munmap(three + 2 * page, page);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_faults),
                cmocka_unit_test(test_range_accessible),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
