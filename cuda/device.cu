// Device discovery for `--device auto`.
#include <cuda_runtime.h>

#include "error.cuh"

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
