// Where the device time goes: CUZK_TRACE's marks on the default stream (trace_on,
// DeviceMarks; DeviceExec::mark and trace() record and print them) and the timers behind
// the executors' start/stop/elapsed (DeviceTimer from CUDA events, HostTimer from the
// clock).
#pragma once
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

namespace cuzk {

// CUZK_TRACE=1 (any value but 0): DeviceExec::mark records a timing event on the
// default stream, and trace() prints every mark's device time since the first to stderr
// (with the arrival of a pending upload's batches), e.g. to see what an upload overlaps.
// Off, marks cost nothing; on, they add no synchronisation but trace()'s own.
inline bool trace_on() {
    static const bool on = [] {
        const char* v = getenv("CUZK_TRACE");
        return v && *v && strcmp(v, "0") != 0;
    }();
    return on;
}

struct DeviceMarks {
    std::vector<std::pair<const char*, cudaEvent_t>> at;
    DeviceMarks() = default;
    DeviceMarks(const DeviceMarks&) = delete;
    DeviceMarks& operator=(const DeviceMarks&) = delete;
    ~DeviceMarks() {
        for (auto& m : at) cudaEventDestroy(m.second);
    }
};

// Device time between two points of the default stream, from CUDA events (no host
// synchronisation in between); the host emulation's Timer reads the clock instead.
struct DeviceTimer {
    cudaEvent_t start = nullptr, stop = nullptr;
    DeviceTimer() = default;
    DeviceTimer(const DeviceTimer&) = delete;
    DeviceTimer& operator=(const DeviceTimer&) = delete;
    ~DeviceTimer() {
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
    }
};

struct HostTimer {
    std::chrono::steady_clock::time_point start, stop;
};

}  // namespace cuzk
