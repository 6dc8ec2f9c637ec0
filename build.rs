//! Build script. The CUDA kernels under `cuda/` will be compiled here with the `cc` crate
//! when nvcc is available; until they exist the build is CPU-only.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cuda");
}
