// Every CUDA call is checked; a failure writes "call: error (sizes)" into the caller's
// buffer and returns non-zero, so Rust can report it as one clear error.
#pragma once
#include <cstdio>
#include <cuda_runtime.h>

#define CUZK_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            snprintf(err, errlen, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), \
                     __FILE__, __LINE__);                                                 \
            return (int)e_;                                                               \
        }                                                                                 \
    } while (0)

#define CUZK_TRY(expr)                                          \
    do {                                                        \
        const char* m_ = (expr);                                \
        if (m_) {                                               \
            snprintf(err, errlen, "%s", m_);                    \
            return -1;                                          \
        }                                                       \
    } while (0)

// Propagate a non-zero status from an executor call.
#define CUZK_RC(expr)              \
    do {                           \
        int rc_ = (expr);          \
        if (rc_ != 0) return rc_;  \
    } while (0)

namespace cuzk {

// Device memory freed on scope exit.
template <typename T>
struct DeviceBuffer {
    T* ptr = nullptr;
    char msg[160];
    const char* alloc(size_t n, const char* what) {
        if (n == 0) return nullptr;
        cudaError_t e = cudaMalloc(&ptr, n * sizeof(T));  // tests only (fr_test.cu)
        if (e != cudaSuccess) {
            ptr = nullptr;
            snprintf(msg, sizeof msg, "cudaMalloc(%s: %zu bytes) failed: %s", what, n * sizeof(T),
                     cudaGetErrorString(e));
            return msg;
        }
        return nullptr;
    }
    ~DeviceBuffer() {
        if (ptr) cudaFree(ptr);
    }
};

}  // namespace cuzk
