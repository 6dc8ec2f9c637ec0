// Element-wise Fp and Fp2 kernels, the entry points the Rust tests use to check the
// device arithmetic (fp.cuh, fp2.cuh) against blst.
#include "../exec/exec.cuh"
#include "fp2.cuh"

namespace {

template <class F>
struct FieldOpsFn {
    const F* a;
    const F* b;
    F* out;  // 6n: a·b, a², a+b, a−b, −a, a·b − a² (mul_sub)
    size_t n;
    CUZK_HD void operator()(size_t i) const {
        const F x = a[i], y = b[i];
        out[i] = cuzk::mul(x, y);
        out[n + i] = cuzk::sqr(x);
        out[2 * n + i] = cuzk::add(x, y);
        out[3 * n + i] = cuzk::sub(x, y);
        out[4 * n + i] = cuzk::neg(x);
        out[5 * n + i] = cuzk::mul_sub(x, y, x, x);
    }
};

template <class F, class Exec>
int field_ops(Exec& ex, const F* a, const F* b, F* out, size_t n) {
    typename Exec::template Buf<F> da, db, dout;
    CUZK_RC(ex.alloc(da, n, "a"));
    CUZK_RC(ex.alloc(db, n, "b"));
    CUZK_RC(ex.alloc(dout, 6 * n, "out"));
    CUZK_RC(ex.upload(da.ptr, a, n));
    CUZK_RC(ex.upload(db.ptr, b, n));
    CUZK_RC(ex.launch(n, FieldOpsFn<F>{da.ptr, db.ptr, dout.ptr, n}, "field ops"));
    CUZK_RC(ex.sync("field ops"));
    return ex.download(out, dout.ptr, 6 * n);
}

template <class F>
int field_entry(const void* a, const void* b, void* out, size_t n, int emulate, char* err,
                size_t errlen) {
    if (emulate) {
        cuzk::HostExec ex{err, errlen};
        return field_ops(ex, (const F*)a, (const F*)b, (F*)out, n);
    }
    cuzk::DeviceExec ex{err, errlen};
    return field_ops(ex, (const F*)a, (const F*)b, (F*)out, n);
}

}  // namespace

// out holds 6n elements: a·b, a², a+b, a−b, −a, a·b − a² (blst_fp, Montgomery). emulate ≠ 0 runs
// the same code on the host. Returns 0, or non-zero with `err` filled.
extern "C" int cuzk_fp_ops(const void* a, const void* b, void* out, size_t n, int emulate,
                           char* err, size_t errlen) {
    return field_entry<cuzk::Fp>(a, b, out, n, emulate, err, errlen);
}

// The same over Fp2 (blst_fp2).
extern "C" int cuzk_fp2_ops(const void* a, const void* b, void* out, size_t n, int emulate,
                            char* err, size_t errlen) {
    return field_entry<cuzk::Fp2>(a, b, out, n, emulate, err, errlen);
}
