//! Compiles cuda/sppark_msm.cu (sppark's Pippenger for BLS12-381) and cuda/sppark_ntt.cu
//! (sppark's NTT over its scalar field) with nvcc through `cc`.
//! Include paths come from the `links` metadata of the sppark and blst crates
//! (DEP_SPPARK_ROOT: sppark's headers; DEP_BLST_C_SRC: blst_t.hpp and friends, used by
//! sppark's host-side field types). nvcc is `$NVCC` (as for cuzk-prove and sppark);
//! SASS targets from `CUZK_CUDA_ARCHS` (default 90). The CUDA runtime is linked
//! statically, the same libcudart_static.a cuzk-prove links, so there is one copy.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=Cargo.lock");
    for v in ["NVCC", "CUZK_CUDA_ARCHS"] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    record_sppark_version();

    let nvcc = std::env::var_os("NVCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("sppark-vs-cuzk needs nvcc: set NVCC to its path (README.md)"));
    let root = nvcc
        .canonicalize()
        .unwrap_or_else(|_| nvcc.clone())
        .parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .expect("nvcc path has no toolkit root");
    let sppark = std::env::var("DEP_SPPARK_ROOT").expect("DEP_SPPARK_ROOT not set by sppark");
    let blst = std::env::var("DEP_BLST_C_SRC").expect("DEP_BLST_C_SRC not set by blst");

    let mut b = cc::Build::new();
    b.cuda(true)
        .cudart("static")
        // No device debug code (-G) whatever the profile says.
        .debug(false)
        .include(&sppark)
        .include(&blst)
        // sppark's error returns then carry CUDA's message, freed by sppark::Error.
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        .define("FEATURE_BLS12_381", None)
        .flag("-std=c++17")
        .flag("-O3")
        .flag("-Xcompiler=-fPIC")
        .flag("-Xcompiler=-Wno-unused-function")
        .flag("-Xcompiler=-Wno-subobject-linkage");
    if blst_uses_adx() {
        // blst then exports only the mulx_* forms of its field routines, which vect.h
        // (included by blst_t.hpp) names under __ADX__.
        b.define("__ADX__", None);
    }
    let archs = std::env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| "90".into());
    for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        assert!(
            arch.chars().all(|c| c.is_ascii_digit()),
            "CUZK_CUDA_ARCHS must list SM numbers like 80,90; got '{arch}'"
        );
        b.flag(format!("-gencode=arch=compute_{arch},code=sm_{arch}"));
    }
    b.file("cuda/sppark_msm.cu")
        .file("cuda/sppark_ntt.cu")
        .compile("sppark_bench");

    for lib in ["lib64", "lib"] {
        let d = root.join(lib);
        if d.exists() {
            println!("cargo:rustc-link-search=native={}", d.display());
        }
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
    for l in ["dl", "rt", "pthread", "stdc++"] {
        println!("cargo:rustc-link-lib={l}");
    }
}

/// SPPARK_VERSION for the report, from Cargo.lock.
fn record_sppark_version() {
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"sppark\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_owned())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SPPARK_VERSION={version}");
}

/// Whether the blst crate compiled its assembly for ADX: its build.rs does so on x86_64
/// when the rustc target features include adx (with -C target-cpu) or, without
/// target-cpu, when the build host has ADX (the default features, no `portable`).
fn blst_uses_adx() -> bool {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return false;
    }
    let rustflags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if rustflags.contains("target-cpu=") {
        let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
        return features.split(',').any(|f| f == "adx");
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("adx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
