//! Build script. Records the versions of the proving crates for the `--json` report; the
//! CUDA kernels under `cuda/` will be compiled here with the `cc` crate when nvcc is
//! available (until they exist the build is CPU-only).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for krate in [
        "filecoin-proofs",
        "storage-proofs-porep",
        "bellperson",
        "blstrs",
        "blst",
    ] {
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{krate}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"').to_owned())
            .unwrap_or_else(|| "unknown".into());
        let var = krate.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=CUZK_DEP_{var}={version}");
    }
}
