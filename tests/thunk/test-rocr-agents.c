/* SPDX-License-Identifier: MIT */
/*
 * Debian's HSA runtime (ROCr 5.2.3, libhsa-runtime64) on the thunk on
 * kfdemu: hsa_init gets through the thunk's open, the topology with its
 * memory banks, the allocations and events ROCr makes at start, and lists
 * the emulated node's agents, as rocminfo would. Runs on the MI210 node
 * of tests/kfdemu/configs/mi210.conf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <hsa/hsa.h>

struct agents {
        unsigned cpus, gpus;
        char gpu_name[64];
};

static hsa_status_t count_agent(hsa_agent_t agent, void *data)
{
        struct agents *a = data;
        hsa_device_type_t type;
        char name[64];

        if (hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS ||
            hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name) != HSA_STATUS_SUCCESS)
                return HSA_STATUS_ERROR;
        if (type == HSA_DEVICE_TYPE_CPU)
                a->cpus++;
        if (type == HSA_DEVICE_TYPE_GPU) {
                a->gpus++;
                memcpy(a->gpu_name, name, sizeof(a->gpu_name));
        }
        return HSA_STATUS_SUCCESS;
}

/* One CPU agent and the gfx90a GPU. */
static void agents_of_the_node(void **state)
{
        struct agents a = { 0 };

        assert_int_equal(hsa_init(), HSA_STATUS_SUCCESS);
        assert_int_equal(hsa_iterate_agents(count_agent, &a), HSA_STATUS_SUCCESS);
        assert_int_equal(a.cpus, 1);
        assert_int_equal(a.gpus, 1);
        assert_string_equal(a.gpu_name, "gfx90a");
        assert_int_equal(hsa_shut_down(), HSA_STATUS_SUCCESS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(agents_of_the_node),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
