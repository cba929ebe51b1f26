// SPDX-License-Identifier: MIT
//
// timed-kernels: the evaluation's workload models (scripts/gpreempt_eval/workloads.json)
// played on a real AMD GPU through the HIP runtime, with the command line and
// the JSON report of kfdemu-app, so scripts/gpreempt_eval/node_pass.py drives both
// alike. A kernel of D us and W workgroups spins each workgroup for D divided
// by its number of rounds (W over the device's resident workgroups), which is
// what kfdemu's time model assumes of a kernel.
//
//   timed-kernels [--gpu N] --kernels-per-request K --kernel-us D --workgroups W
//                 (--rate R | --continuous) [--duration S] [--kernel-name NAME] [--json]
//                 [--latency-log PATH] [--queues N]
//
// --queues N runs every request's kernels on each of N streams, so that the
// process has N busy hardware queues (it raises ROCclr's GPU_MAX_HW_QUEUES
// to N unless the environment sets it): scripts/real-node/bench-preemption
// measures a suspension against the queue count.
//
// --latency-log writes kfdemu-app's per-request log (kfdemu-app(1)). A real
// node has no model time: its latency column is the wall-clock latency, as
// the wall-clock column is, and the first kernel's start is not known (-1).
//
// Prints "READY pid=<pid> queues=<N>" once the device is warm; SIGUSR1 prints
// the report so far, SIGTERM/SIGINT stop it and print the final report.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::atomic<bool> stop_requested{false};
std::atomic<bool> report_requested{false};

void on_stop(int) { stop_requested = true; }
void on_report(int) { report_requested = true; }

int64_t now_ns()
{
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Options {
        int gpu = 0;
        unsigned kernels_per_request = 1;
        double kernel_us = 1000;
        unsigned workgroups = 64;
        unsigned queues = 1;
        double rate = 0;          // 0: continuous (closed loop)
        double duration_s = 0;    // 0: until SIGTERM
        bool json = false;
        const char *latency_log = nullptr;
};

// The device's wall clock (s_memrealtime) runs at a fixed rate, unlike the
// shader clock, so a spin on it lasts the same whatever the power state.
__global__ void spin(long long ticks)
{
        long long start = wall_clock64();
        while (wall_clock64() - start < ticks) {
        }
}

bool check(hipError_t e, const char *what)
{
        if (e == hipSuccess)
                return true;
        fprintf(stderr, "timed-kernels: %s failed: %s\n", what, hipGetErrorString(e));
        return false;
}

double number(const char *opt, const char *value)
{
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || *end || v < 0) {
                fprintf(stderr, "timed-kernels: %s \"%s\": give a non-negative number.\n", opt, value);
                exit(2);
        }
        return v;
}

Options parse(int argc, char **argv)
{
        Options o;
        for (int i = 1; i < argc; i++) {
                std::string a = argv[i];
                auto value = [&]() -> const char * {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "timed-kernels: %s needs a value.\n", a.c_str());
                                exit(2);
                        }
                        return argv[++i];
                };
                if (a == "--gpu" || a == "-g")
                        o.gpu = int(number("--gpu", value()));
                else if (a == "--kernels-per-request" || a == "-k")
                        o.kernels_per_request = std::max(1u, unsigned(number("--kernels-per-request", value())));
                else if (a == "--kernel-us")
                        o.kernel_us = number("--kernel-us", value());
                else if (a == "--queues" || a == "-q")
                        o.queues = std::min(64u, std::max(1u, unsigned(number("--queues", value()))));
                else if (a == "--workgroups")
                        o.workgroups = std::max(1u, unsigned(number("--workgroups", value())));
                else if (a == "--rate" || a == "-r")
                        o.rate = number("--rate", value());
                else if (a == "--continuous" || a == "-c")
                        o.rate = 0;
                else if (a == "--duration" || a == "-d")
                        o.duration_s = number("--duration", value());
                else if (a == "--kernel-name")
                        value();  // only there for gpreemptd's MatchCommandLine
                else if (a == "--json")
                        o.json = true;
                else if (a == "--latency-log")
                        o.latency_log = value();
                else {
                        fprintf(stderr, "timed-kernels: unknown option %s (see the comment at the top of "
                                        "scripts/real-node/timed-kernels.hip).\n", a.c_str());
                        exit(2);
                }
        }
        return o;
}

double percentile(std::vector<double> sorted, double q)
{
        if (sorted.empty())
                return 0;
        size_t i = size_t(std::ceil(q * sorted.size()));
        return sorted[std::min(sorted.size() - 1, i ? i - 1 : 0)];
}

