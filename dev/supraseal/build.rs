//! Link setup for the final binary; no code is compiled here.
//!
//! supraseal-c2 and sppark compile their CUDA sources through `cc` with the static CUDA
//! runtime, and `cc` only looks for libcudart_static.a under a full toolkit's
//! `targets/<arch>-linux/lib`, which the pip wheels lack: the toolkit's `lib64`/`lib` next to
//! `$NVCC` is added here.
//!
//! cuda-driver-sys (fil-rustacuda, reached through neptune / ec-gpu-gen) links `-lcuda`.
//! Without an NVIDIA driver on the build machine that is satisfied by the link-time stub
//! that stub-libcuda.sh makes; its directory (`$SUPRASEAL_BENCH_LIBCUDA_STUB`, default
//! `stub/` here) is a plain `-L` search path, never an rpath, so at run time the binary's
//! NEEDED libcuda.so.1 is the GPU host's driver library.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    record_versions();
    for v in ["NVCC", "SUPRASEAL_BENCH_LIBCUDA_STUB"] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    let nvcc = std::env::var_os("NVCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("supraseal-c2-bench needs nvcc: set NVCC to its path (see README.md)")
        });
    let root = nvcc
        .canonicalize()
        .unwrap_or_else(|_| nvcc.clone())
        .parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .expect("nvcc path has no toolkit root");
    for lib in ["lib64", "lib"] {
        let d = root.join(lib);
        if d.join("libcudart_static.a").exists() {
            println!("cargo:rustc-link-search=native={}", d.display());
            break;
        }
    }

    let stub = std::env::var_os("SUPRASEAL_BENCH_LIBCUDA_STUB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("no CARGO_MANIFEST_DIR"))
                .join("stub")
        });
    if stub.join("libcuda.so").exists() {
        println!(
            "cargo:rerun-if-changed={}",
            stub.join("libcuda.so.1").display()
        );
        println!("cargo:rustc-link-search=native={}", stub.display());
    } else {
        println!(
            "cargo:warning=no {} (run stub-libcuda.sh): linking -lcuda needs a driver library",
            stub.join("libcuda.so").display()
        );
    }
}

/// Versions of the crates under test, from Cargo.lock, for the report.
fn record_versions() {
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for (name, var) in [
        ("supraseal-c2", "SUPRASEAL_C2"),
        ("sppark", "SPPARK"),
        ("bellperson", "BELLPERSON"),
        ("filecoin-proofs", "FILECOIN_PROOFS"),
        ("filecoin-proofs-api", "FILECOIN_PROOFS_API"),
    ] {
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"').to_owned())
            .unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env=BENCH_VERSION_{var}={version}");
    }
}
