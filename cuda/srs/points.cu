// Entry points for SRS sections decoded on the device (points.cuh): create from the raw
// mapped bytes, read back (tests), free. The MSM takes a set directly (msm/msm.cu).
#include <new>

#include "points.cuh"

using cuzk::srs::PointSet;

// Decodes n raw points of G1 (g2 = 0, 96 bytes each) or G2 (g2 ≠ 0, 192 bytes) from host
// memory into a new set *out, on the GPU or (emulate ≠ 0) on the host. *bad receives the
// index of the first invalid point (~0 if none); a set with invalid points is not created
// and the call fails. pin ≠ 0: raw is a read-only file mapping (the parameters), copied
// page-locked chunk by chunk (util/transfer.cuh, RegisteredCopy: DMA from the page cache,
// no host copy); *pinned says whether every chunk could be locked (those refused were
// staged). pin = 0 copies through the pinned staging buffers (Staging).
extern "C" int cuzk_points_new(int g2, const void* raw, size_t n, int emulate, int pin,
                               int* pinned, void** out, uint64_t* bad, char* err,
                               size_t errlen) {
    *out = nullptr;
    *bad = ~0ull;
    *pinned = 0;
    try {
        auto* ps = new PointSet{};
        ps->g2 = g2 != 0;
        ps->emulate = emulate != 0;
        ps->n = n;
        int rc;
        if (emulate) {
            cuzk::HostExec ex{err, errlen};
            rc = g2 ? cuzk::srs::upload_decode<cuzk::Fp2>(ex, ps->host, raw, n, bad)
                    : cuzk::srs::upload_decode<cuzk::Fp>(ex, ps->host, raw, n, bad);
        } else {
            cuzk::DeviceExec ex{err, errlen};
            ex.from_mapping = pin != 0;
            ex.stage = true;
            // The decode on the highest priority: while the prover's kernels run (the
            // first partition's H and MSMs beside the upload, CUZK_EARLY_SRS), its blocks
            // take the SMs as they free up instead of after the prover's kernel, and the
            // next section's upload, which follows the decode, does not wait for it.
            rc = [&]() -> int {
                int lo_prio = 0, hi_prio = 0;
                CUZK_CHECK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
                CUZK_CHECK(
                    cudaStreamCreateWithPriority(&ex.stream, cudaStreamNonBlocking, hi_prio));
                const int r = g2 ? cuzk::srs::upload_decode<cuzk::Fp2>(ex, ps->dev, raw, n, bad)
                                 : cuzk::srs::upload_decode<cuzk::Fp>(ex, ps->dev, raw, n, bad);
                cudaStreamSynchronize(ex.stream);  // also after a failure: nothing queued
                cudaStreamDestroy(ex.stream);
                return r;
            }();
            *pinned = pin && ex.refused == 0;
        }
        if (rc == 0 && *bad != ~0ull) {
            snprintf(err, errlen, "point %llu of %zu does not decode", (unsigned long long)*bad,
                     n);
            rc = -1;
        }
        if (rc != 0) {
            delete ps;
            return rc;
        }
        *out = ps;
        return 0;
    } catch (const std::exception& e) {  // never unwind into Rust
        snprintf(err, errlen, "SRS points: %s", e.what());
        return -1;
    }
}

// Copies decoded points [offset, offset + n) of a set to host memory (blst affine layout).
extern "C" int cuzk_points_read(const void* set, size_t offset, size_t n, void* out, char* err,
                                size_t errlen) {
    const auto* ps = (const PointSet*)set;
    const size_t size = ps->g2 ? 192 : 96;
    if (offset > ps->n || n > ps->n - offset) {
        snprintf(err, errlen, "points [%zu, %zu) of a set of %zu", offset, offset + n, ps->n);
        return -1;
    }
    const uint8_t* src = (const uint8_t*)ps->points() + offset * size;
    if (n == 0) return 0;
    if (ps->emulate) {
        memcpy(out, src, n * size);
        return 0;
    }
    CUZK_CHECK(cudaMemcpy(out, src, n * size, cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" void cuzk_points_free(void* set) { delete (PointSet*)set; }
