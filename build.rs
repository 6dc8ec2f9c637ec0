//! Build script.
//! - Records the versions of the proving crates for the `--json` report.
//! - Compiles the CUDA kernels under `cuda/` with nvcc (found through `$NVCC`,
//!   `$CUDA_PATH`/`$CUDA_HOME`, then `PATH`) for sm_80, sm_89, sm_90 and sm_120 plus
//!   compute_90 PTX, linked with the static CUDA runtime, and sets `cfg(cuzk_cuda)`.
//!   Without nvcc the build is CPU-only; feature `cuda` makes nvcc mandatory.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=cuda");
    for v in [
        "NVCC",
        "CUDA_PATH",
        "CUDA_HOME",
        "PATH",
        "CUZK_CUDA_ARCHS",
        "CUZK_CUDA_DEFINES",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo::rustc-check-cfg=cfg(cuzk_cuda)");
    record_versions();

    match find_nvcc() {
        Some(nvcc) => {
            let archs = build_cuda(&nvcc);
            println!("cargo:rustc-env=CUZK_CUDA_ARCHS_BUILT={archs}");
            println!("cargo:rustc-env=CUZK_CUDA_BUILD=sm_{archs} (+compute_90 PTX)");
        }
        None if std::env::var_os("CARGO_FEATURE_CUDA").is_some() => panic!(
            "feature `cuda` needs nvcc: set NVCC, CUDA_PATH or CUDA_HOME, or put nvcc on PATH \
             (README: building with CUDA)"
        ),
        None => {
            println!("cargo:warning=nvcc not found: building cuzk-prove without CUDA");
            println!("cargo:rustc-env=CUZK_CUDA_BUILD=not compiled in");
        }
    }
}

/// The versions of the crates whose circuit and proof format the prover follows (from
/// Cargo.lock, read with the cargo-lock crate), and the git commit it is built from, for
/// `--version` and the report.
fn record_versions() {
    let lock = cargo_lock::Lockfile::load("Cargo.lock").ok();
    for krate in [
        "filecoin-proofs",
        "storage-proofs-porep",
        "bellperson",
        "blstrs",
        "blst",
    ] {
        let version = lock
            .as_ref()
            .and_then(|l| l.packages.iter().find(|p| p.name.as_str() == krate))
            .map_or_else(|| "unknown".to_owned(), |p| p.version.to_string());
        let var = krate.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=CUZK_DEP_{var}={version}");
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    // The commit only (not whether the tree has changes: tracking that would rebuild the
    // crate at every edit).
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CUZK_COMMIT={commit}");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
    }
}

/// `file` and every header it includes with `#include "…"`, transitively.
fn sources(file: &Path) -> Vec<PathBuf> {
    let mut seen = vec![file.to_owned()];
    let mut i = 0;
    while i < seen.len() {
        let f = seen[i].clone();
        i += 1;
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("#include \"") else {
                continue;
            };
            let Some(name) = rest.split('"').next() else {
                continue;
            };
            let dep = f.parent().unwrap_or(Path::new(".")).join(name);
            let dep = dep.canonicalize().unwrap_or(dep);
            if !seen.contains(&dep) {
                seen.push(dep);
            }
        }
    }
    seen
}

fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        return Some(PathBuf::from(p));
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(dir) = std::env::var_os(var) {
            let p = Path::new(&dir).join("bin/nvcc");
            if p.exists() {
                return Some(p);
            }
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("nvcc"))
        .find(|p| p.exists())
}

