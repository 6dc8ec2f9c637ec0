// A·w, B·w, C·w on the device from a pre-compiled constraint system (`--pce-eval gpu`;
// the recording and its CPU evaluation: src/synth/pce.rs). The matrices go to the device
// once per run and stay (PceSet, pce.cu); per partition the witness is the aux assignment
// the MSMs upload anyway plus the few inputs, so the 3 · m evaluations (12.9 GB at 32GiB)
// never cross the bus and the host never computes them.
#pragma once
#include "../exec/exec.cuh"
#include "../ff/fp.cuh"

namespace cuzk {

// A column with this bit set is an aux variable, else an input (pce.rs, AUX).
constexpr uint32_t PCE_AUX = 1u << 31;

// One matrix, CSR as recorded: row r's terms are [row_start[r], row_start[r + 1]), each a
// column and an index into the coefficient table (index 0 is 1).
struct CsrView {
    const uint64_t* row_start;
    const uint32_t* cols;
    const uint32_t* coeffs;
};

// The arrays of a recording in one kind of storage (device memory, or host memory for the
// emulation).
template <template <class> class Buf>
struct PceArrays {
    Buf<uint64_t> row_start[3];
    Buf<uint32_t> cols[3], coeffs[3];
    Buf<FrMont> table;  // the distinct coefficients, Montgomery form
};

struct PceSet {
    bool emulate = false;
    size_t rows = 0, inputs = 0, aux = 0;
    PceArrays<DevBuf> dev;
    PceArrays<HostBuf> host;
    CsrView view(int k) const {
        return emulate ? CsrView{host.row_start[k].ptr, host.cols[k].ptr, host.coeffs[k].ptr}
                       : CsrView{dev.row_start[k].ptr, dev.cols[k].ptr, dev.coeffs[k].ptr};
    }
    const FrMont* table() const { return emulate ? host.table.ptr : dev.table.ptr; }
};

inline PceArrays<HostBuf>& storage(PceSet& s, HostExec&) { return s.host; }
inline PceArrays<DevBuf>& storage(PceSet& s, DeviceExec&) { return s.dev; }

// out[r] = Σ coefficient · value over row r's terms, one thread a row. As on the CPU, zero
// values are skipped and coefficient 1 or value 1 costs no product: the witness is mostly
// bits and most coefficients are 1. Rows are short (a few terms) but for some bit packings
// and sums; a warp waits for its longest row.
struct PceEvalFn {
    CsrView m;
    const FrMont* table;
    const FrMont* inputs;
    const FrMont* aux;
    FrMont* out;
    CUZK_HD void operator()(size_t r) const {
        const FrMont one = FrMont::one();
        FrMont acc = FrMont::zero();
        const uint64_t end = m.row_start[r + 1];
        for (uint64_t t = m.row_start[r]; t < end; ++t) {
            const uint32_t col = m.cols[t];
            const FrMont v = col & PCE_AUX ? aux[col & ~PCE_AUX] : inputs[col];
            if (is_zero(v)) continue;
            const uint32_t ci = m.coeffs[t];
            acc = add(acc, ci == 0 ? v : eq(v, one) ? table[ci] : mul(table[ci], v));
        }
        out[r] = acc;
    }
};

// The first row where a·b ≠ c (a witness that does not satisfy the recording: a damaged or
// foreign cache file), into *first (atomically; ~0 stays when every row holds).
struct PceCheckFn {
    const FrMont* a;
    const FrMont* b;
    const FrMont* c;
    unsigned long long* first;
    CUZK_HD void operator()(size_t r) const {
        if (!eq(mul(a[r], b[r]), c[r])) mark_first(first, r);
    }
};

// Evaluates the recording's three matrices at the witness (inputs: n_inputs values in
// host memory; aux: the set's values where ex reads them) into out[0..2] (rows each), and
// checks a·b = c on every row: an error names the first row that fails.
template <class Exec>
int pce_eval(Exec& ex, const PceSet& pce, const FrMont* inputs_host, size_t n_inputs,
             const FrMont* aux, size_t n_aux, FrMont* const out[3]) {
    if (n_inputs != pce.inputs || n_aux != pce.aux) {
        snprintf(ex.err, ex.errlen,
                 "the pre-compiled constraint system is for %zu inputs and %zu aux variables, "
                 "the witness has %zu and %zu",
                 pce.inputs, pce.aux, n_inputs, n_aux);
        return -1;
    }
    typename Exec::template Buf<FrMont> inputs;
    CUZK_RC(ex.alloc(inputs, n_inputs, "PCE inputs"));
    CUZK_RC(ex.upload(inputs.ptr, inputs_host, n_inputs));
    for (int k = 0; k < 3; ++k)
        CUZK_RC(ex.launch(pce.rows, PceEvalFn{pce.view(k), pce.table(), inputs.ptr, aux, out[k]},
                          "PCE A·w, B·w, C·w", 256));
    typename Exec::template Buf<unsigned long long> first;
    CUZK_RC(ex.alloc(first, 1, "PCE check"));
    const unsigned long long none = ~0ull;
    CUZK_RC(ex.upload(first.ptr, &none, 1));
    CUZK_RC(ex.launch(pce.rows, PceCheckFn{out[0], out[1], out[2], first.ptr}, "PCE a·b = c",
                      256));
    unsigned long long got;
    CUZK_RC(ex.download(&got, first.ptr, 1));
    if (got != none) {
        snprintf(ex.err, ex.errlen,
                 "the C1's witness does not satisfy constraint %llu of %zu of the recorded "
                 "circuit: the C1 is inconsistent in a way its check before synthesis does "
                 "not see, or the recording is not this circuit's",
                 got, pce.rows);
        return -1;
    }
    return 0;
}

}  // namespace cuzk
