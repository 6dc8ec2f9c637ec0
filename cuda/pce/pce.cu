// Entry points for a pre-compiled constraint system kept where the kernels read it
// (eval.cuh): made once per run, read by every partition's quotient
// (groth16/quotient.cu), freed at the end.
#include <cstdio>
#include <new>
#include <type_traits>

#include "eval.cuh"

// One matrix as the host holds it (src/synth/pce.rs, Csr): rows + 1 offsets, nnz terms.
struct CuzkCsr {
    const uint64_t* row_start;
    const uint32_t* cols;
    const uint32_t* coeffs;
    size_t nnz;
};

namespace {

template <class Exec>
int upload_pce(Exec& ex, cuzk::PceSet& s, const CuzkCsr* m, const cuzk::FrMont* table,
               size_t ntable, bool from_mapping) {
    if constexpr (std::is_same_v<Exec, cuzk::DeviceExec>) ex.from_mapping = from_mapping;
    auto& a = cuzk::storage(s, ex);
    for (int k = 0; k < 3; ++k) {
        CUZK_RC(ex.alloc(a.row_start[k], s.rows + 1, "PCE row offsets"));
        CUZK_RC(ex.upload(a.row_start[k].ptr, m[k].row_start, s.rows + 1));
        CUZK_RC(ex.alloc(a.cols[k], m[k].nnz, "PCE columns"));
        CUZK_RC(ex.upload(a.cols[k].ptr, m[k].cols, m[k].nnz));
        CUZK_RC(ex.alloc(a.coeffs[k], m[k].nnz, "PCE coefficient indices"));
        CUZK_RC(ex.upload(a.coeffs[k].ptr, m[k].coeffs, m[k].nnz));
    }
    CUZK_RC(ex.alloc(a.table, ntable, "PCE coefficients"));
    CUZK_RC(ex.upload(a.table.ptr, table, ntable));
    return ex.sync("PCE upload");
}

}  // namespace

// A new recording *out on the device (or, emulate ≠ 0, in host memory) from the three
// matrices m[0..2] (A, B, C) of `rows` rows and the coefficient table (blst_fr,
// Montgomery). The caller has checked every column and coefficient index (the recording's
// invariant); the kernels index with them unchecked. from_mapping ≠ 0: the arrays lie in a
// read-only file mapping, page-locked chunk by chunk for the copy (RegisteredCopy).
extern "C" int cuzk_pce_new(const CuzkCsr* m, size_t rows, const void* table, size_t ntable,
                            size_t inputs, size_t aux, int emulate, int from_mapping,
                            void** out, char* err, size_t errlen) {
    *out = nullptr;
    auto* s = new (std::nothrow) cuzk::PceSet{};
    if (!s) {
        snprintf(err, errlen, "PCE: out of host memory");
        return -1;
    }
    s->emulate = emulate != 0;
    s->rows = rows;
    s->inputs = inputs;
    s->aux = aux;
    const int rc = cuzk::with_exec(s->emulate, err, errlen, "PCE upload", [&](auto& ex) {
        return upload_pce(ex, *s, m, (const cuzk::FrMont*)table, ntable, from_mapping != 0);
    });
    if (rc != 0) {
        delete s;
        return rc;
    }
    *out = s;
    return 0;
}

extern "C" void cuzk_pce_free(void* pce) { delete (cuzk::PceSet*)pce; }