/// Compiles the kernels; returns the SASS architectures built ("80,89,90,120").
fn build_cuda(nvcc: &Path) -> String {
    // The toolkit root: nvcc lives in <root>/bin.
    let root = nvcc
        .canonicalize()
        .unwrap_or_else(|_| nvcc.to_owned())
        .parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .expect("nvcc path has no toolkit root");
    // cc drives nvcc (wrapping host flags in -Xcompiler) when it finds it through NVCC.
    std::env::set_var("NVCC", nvcc);
    let archs = std::env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| "80,89,90,120".into());
    let defines = std::env::var("CUZK_CUDA_DEFINES").unwrap_or_default();
    let base = || {
        let mut b = cc::Build::new();
        b.cuda(true)
            .cudart("static")
            // With debuginfo in the profile (release has debug = 1) cc passes nvcc -G,
            // device debug code with every optimisation off: many times slower kernels.
            .debug(false)
            .flag("-std=c++17")
            .flag("-O3")
            .flag("-Xcompiler=-fPIC")
            // Each host thread's stream 0 is its own (CUDA_API_PER_THREAD_DEFAULT_STREAM):
            // the SRS upload thread's allocations, copies and decode kernels run beside
            // the prover's kernels instead of queueing behind them on the one legacy
            // stream, and each side's sync waits for its own work only (docs/PERF.md,
            // "per-thread default streams").
            .flag("--default-stream=per-thread");
        // CUZK_CUDA_ARCHS (e.g. "90") narrows the SASS targets for faster development and
        // CI builds; the default covers Ampere to Blackwell. PTX for compute_90 is always
        // added.
        for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            assert!(
                arch.chars().all(|c| c.is_ascii_digit()),
                "CUZK_CUDA_ARCHS must list SM numbers like 80,90; got '{arch}'"
            );
            b.flag(format!("-gencode=arch=compute_{arch},code=sm_{arch}"));
        }
        b.flag("-gencode=arch=compute_90,code=compute_90");
        // CUZK_CUDA_DEFINES (e.g. "CUZK_SPECIAL_REDC=0"): compile-time
        // switches of the kernels, for measuring them on and off.
        for d in defines.split_whitespace() {
            b.flag(format!("-D{d}"));
        }
        b
    };
    // Each file is compiled on its own, and its object kept under a hash of the file, the
    // headers it includes, nvcc and the targets: an edit rebuilds only the files it
    // reaches. On its own also means whole-program device code (cc compiles several .cu
    // files of one Build with --device-c, relocatable code whose out-of-line calls must
    // follow the full ABI); no kernel calls device code of another file.
    let test_kernels = std::env::var_os("CARGO_FEATURE_TEST_KERNELS").is_some();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let cache = out.join("cuda-objects");
    std::fs::create_dir_all(&cache).expect("create the CUDA object cache");
    let mut objects = Vec::new();
    let mut missing = Vec::new();
    for f in [
        "cuda/msm/msm.cu", // the longest first: the parallel compiles below finish sooner
        "cuda/ntt/ntt.cu",
        "cuda/groth16/quotient.cu",
        "cuda/srs/points.cu",
        "cuda/msm/scalars.cu",
        "cuda/pce/pce.cu",
        "cuda/ff/fp_test.cu",
        "cuda/util/device.cu",
        "cuda/ff/fr_test.cu",
    ]
    .into_iter()
    // The element-wise field kernels exist for the tests (feature test-kernels).
    .filter(|f| test_kernels || !f.ends_with("_test.cu"))
    {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        use std::hash::{Hash, Hasher};
        (nvcc, &archs, &defines, env!("CARGO_PKG_VERSION")).hash(&mut h);
        for dep in sources(Path::new(f)) {
            dep.hash(&mut h);
            std::fs::read(&dep)
                .unwrap_or_else(|e| panic!("read {}: {e}", dep.display()))
                .hash(&mut h);
        }
        let stem = f.trim_end_matches(".cu").replace('/', "_");
        let obj = cache.join(format!("{stem}-{:016x}.o", h.finish()));
        // Older objects of this file are stale.
        for e in std::fs::read_dir(&cache)
            .expect("read the CUDA object cache")
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("{stem}-")) && e.path() != obj {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if !obj.exists() {
            missing.push((f, stem, obj.clone()));
        }
        objects.push(obj);
    }
    // The missing objects, as many files at a time as there are cores (each in its own
    // build directory).
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    for batch in missing.chunks(jobs) {
        std::thread::scope(|scope| {
            for (f, stem, obj) in batch {
                let dir = out.join("cuda-build").join(stem);
                let b = base();
                scope.spawn(move || {
                    let built = b.clone().file(f).out_dir(dir).compile_intermediates();
                    std::fs::copy(&built[0], obj).expect("keep the CUDA object");
                });
            }
        });
    }
    let mut lib = base();
    lib.objects(&objects).compile("cuzk_cuda");
    for lib in ["lib64", "lib"] {
        let d = root.join(lib);
        if d.exists() {
            println!("cargo:rustc-link-search=native={}", d.display());
        }
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
    for l in ["dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib={l}");
    }
    println!("cargo:rustc-cfg=cuzk_cuda");
    archs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}
