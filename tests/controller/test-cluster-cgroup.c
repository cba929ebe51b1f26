/* SPDX-License-Identifier: MIT */
/*
 * The pod or Slurm job a cgroup path names. Each path below is a real one,
 * copied from the public page named beside it (the layouts and their sources
 * are in docs/reference/cluster-cgroups.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cluster-cgroup.h"

struct expected {
        const char *source;
        const char *path;
        enum kubernetes_qos qos;
        const char *pod_uid;
        const char *container_id;
        uint32_t slurm_job_id;
        const char *slurm_step;
};

static const struct expected real_paths[] = {
        /* Kubernetes, systemd driver */
        { "netdata/netdata#4868 (containerd, cgroup v2)",
          "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod55c6c714_b240_4dec_9a45_57b61696ab6e.slice/"
          "cri-containerd-2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36.scope",
          KUBERNETES_QOS_BURSTABLE, "55c6c714-b240-4dec-9a45-57b61696ab6e",
          "2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36", 0, "" },
        { "netdata/netdata#4868 (a static pod: its UID is its manifest's hash)",
          "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8daa50c3a64c9ff60bb9eab7b44b56fd.slice/"
          "cri-containerd-2884d57c0e100d7a9a2f9487ce0bc2986bca3430e988af7a4865aff061f51ac5.scope",
          KUBERNETES_QOS_BURSTABLE, "8daa50c3a64c9ff60bb9eab7b44b56fd",
          "2884d57c0e100d7a9a2f9487ce0bc2986bca3430e988af7a4865aff061f51ac5", 0, "" },
        { "kubernetes/minikube#11280 (CRI-O, the kubelet itself in a Docker container)",
          "/docker/d6701ec289c56e4391acb11d07474b3139466857a305490575508a8b7a9fcf22/kubepods.slice/"
          "kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/"
          "crio-358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c.scope",
          KUBERNETES_QOS_BESTEFFORT, "2ca4a155-3599-498d-bb9d-4446693fa3ea",
          "358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c", 0, "" },
        { "kontena/pharos-cluster#440 (Docker as the runtime, cgroup v1)",
          "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9692aa0e_748e_11e8_8dfa_76d458035df6.slice/"
          "docker-abddff03dfd7710c79a750ce3e730365cbb2c8247a974170c1062683bc3e9152.scope",
          KUBERNETES_QOS_BESTEFFORT, "9692aa0e-748e-11e8-8dfa-76d458035df6",
          "abddff03dfd7710c79a750ce3e730365cbb2c8247a974170c1062683bc3e9152", 0, "" },
        /*
         * Guaranteed pods sit directly under kubepods.slice (kubernetes/website#55620,
         * "CGroups management in Kubernetes"); the slice is named as kubelet's systemd
         * driver names it (pkg/kubelet/cm/cgroup_manager_linux.go), here with the pod
         * and scope of netdata/netdata#4868.
         */
        { "kubernetes/website#55620 layout",
          "/kubepods.slice/kubepods-pod55c6c714_b240_4dec_9a45_57b61696ab6e.slice/"
          "cri-containerd-2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36.scope",
          KUBERNETES_QOS_GUARANTEED, "55c6c714-b240-4dec-9a45-57b61696ab6e",
          "2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36", 0, "" },
        /* Kubernetes, cgroupfs driver */
        { "Qard/container-info test/fixtures (cgroup v1, Docker)",
          "/kubepods/besteffort/pod74c13223-5a00-11e9-b385-42010a80018d/"
          "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376",
          KUBERNETES_QOS_BESTEFFORT, "74c13223-5a00-11e9-b385-42010a80018d",
          "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376", 0, "" },
        { "kubernetes/kubernetes#109105 (a pod cgroup with a container named by the runtime)",
          "/kubepods/burstable/pod03f3a69f-82ff-4368-a1aa-16ddaf74ac22/xmrig",
          KUBERNETES_QOS_BURSTABLE, "03f3a69f-82ff-4368-a1aa-16ddaf74ac22", "", 0, "" },
        { "kubeservice-stack/local-cloud-csi-driver#4 (the pod's own cgroup)",
          "/kubepods/besteffort/pod13e0457a-bb6a-4190-a67b-fd34cfb441c9",
          KUBERNETES_QOS_BESTEFFORT, "13e0457a-bb6a-4190-a67b-fd34cfb441c9", "", 0, "" },
        /* Slurm */
        { "slurm.schedmd.com/cgroup_v2.html (cgroup/v2 plugin)",
          "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0", KUBERNETES_QOS_NONE, "", "", 42, "0" },
        { "NVIDIA/enroot#169 (cgroup/v2, Debian 11, a node-named scope)",
          "/system.slice/slurm-worker-1_slurmstepd.scope/job_4749/step_0/user/task_0", KUBERNETES_QOS_NONE, "",
          "", 4749, "0" },
        { "clemsonciti/jobperf#3 (cgroup/v1)", "/slurm/uid_1000/job_77/step_batch/task_0", KUBERNETES_QOS_NONE,
          "", "", 77, "batch" },
        { "test-components: Debian 12's slurmd, proctrack/cgroup (freezer)", "/slurm_localhost/uid_0/job_3/step_0",
          KUBERNETES_QOS_NONE, "", "", 3, "0" },
        { "plazonic/cgroup_exporter#5 (several slurmd per host)", "/slurm_node7/uid_1001/job_123456/step_2/task_1",
          KUBERNETES_QOS_NONE, "", "", 123456, "2" },
};

