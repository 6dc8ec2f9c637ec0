// Memory the executors allocate: device memory from the stream-ordered pool (pool_alloc)
// held by DevBuf, and HostBuf, its stand-in in host memory for the emulation (the
// executors' Buf<T>).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

namespace cuzk {

// Device memory comes from the device's stream-ordered pool (cudaMallocAsync on the
// calling thread's default stream), which keeps freed memory for the next allocation: an MSM makes
// some thirty allocations of up to gigabytes, and cudaMalloc/cudaFree map and unmap them
// each time, cudaFree also waiting for the whole device (which would serialise the
// overlapped point upload, util/transfer.cuh). The pool is told to keep everything
// (release threshold unlimited) and is trimmed only when an allocation fails.
inline cudaError_t pool_alloc(void** p, size_t bytes) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    static bool configured[64] = {};
    cudaMemPool_t pool;
    e = cudaDeviceGetDefaultMemPool(&pool, dev);
    if (e != cudaSuccess) return e;
    if (dev < 64 && !configured[dev]) {
        uint64_t keep = ~0ull;
        e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        if (e != cudaSuccess) return e;
        configured[dev] = true;
    }
    e = cudaMallocAsync(p, bytes, 0);
    if (e == cudaErrorMemoryAllocation) {
        // Memory the pool holds for reuse goes back to the device, then one more try.
        cudaGetLastError();
        cudaDeviceSynchronize();
        cudaMemPoolTrimTo(pool, 0);
        e = cudaMallocAsync(p, bytes, 0);
    }
    return e;
}

// Bytes an allocation on the current device can have now: what the driver reports free
// plus what the pool holds for reuse but no allocation uses (pool_alloc keeps it all, and
// trims it when an allocation needs it). *total_b: the device's memory.
inline cudaError_t device_available(size_t* free_b, size_t* total_b) {
    *free_b = *total_b = 0;
    int dev = 0;
    cudaMemPool_t pool;
    uint64_t reserved = 0, used = 0;
    cudaError_t e = cudaMemGetInfo(free_b, total_b);
    if (e == cudaSuccess) e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, dev);
    if (e == cudaSuccess)
        e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    if (e == cudaSuccess) e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    if (e == cudaSuccess && reserved > used) *free_b += (size_t)(reserved - used);
    return e;
}

// Owning buffer for device memory: movable, not copyable, freed on scope exit or reset()
// (in stream order: work already queued that reads it still sees it).
template <class T>
struct DevBuf {
    T* ptr = nullptr;
    size_t len = 0;
    DevBuf() = default;
    DevBuf(const DevBuf&) = delete;
    DevBuf& operator=(const DevBuf&) = delete;
    ~DevBuf() { reset(); }
    void reset() {
        if (ptr) cudaFreeAsync(ptr, 0);
        ptr = nullptr;
        len = 0;
    }
    void swap(DevBuf& o) {
        std::swap(ptr, o.ptr);
        std::swap(len, o.len);
    }
};

template <class T>
struct HostBuf {
    T* ptr = nullptr;
    size_t len = 0;
    std::vector<T> v;
    void reset() {
        std::vector<T>().swap(v);
        ptr = nullptr;
        len = 0;
    }
    void swap(HostBuf& o) {
        std::swap(ptr, o.ptr);
        std::swap(len, o.len);
        v.swap(o.v);
    }
};

}  // namespace cuzk
