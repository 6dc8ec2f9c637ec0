// Scalar vectors kept in device memory between calls (or, emulated, in host memory that
// stands in for it): a partition's aux assignment uploaded once and narrowed on the device
// to the variables of the A or B query, or H's coefficients straight from the NTT, so
// that no scalar vector makes a round trip through the host.
#pragma once
#include "../exec/exec.cuh"
#include "../ff/fp.cuh"

namespace cuzk {

struct ScalarSet {
    bool emulate = false;
    size_t n = 0;
    DevBuf<FrMont> dev;
    HostBuf<FrMont> host;
    const FrMont* ptr() const { return emulate ? host.ptr : dev.ptr; }
};

// A set's storage for the executor that fills it.
inline HostBuf<FrMont>& storage(ScalarSet& s, HostExec&) { return s.host; }
inline DevBuf<FrMont>& storage(ScalarSet& s, DeviceExec&) { return s.dev; }

}  // namespace cuzk
