// Process-wide settings read by the host side of the kernels: the CUZK_* measuring knobs
// from the environment (env_long), and the --pin switch (pin_transfers) that the Rust
// side sets once through cuzk_set_pin_transfers (util/device.cu).
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace cuzk {

// Large host↔device copies page-lock their host buffer first (cudaHostRegister, `--pin
// on`), so the DMA engine reads or writes it directly, or (`--pin off`) uploads go
// through our own pinned staging buffers (Staging, util/transfer.cuh): pageable copies go
// through the driver's staging buffer at a fraction of the bus speed (≈ 5 GB/s on the
// H200 host for the quotient's inputs, docs/PERF.md). Process-wide; smaller copies are
// not worth it.
inline bool& pin_transfers() {
    static bool on = false;
    return on;
}
constexpr size_t PIN_MIN_BYTES = size_t(32) << 20;

// A measuring knob (CUZK_*): the integer in [lo, hi] that the environment variable
// holds, or fallback when it is unset or empty. Any other value is ignored with a warning
// on stderr rather than read as strtol's 0 (CUZK_MSM_SLICE=abc would otherwise select
// the per-bucket segments).
inline long env_long(const char* name, long lo, long hi, long fallback) {
    const char* v = getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno == 0 && *end == '\0' && x >= lo && x <= hi) return x;
    fprintf(stderr, "cuzk-prove: warning: %s=%s ignored (not an integer in [%ld, %ld])\n", name,
            v, lo, hi);
    return fallback;
}

}  // namespace cuzk
