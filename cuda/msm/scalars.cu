// Entry points for scalar sets (scalars.cuh): upload, select by a density bitmap, free.
// MSMs read a set directly (msm/msm.cu); the quotient can leave H in one
// (groth16/quotient.cu).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
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

CUZK_HD unsigned popcount64(uint64_t v) {
#ifdef __CUDA_ARCH__
    return __popcll(v);
#else
    return (unsigned)__builtin_popcountll(v);
#endif
}

// A packed set unpacked (scalars.rs, Packed): scalar i is values[first[i / 64] + the
// others before it in its word] where bit i of `others` is set, else `one` where bit i of
// `ones` is, else zero.
struct UnpackFn {
    const uint64_t* ones;
    const uint64_t* others;
    const uint32_t* first;
    const FrMont* values;
    FrMont one;
    FrMont* out;
    CUZK_HD void operator()(size_t i) const {
        const size_t w = i / 64;
        const uint64_t bit = 1ull << (i % 64);
        if (others[w] & bit)
            out[i] = values[first[w] + popcount64(others[w] & (bit - 1))];
        else if (ones[w] & bit)
            out[i] = one;
        else
            out[i] = FrMont{};
    }
};

template <class Exec, class Buf>
int unpack(Exec& ex, Buf& out, size_t n, const uint64_t* ones_h, const uint64_t* others_h,
           const uint32_t* first_h, const FrMont* values_h, size_t n_values, const FrMont& one) {
    CUZK_RC(ex.alloc(out, n, "scalars"));
    if (n == 0) return 0;
    const size_t nw = (n + 63) / 64;
    typename Exec::template Buf<uint64_t> ones, others;
    typename Exec::template Buf<uint32_t> first;
    typename Exec::template Buf<FrMont> values;
    CUZK_RC(ex.alloc(ones, nw, "packed scalars' ones"));
    CUZK_RC(ex.upload(ones.ptr, ones_h, nw));
    CUZK_RC(ex.alloc(others, nw, "packed scalars' others"));
    CUZK_RC(ex.upload(others.ptr, others_h, nw));
    CUZK_RC(ex.alloc(first, nw, "packed scalars' offsets"));
    CUZK_RC(ex.upload(first.ptr, first_h, nw));
    if (n_values > 0) {
        CUZK_RC(ex.alloc(values, n_values, "packed scalars' values"));
        CUZK_RC(ex.upload(values.ptr, values_h, n_values));
    }
    CUZK_RC(ex.launch(n, UnpackFn{ones.ptr, others.ptr, first.ptr, values.ptr, one, out.ptr},
                      "unpack scalars", 256));
    return ex.sync("unpack scalars");
}

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

// A new set *out of n scalars sent packed (scalars.rs, Packed): `ones` and `others` are
// bitmaps of ⌈n / 64⌉ words, `first` the index in `values` (n_values scalars) of each
// word's first other, `one` the scalar one (blst_fr, Montgomery); on the device or
// (emulate ≠ 0) in host memory. The caller checked that the pieces agree.
extern "C" int cuzk_scalars_new_packed(size_t n, const uint64_t* ones, const uint64_t* others,
                                       const uint32_t* first, const void* values,
                                       size_t n_values, const void* one, int emulate,
                                       void** out, char* err, size_t errlen) {
    *out = nullptr;
    auto* s = new (std::nothrow) ScalarSet{};
    if (!s) {
        snprintf(err, errlen, "scalars: out of host memory");
        return -1;
    }
    s->emulate = emulate != 0;
    s->n = n;
    FrMont one_v;
    memcpy(&one_v, one, sizeof one_v);
    const int rc = cuzk::with_exec(s->emulate, err, errlen, "scalars", [&](auto& ex) {
        return unpack(ex, cuzk::storage(*s, ex), n, ones, others, first, (const FrMont*)values,
                      n_values, one_v);
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

namespace {

// An upload under way (cuzk_scalars_begin … cuzk_scalars_end): the copy runs on a worker
// thread and a stream of its own (exec/device_exec.cuh, upload_async), so the caller can
// queue other work on the device meanwhile: the prover uploads a partition's aux
// assignment while its H MSM runs.
struct ScalarUpload {
    char err[512] = {};
    std::chrono::steady_clock::time_point t0;  // CUZK_TRACE: when it began
    // Declared before the pending copies, so destroyed after them (their destructors
    // join the worker and wait for its stream): nothing writes the set once it is freed.
    std::unique_ptr<ScalarSet> set;
    cuzk::DeviceExec dev{err, sizeof err};
    cuzk::DevicePending dev_pending;
    cuzk::HostExec host{err, sizeof err};
    cuzk::HostPending host_pending;
};

double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

template <class Exec, class Pending>
int begin_upload(Exec& ex, Pending& p, ScalarSet& s, const FrMont* host) {
    auto& buf = cuzk::storage(s, ex);
    // Allocated here, on the default stream: the copy's stream waits only for the work
    // queued there so far (pending_batches), not for what the caller queues next.
    CUZK_RC(ex.alloc(buf, s.n, "scalars"));
    return ex.upload_async(buf.ptr, host, s.n, p, 1);
}

}  // namespace

// Starts copying the n scalars of `host` into a new set, in the background; `host` must
// stay valid and unchanged until cuzk_scalars_end. *out: the upload's handle.
extern "C" int cuzk_scalars_begin(const void* host, size_t n, int emulate, void** out,
                                  char* err, size_t errlen) {
    *out = nullptr;
    auto* u = new (std::nothrow) ScalarUpload{};
    if (u) u->set.reset(new (std::nothrow) ScalarSet{});
    if (!u || !u->set) {
        delete u;
        snprintf(err, errlen, "scalars: out of host memory");
        return -1;
    }
    u->set->emulate = emulate != 0;
    u->set->n = n;
    u->dev_pending.what = nullptr;  // failures read "scalars upload: …" (cuzk_scalars_end)
    u->t0 = std::chrono::steady_clock::now();
    int rc;
    try {
        rc = emulate ? begin_upload(u->host, u->host_pending, *u->set, (const FrMont*)host)
                     : begin_upload(u->dev, u->dev_pending, *u->set, (const FrMont*)host);
    } catch (const std::exception& e) {
        snprintf(u->err, sizeof u->err, "%s", e.what());
        rc = -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "scalars upload: %s", u->err);
        delete u;
        return rc;
    }
    if (cuzk::trace_on())
        fprintf(stderr, "cuzk trace scalars upload: began in %.1f ms\n", since(u->t0));
    *out = u;
    return 0;
}

// Waits for the upload `handle` (consumed) and hands over its set in *out: kernels
// queued on the default stream from now on see the scalars.
extern "C" int cuzk_scalars_end(void* handle, void** out, char* err, size_t errlen) {
    *out = nullptr;
    auto* u = (ScalarUpload*)handle;
    const double at_end = since(u->t0);
    const int rc = u->set->emulate ? u->host.wait(u->host_pending) : u->dev.wait(u->dev_pending);
    if (rc != 0) {
        snprintf(err, errlen, "scalars upload: %s", u->err);
        delete u;
        return rc;
    }
    const double waited = since(u->t0);
    *out = u->set.release();
    const auto t0 = u->t0;
    delete u;  // joins the worker, whose copies the default stream already waits for
    if (cuzk::trace_on())
        fprintf(stderr,
                "cuzk trace scalars upload: end called at %.1f ms, waited until %.1f, "
                "done %.1f\n",
                at_end, waited, since(t0));
    return 0;
}