static void check(const struct expected *e)
{
        struct cluster_cgroup cg;

        print_message("# %s\n", e->source);
        assert_true(cluster_cgroup_parse(e->path, &cg));
        assert_int_equal(cg.qos, e->qos);
        assert_string_equal(cg.pod_uid, e->pod_uid);
        assert_string_equal(cg.container_id, e->container_id);
        assert_int_equal(cg.slurm_job_id, e->slurm_job_id);
        assert_string_equal(cg.slurm_step, e->slurm_step ? e->slurm_step : "");
}

static void test_real_paths(void **state)
{
        for (size_t i = 0; i < sizeof(real_paths) / sizeof(real_paths[0]); i++)
                check(&real_paths[i]);
}

/* What a daemon in a pod of its own sees of another pod: the path from its cgroup namespace's root. */
static void test_seen_from_a_cgroup_namespace(void **state)
{
        static const struct expected relative[] = {
                { "systemd driver", "/../../kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_"
                                    "4446693fa3ea.slice/crio-358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c.scope",
                  KUBERNETES_QOS_BESTEFFORT, "2ca4a155-3599-498d-bb9d-4446693fa3ea",
                  "358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c", 0, "" },
                { "cgroupfs driver", "/../../burstable/pod03f3a69f-82ff-4368-a1aa-16ddaf74ac22/abc123",
                  KUBERNETES_QOS_BURSTABLE, "03f3a69f-82ff-4368-a1aa-16ddaf74ac22", "abc123", 0, "" },
                { "kind (--cgroup-root=/kubelet)",
                  "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod55c6c714_b240_4dec_9a45_57b61696ab6e.slice/"
                  "cri-containerd-2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36.scope/init.scope",
                  KUBERNETES_QOS_GUARANTEED, "55c6c714-b240-4dec-9a45-57b61696ab6e",
                  "2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36", 0, "" },
        };

        for (size_t i = 0; i < sizeof(relative) / sizeof(relative[0]); i++)
                check(&relative[i]);
}

