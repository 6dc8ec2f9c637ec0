// Why: the SRS upload (47 GB at 32GiB) shares the host's cores with synthesis at the start
// of a run; this measures the product's two ways of copying a page-cached file mapping to
// the GPU (cuda/util/transfer.cuh: StagedCopy through pinned buffers filled by host
// threads, RegisteredCopy page-locking the mapping chunk by chunk, `--pin-mapped`) with and
// without busy cores, wall and CPU time. Standalone (no Rust on the GPU host); build it on
// the build machine before `dev/gpu-session.sh pack`, which packs it, and run it there with
// `dev/gpu-session.sh upload`:
//
//   mkdir -p target/bench-upload
//   $NVCC -O2 -std=c++17 -arch=sm_90 -I cuda -o target/bench-upload/bench_upload \
//        dev/bench-upload/bench_upload.cu
//   bench_upload FILE GIB [BUSY_THREADS] [RUNS]
//
// FILE is created (GIB GiB) if shorter, read once into the page cache, then mapped.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "util/transfer.cuh"

namespace {
double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
double cpu_s() {
    rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec * 1e-6;
}
std::atomic<bool> stop{false};
std::atomic<unsigned long> spins{0};
std::atomic<long> busy_ns[64];  // each busy thread's own CPU time so far
void busy(int k) {  // a synthesis stand-in: integer work on one core
    unsigned long x = 1, n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ul + 1;
        ++n;
        rusage r;
        getrusage(RUSAGE_THREAD, &r);
        busy_ns[k] = (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000000l +
                     (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1000l;
    }
    spins += n + (x & 1);
}
double busy_s() {
    long t = 0;
    for (auto& b : busy_ns) t += b;
    return t * 1e-9;
}
int fail(const char* what, const char* err) {
    fprintf(stderr, "%s: %s\n", what, err);
    return 1;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE GIB [BUSY_THREADS] [RUNS]\n", argv[0]);
        return 2;
    }
    const size_t bytes = (size_t)(atof(argv[2]) * (1ull << 30)) & ~size_t(4095);
    const int busy_threads = std::min(64, argc > 3 ? atoi(argv[3]) : 0);
    const int runs = argc > 4 ? atoi(argv[4]) : 2;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
    if (fd < 0) return perror("open"), 1;
    struct stat st;
    fstat(fd, &st);
    const size_t piece = size_t(64) << 20;
    std::vector<char> buf(piece);
    if ((size_t)st.st_size < bytes) {
        for (size_t i = 0; i < piece; ++i) buf[i] = (char)(i * 131 + 7);
        for (size_t off = 0; off < bytes; off += piece)
            if (write(fd, buf.data(), std::min(piece, bytes - off)) < 0) return perror("write"), 1;
        fsync(fd);
    }
    for (size_t off = 0; off < bytes; off += piece)  // into the page cache
        if (pread(fd, buf.data(), std::min(piece, bytes - off), off) < 0) return perror("pread"), 1;
    const char* map = (const char*)mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return perror("mmap"), 1;
    // The copies start mid-page, as a .params section does.
    const char* src = map + 1000;
    const size_t len = bytes - 4096;
    char err[256] = {};
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) return fail("CUDA", "no device");
    void* dst = nullptr;
    if (cudaMalloc(&dst, len) != cudaSuccess) return fail("cudaMalloc", "failed");
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    std::vector<std::thread> burners;
    for (int i = 0; i < busy_threads; ++i) burners.emplace_back(busy, i);
    struct Mode {
        std::string name;
        const char* chunk_mib;  // CUZK_PIN_CHUNK_MIB for RegisteredCopy; null = staged
    };
    const std::vector<Mode> modes = {{"staged (8 threads)", nullptr},
                                     {"page-locked 64 MiB", "64"},
                                     {"page-locked 256 MiB", "256"},
                                     {"page-locked 1024 MiB", "1024"}};
    for (int r = 0; r < runs; ++r)
        for (const Mode& m : modes) {
            madvise((void*)map, bytes, MADV_DONTNEED);  // every mode faults its mapping anew
            const double c0 = cpu_s() - busy_s(), t0 = now();
            int rc;
            size_t refused = 0;
            if (m.chunk_mib) {
                setenv("CUZK_PIN_CHUNK_MIB", m.chunk_mib, 1);
                cuzk::RegisteredCopy c(s, err, sizeof err);
                rc = c.copy(dst, src, len);
                refused = c.refused;
            } else {
                cuzk::StagedCopy c(s, err, sizeof err);
                rc = c.init();
                if (!rc) rc = c.copy(dst, src, len);
            }
            if (!rc && cudaStreamSynchronize(s) != cudaSuccess) rc = -1;
            const double t = now() - t0, c = cpu_s() - busy_s() - c0;
            if (rc) return fail(m.name.c_str(), err);
            printf("%-22s busy %2d: %6.3f s %6.2f GB/s, CPU of the copy %5.2f s, refused %zu\n",
                   m.name.c_str(), busy_threads, t, len / t / 1e9, c, refused);
            fflush(stdout);
        }
    // The last copy's tail, read back.
    std::vector<char> back(1 << 20);
    cudaMemcpy(back.data(), (char*)dst + len - back.size(), back.size(), cudaMemcpyDeviceToHost);
    const bool same = memcmp(back.data(), src + len - back.size(), back.size()) == 0;
    printf("read back: %s\n", same ? "equal" : "DIFFERENT");
    stop = true;
    for (auto& t : burners) t.join();
    return same ? 0 : 1;
}
