// Entry points for scalar sets (scalars.cuh): upload, select by a density bitmap, free.
// MSMs read a set directly (msm/msm.cu); the NTT can leave H in one (ntt/ntt.cu).
#include <new>

#include "scalars.cuh"

namespace {

using cuzk::FrMont;
using cuzk::ScalarSet;

// flag[i] = bit i of the density words.
struct DensityFlagFn {
    const uint64_t* words;
    uint32_t* flag;
    CUZK_HD void operator()(size_t i) const { flag[i] = (uint32_t)(words[i / 64] >> (i % 64)) & 1; }
};

// The flagged scalars, compacted in order at their exclusive-sum positions.
struct CompactFn {
    const FrMont* in;
    const uint32_t* flag;
    const uint32_t* pos;
    FrMont* out;
    CUZK_HD void operator()(size_t i) const {
        if (flag[i]) out[pos[i]] = in[i];
    }
};

template <class Exec, class Buf>
int upload(Exec& ex, Buf& buf, const FrMont* host, size_t n) {
    CUZK_RC(ex.alloc(buf, n, "scalars"));
    return ex.upload(buf.ptr, host, n);
}

template <class Exec, class Buf>
int select(Exec& ex, Buf& out, const FrMont* in, size_t n, const uint64_t* words_h,
           size_t total) {
    if (n >= 0xffffffffull) {
        snprintf(ex.err, ex.errlen, "selecting from %zu scalars: at most 2^32 − 1", n);
        return -1;
    }
    typename Exec::template Buf<uint64_t> words;
    typename Exec::template Buf<uint32_t> flag, pos;
    const size_t nw = (n + 63) / 64;
    CUZK_RC(ex.alloc(words, nw, "density words"));
    CUZK_RC(ex.upload(words.ptr, words_h, nw));
    CUZK_RC(ex.alloc(flag, n, "density flags"));
    CUZK_RC(ex.alloc(pos, n, "selected positions"));
    CUZK_RC(ex.launch(n, DensityFlagFn{words.ptr, flag.ptr}, "density flags", 256));
    uint64_t selected;
    CUZK_RC(exclusive_sum_total(ex, flag.ptr, pos.ptr, (uint32_t)n, &selected));
    if (selected != total) {
        snprintf(ex.err, ex.errlen, "density selects %zu scalars, the caller expects %zu",
                 (size_t)selected, total);
        return -1;
    }
    CUZK_RC(ex.alloc(out, total, "selected scalars"));
    CUZK_RC(ex.launch(n, CompactFn{in, flag.ptr, pos.ptr, out.ptr}, "select scalars", 256));
    return ex.sync("select scalars");
}

}  // namespace

// A new set *out holding the n scalars (blst_fr, Montgomery) of `host`, on the device or
// (emulate ≠ 0) in host memory.
extern "C" int cuzk_scalars_new(const void* host, size_t n, int emulate, void** out, char* err,
                                size_t errlen) {
    *out = nullptr;
    auto* s = new (std::nothrow) ScalarSet{};
    if (!s) {
        snprintf(err, errlen, "scalars: out of host memory");
        return -1;
    }
    s->emulate = emulate != 0;
    s->n = n;
    const int rc = cuzk::with_exec(s->emulate, err, errlen, "scalars", [&](auto& ex) {
        return upload(ex, cuzk::storage(*s, ex), (const FrMont*)host, n);
    });
    if (rc != 0) {
        delete s;
        return rc;
    }
    *out = s;
    return 0;
}

// A new set *out with the scalars of `set` whose bit is set in `words` (bit i of word
// i / 64 for scalar i), in order; `total` is their expected number (checked).
extern "C" int cuzk_scalars_select(const void* set, const uint64_t* words, size_t total,
                                   void** out, char* err, size_t errlen) {
    *out = nullptr;
    const auto* in = (const ScalarSet*)set;
    auto* s = new (std::nothrow) ScalarSet{};
    if (!s) {
        snprintf(err, errlen, "scalars: out of host memory");
        return -1;
    }
    s->emulate = in->emulate;
    s->n = total;
    int rc = 0;
    if (in->n > 0) {
        rc = cuzk::with_exec(s->emulate, err, errlen, "scalars", [&](auto& ex) {
            return select(ex, cuzk::storage(*s, ex), in->ptr(), in->n, words, total);
        });
    } else if (total != 0) {
        snprintf(err, errlen, "density selects 0 scalars, the caller expects %zu", total);
        rc = -1;
    }
    if (rc != 0) {
        delete s;
        return rc;
    }
    *out = s;
    return 0;
}

// The scalars back in host memory (tests): n from `offset`.
extern "C" int cuzk_scalars_read(const void* set, size_t offset, size_t n, void* out, char* err,
                                 size_t errlen) {
    const auto* s = (const ScalarSet*)set;
    if (offset > s->n || n > s->n - offset) {
        snprintf(err, errlen, "scalars [%zu, %zu) of a set of %zu", offset, offset + n, s->n);
        return -1;
    }
    return cuzk::with_exec(s->emulate, err, errlen, "scalars", [&](auto& ex) {
        return ex.download((FrMont*)out, s->ptr() + offset, n);
    });
}

extern "C" void cuzk_scalars_free(void* set) { delete (ScalarSet*)set; }