void print_report(const Options &o, const std::vector<double> &latencies_ms, uint64_t requests,
                  uint64_t kernels, double elapsed_s, bool final)
{
        std::vector<double> s = latencies_ms;
        std::sort(s.begin(), s.end());
        double mean = 0;
        for (double v : s)
                mean += v / double(s.size());
        if (!o.json) {
                printf("requests %llu in %.3f s, p50 %.3f p99 %.3f max %.3f ms\n", (unsigned long long)requests,
                       elapsed_s, percentile(s, 0.5), percentile(s, 0.99), s.empty() ? 0 : s.back());
        } else {
                printf("{\"pid\":%d,\"final\":%s,\"elapsed_s\":%.9f,\"requests\":%llu,\"kernels\":%llu,"
                       "\"requests_per_s\":%.9f,\"latency_ms\":{\"samples\":%zu,\"mean\":%.6f,\"p50\":%.6f,"
                       "\"p95\":%.6f,\"p99\":%.6f,\"max\":%.6f},\"queues\":[{\"read_dispatch_id\":%llu}]}\n",
                       int(getpid()), final ? "true" : "false", elapsed_s, (unsigned long long)requests,
                       (unsigned long long)kernels, elapsed_s > 0 ? double(requests) / elapsed_s : 0, s.size(),
                       mean, percentile(s, 0.5), percentile(s, 0.95), percentile(s, 0.99),
                       s.empty() ? 0 : s.back(), (unsigned long long)kernels);
        }
        fflush(stdout);
}

}  // namespace

int main(int argc, char **argv)
{
        Options o = parse(argc, argv);
        hipDeviceProp_t prop;
        std::vector<hipStream_t> streams(o.queues);
        int clock_khz = 0;

        // ROCclr shares its hardware queues among the streams beyond this many;
        // read when the runtime starts, so before the first HIP call
        if (o.queues > 1 && !getenv("GPU_MAX_HW_QUEUES"))
                setenv("GPU_MAX_HW_QUEUES", std::to_string(o.queues).c_str(), 1);
        if (!check(hipSetDevice(o.gpu), "hipSetDevice") || !check(hipGetDeviceProperties(&prop, o.gpu), "hipGetDeviceProperties") ||
            !check(hipDeviceGetAttribute(&clock_khz, hipDeviceAttributeWallClockRate, o.gpu), "reading the wall clock rate"))
                return 1;
        for (hipStream_t &stream : streams)
                if (!check(hipStreamCreate(&stream), "hipStreamCreate"))
                        return 1;
        // Resident 256-work-item workgroups: the emulator's slots per CU.
        unsigned resident = unsigned(prop.multiProcessorCount) * unsigned(prop.maxThreadsPerMultiProcessor / 256);
        unsigned rounds = (o.workgroups + resident - 1) / resident;
        long long ticks = (long long)(o.kernel_us * clock_khz / 1000.0 / rounds);

        for (hipStream_t stream : streams) {
                hipLaunchKernelGGL(spin, dim3(1), dim3(256), 0, stream, 0LL);
                if (!check(hipStreamSynchronize(stream), "the warm-up kernel"))
                        return 1;
        }
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
        signal(SIGUSR1, on_report);
        printf("READY pid=%d queues=%u\n", int(getpid()), o.queues);
        fflush(stdout);

        FILE *latency_log = nullptr;
        if (o.latency_log) {
                latency_log = fopen(o.latency_log, "w");
                if (!latency_log) {
                        fprintf(stderr, "timed-kernels: cannot open the latency-log file %s: %s.\n", o.latency_log,
                                strerror(errno));
                        return 2;
                }
                fputs("# scheduled_ns model_latency_ns wall_latency_ns submitted_after_ns "
                      "first_kernel_start_after_ns\n", latency_log);
        }
        std::vector<double> latencies_ms;
        uint64_t requests = 0, kernels = 0;
        int64_t start = now_ns(), next = start;
        int64_t end = o.duration_s > 0 ? start + int64_t(o.duration_s * 1e9) : 0;
        while (!stop_requested && (!end || now_ns() < end)) {
                int64_t scheduled = o.rate > 0 ? next : now_ns();
                if (o.rate > 0) {
                        next += int64_t(1e9 / o.rate);
                        while (now_ns() < scheduled && !stop_requested) {
                                int64_t left = scheduled - now_ns();
                                timespec ts = {time_t(left / 1000000000), long(left % 1000000000)};
                                nanosleep(&ts, nullptr);
                        }
                        if (stop_requested || (end && scheduled >= end))
                                break;
                }
                int64_t submitted = now_ns();
                for (unsigned k = 0; k < o.kernels_per_request; k++)
                        for (hipStream_t stream : streams)
                                hipLaunchKernelGGL(spin, dim3(o.workgroups), dim3(256), 0, stream, ticks);
                for (hipStream_t stream : streams)
                        if (!check(hipStreamSynchronize(stream), "a request"))
                                return 1;
                int64_t latency = now_ns() - scheduled;
                latencies_ms.push_back(double(latency) / 1e6);
                if (latency_log)
                        fprintf(latency_log, "%lld %lld %lld %lld -1\n", (long long)scheduled, (long long)latency,
                                (long long)latency, (long long)(submitted - scheduled));
                requests++;
                kernels += o.kernels_per_request * o.queues;
                if (report_requested.exchange(false))
                        print_report(o, latencies_ms, requests, kernels, double(now_ns() - start) / 1e9, false);
        }
        print_report(o, latencies_ms, requests, kernels, double(now_ns() - start) / 1e9, true);
        if (latency_log && fclose(latency_log) != 0) {
                fprintf(stderr, "timed-kernels: cannot write the latency-log file %s.\n", o.latency_log);
                return 1;
        }
        bool destroyed = true;
        for (hipStream_t stream : streams)
                destroyed = check(hipStreamDestroy(stream), "hipStreamDestroy") && destroyed;
        return destroyed ? 0 : 1;
}
