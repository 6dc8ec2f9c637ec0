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
    return 0;
}
