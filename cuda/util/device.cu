// Device discovery for `--device auto`, and what the Rust side asks of the device outside
// any kernel: its free memory, the --pin switch, page-locking the caller's host memory.
#include <cstdint>
#include <cstdio>
#include <mutex>

#include <cuda_runtime.h>

#include "error.cuh"
#include "env.cuh"
#include "memory.cuh"

// Number of CUDA devices; 0 (not an error) when there is no driver or no GPU.
extern "C" int cuzk_device_count(int* count, char* err, size_t errlen) {
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        *count = 0;
        cudaGetLastError();
        return 0;
    }
    CUZK_CHECK(e);
    return 0;
}

// CUZK_GPU_RESERVE_MIB=N: N MiB of each device the process uses are taken once, when it
// is first made current, and held to the end, so that a large GPU plans and proves as a
// smaller one would (an H200's 141 GB as an 80 GB H100's with N = 58000), for measuring
// the memory plan of smaller devices on the device at hand.
static int reserve_once(int dev, char* err, size_t errlen) {
    static const long mib = cuzk::env_long("CUZK_GPU_RESERVE_MIB", 0, 1L << 30, 0);
    static std::mutex m;
    static bool done[64] = {};
    if (mib == 0) return 0;
    std::lock_guard<std::mutex> lk(m);
    if (dev >= 64 || done[dev]) return 0;
    done[dev] = true;
    void* p = nullptr;
    CUZK_CHECK(cudaMalloc(&p, (size_t)mib << 20));  // never freed: the process's lifetime
    return 0;
}

// Makes device `dev` current for the calling host thread (every later CUDA call of that
// thread goes to it), after checking it exists.
extern "C" int cuzk_set_device(int dev, char* err, size_t errlen) {
    int count = 0;
    CUZK_CHECK(cudaGetDeviceCount(&count));
    if (dev < 0 || dev >= count) {
        snprintf(err, errlen, "GPU %d does not exist: this machine has %d (numbered from 0)",
                 dev, count);
        return -1;
    }
    CUZK_CHECK(cudaSetDevice(dev));
    return reserve_once(dev, err, errlen);
}

// The calling host thread's current device (for a helper thread that works beside it).
extern "C" int cuzk_get_device(int* dev, char* err, size_t errlen) {
    CUZK_CHECK(cudaGetDevice(dev));
    return 0;
}

// Device `dev`'s name (e.g. "NVIDIA H200"), for the report.
extern "C" int cuzk_device_name(int dev, char* name, size_t len, char* err, size_t errlen) {
    cudaDeviceProp p;
    CUZK_CHECK(cudaGetDeviceProperties(&p, dev));
    snprintf(name, len, "%s", p.name);
    return 0;
}

// Free and total memory of the current device, in bytes. Free counts what the
// stream-ordered pool holds for reuse but no allocation uses (util/memory.cuh keeps it
// all): after one partition's MSMs that is tens of gigabytes the driver reports as taken,
// and an allocation that needs it gets it (pool_alloc trims the pool and tries again).
extern "C" int cuzk_mem_info(size_t* free_b, size_t* total_b, char* err, size_t errlen) {
    CUZK_CHECK(cuzk::device_available(free_b, total_b));
    return 0;
}

// Whether large host<->device copies of the MSM and NTT page-lock their host buffers
// (util/transfer.cuh, HostPin): the --pin switch.
extern "C" void cuzk_set_pin_transfers(int on) { cuzk::pin_transfers() = on != 0; }

// Page-locks [ptr, ptr + bytes) for the caller (mapped for the device: on 64-bit systems
// registered memory always is; util/transfer.cuh's gather reads it directly) until
// cuzk_host_unregister(ptr). read_only: the device only reads it, which a file's shared
// mapping needs (Linux 6.5 and later refuse a long-term writable pin of file-backed pages:
// cudaErrorInvalidValue, seen on the H200 hosts' 6.18 kernel).
extern "C" int cuzk_host_register(const void* ptr, size_t bytes, int read_only, char* err,
                                  size_t errlen) {
    cudaError_t e = cudaHostRegister(
        const_cast<void*>(ptr), bytes,
        cudaHostRegisterPortable | cudaHostRegisterMapped |
            (read_only ? cudaHostRegisterReadOnly : 0u));
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "cudaHostRegister(%zu bytes) failed: %s", bytes,
                 cudaGetErrorString(e));
        return (int)e;
    }
    return 0;
}

extern "C" void cuzk_host_unregister(const void* ptr) {
    if (cudaHostUnregister(const_cast<void*>(ptr)) != cudaSuccess) cudaGetLastError();
}