static void test_not_a_cluster_job(void **state)
{
        static const char *const paths[] = {
                "",
                "/",
                "/system.slice/web-1.service",
                "/user.slice/user-0.slice/session-3.scope",
                "/kubepods.slice/kubepods-burstable.slice",                      /* the QoS level, no pod */
                "/kubepods.slice/kubepods-pod123.slice/cri-containerd-ab.scope",  /* not a UID */
                "/kubepods.slice/kubepods-podAB5C6C714_B240_4DEC_9A45_57B61696AB6E.slice", /* not as the kubelet writes it */
                "/mykubepods-pod55c6c714_b240_4dec_9a45_57b61696ab6e.slice",      /* kubepods must start a name part */
                "/kubepods/pod55c6c714_b240_4dec_9a45_57b61696ab6e/x",            /* cgroupfs keeps the dashes */
                "/other/burstable/pod55c6c714-b240-4dec-9a45-57b61696ab6e/x",     /* no kubepods above */
                "/system.slice/slurmstepd.scope/job_0/step_0",                    /* Slurm's ids start at 1 */
                "/system.slice/slurmstepd.scope/job_x/step_0",
                "/system.slice/slurmstepd.scope/job_4294967296",                 /* above a uint32_t */
                "/system.slice/slurmd.service/job_42",
                /* made by a user in a subtree delegated to it: not where slurmstepd puts jobs */
                "/user.slice/user-1000.slice/user@1000.service/app.slice/system.slice/slurmstepd.scope/job_42/step_0",
                "/user.slice/user-1000.slice/user@1000.service/slurm/uid_1000/job_42/step_0",
                "/other.slice/slurmstepd.scope/job_42/step_0",
                "/slurm/job_42/step_0",                                           /* v1 has uid_ between */
                "/slurm_/uid_0/job_42",
                "/notslurm/uid_0/job_42",
        };
        struct cluster_cgroup cg;

        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                print_message("# %s\n", paths[i]);
                assert_false(cluster_cgroup_parse(paths[i], &cg));
                assert_int_equal(cg.qos, KUBERNETES_QOS_NONE);
                assert_int_equal(cg.slurm_job_id, 0);
        }
}

/* A whole /proc/<pid>/cgroup: Slurm's v1 plugin puts jobs in some hierarchies only (test-components.md). */
static void test_proc_file(void **state)
{
        struct cluster_cgroup cg;

        assert_true(cluster_cgroup_parse_proc("12:freezer:/slurm_localhost/uid_0/job_9/step_0\n"
                                              "4:memory:/slurm_localhost/uid_0/job_9/step_0/task_0\n"
                                              "1:name=systemd:/user.slice\n0::/user.slice\n",
                                              &cg));
        assert_int_equal(cg.slurm_job_id, 9);
        /* the unified line is preferred, wherever it is */
        assert_true(cluster_cgroup_parse_proc("1:name=systemd:/slurm/uid_0/job_1\n"
                                              "0::/system.slice/slurmstepd.scope/job_2/step_0/user/task_0",
                                              &cg));
        assert_int_equal(cg.slurm_job_id, 2);
        assert_string_equal(cg.slurm_step, "0");
        /* the job's own cgroup, and a step name that is no step's: the job without a step */
        assert_true(cluster_cgroup_parse_proc("0::/system.slice/slurmstepd.scope/job_2\n", &cg));
        assert_string_equal(cg.slurm_step, "");
        assert_true(cluster_cgroup_parse_proc("0::/system.slice/slurmstepd.scope/job_2/step_A\n", &cg));
        assert_string_equal(cg.slurm_step, "");
        assert_false(cluster_cgroup_parse_proc("0::/system.slice/x.service\n", &cg));
        assert_false(cluster_cgroup_parse_proc("garbage\n::\n0:\n", &cg));
        assert_false(cluster_cgroup_parse_proc("", &cg));
}

static void test_pod_uid_as_written(void **state)
{
        char uid[KUBERNETES_POD_UID_MAX + 1];

        assert_true(kubernetes_pod_uid_parse("55C6C714_B240_4DEC_9A45_57B61696AB6E", uid));
        assert_string_equal(uid, "55c6c714-b240-4dec-9a45-57b61696ab6e");
        assert_true(kubernetes_pod_uid_parse("8daa50c3a64c9ff60bb9eab7b44b56fd", uid));
        assert_false(kubernetes_pod_uid_parse("55c6c714-b240-4dec-9a45-57b61696ab6", uid));
        assert_false(kubernetes_pod_uid_parse("55c6c714-b240-4dec-9a45-57b61696ab6ef", uid));
        assert_false(kubernetes_pod_uid_parse("55c6c714b-240-4dec-9a45-57b61696ab6e", uid));
        assert_false(kubernetes_pod_uid_parse("", uid));
        assert_int_equal(kubernetes_qos_from_string("burstable"), KUBERNETES_QOS_BURSTABLE);
        assert_true(kubernetes_qos_from_string("none") < 0);
        assert_true(kubernetes_qos_from_string("Burstable") < 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_paths),
                cmocka_unit_test(test_seen_from_a_cgroup_namespace),
                cmocka_unit_test(test_not_a_cluster_job),
                cmocka_unit_test(test_proc_file),
                cmocka_unit_test(test_pod_uid_as_written),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
