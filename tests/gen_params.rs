//! `gen-params` output: production shape (headers equal storage-proofs' generator's) and
//! points that satisfy the relations of the trapdoor they were made from.

mod common;

use std::path::Path;

use blstrs::{pairing, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use common::*;
use cuzk_prove::input::srs::Srs;
use cuzk_prove::synthetic::gen_params::Trapdoor;
use cuzk_prove::synthetic::TEST_PARAMS_SEED;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};

fn header(srs: &Srs) -> serde_json::Value {
    serde_json::json!({
        "file_bytes": srs.file_len(),
        "ic": srs.vk_ic_count,
        "h": srs.h.count, "l": srs.l.count, "a": srs.a.count,
        "b_g1": srs.b_g1.count, "b_g2": srs.b_g2.count,
    })
}

fn golden() -> serde_json::Value {
    let mut g: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root().join("testdata/2kib/storage-proofs-params-header.json")).unwrap(),
    )
    .unwrap();
    g.as_object_mut().unwrap().remove("what");
    g
}

#[test]
fn headers_equal_those_of_storage_proofs_generator() {
    let srs = Srs::open(&params_file()).unwrap();
    assert_eq!(header(&srs), golden());
}

#[test]
fn sampled_points_satisfy_the_trapdoor_relations() {
    let srs = Srs::open(&params_file()).unwrap();
    let t = Trapdoor::from_seed(TEST_PARAMS_SEED);
    let (g1, g2) = (G1Projective::generator(), G2Projective::generator());
    let vk = &srs.vk;
    assert_eq!(vk.alpha_g1, (g1 * t.alpha).to_affine());
    assert_eq!(vk.beta_g1, (g1 * t.beta).to_affine());
    assert_eq!(vk.beta_g2, (g2 * t.beta).to_affine());
    assert_eq!(vk.gamma_g2, (g2 * t.gamma).to_affine());
    assert_eq!(vk.delta_g1, (g1 * t.delta).to_affine());
    assert_eq!(vk.delta_g2, (g2 * t.delta).to_affine());

    // h_i = τⁱ (τᵐ − 1)/δ · G1: h_0 directly, then e(h_{i+1}, G2) = e(h_i, τ·G2).
    let m = srs.domain_size() as u64;
    let h: Vec<G1Affine> = srs.points(&srs.h, 0..srs.h.count).unwrap();
    let z_over_delta = (t.tau.pow_vartime([m]) - Fr::ONE) * t.delta.invert().unwrap();
    assert_eq!(h[0], (g1 * z_over_delta).to_affine());
    let tau_g2 = (g2 * t.tau).to_affine();
    for i in [0usize, 1, 777, 123_456, h.len() - 2] {
        assert_eq!(
            pairing(&h[i + 1], &G2Affine::generator()),
            pairing(&h[i], &tau_g2),
            "h[{i}]"
        );
    }
    // b_g1 and b_g2 carry the same v_j(τ): e(B1_j, G2) = e(G1, B2_j).
    let n = srs.b_g1.count;
    let b1: Vec<G1Affine> = srs.points(&srs.b_g1, 0..n).unwrap();
    let b2: Vec<G2Affine> = srs.points(&srs.b_g2, 0..n).unwrap();
    for j in [0usize, 1, n / 3, n / 2, n - 1] {
        assert_eq!(
            pairing(&b1[j], &G2Affine::generator()),
            pairing(&G1Affine::generator(), &b2[j]),
            "b[{j}]"
        );
    }
}

/// Runs storage-proofs' generator itself (slow) and compares its headers with the
/// recorded ones and with gen-params'.
#[test]
#[ignore = "runs storage-proofs' generator: about 15 minutes on 2 cores"]
fn storage_proofs_generator_headers_match_recorded() {
    let dir = scratch("sp-params");
    let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
    cuzk_dev::test_params::generate(proof, &dir, 0).expect("storage-proofs' generator");
    let sp = cuzk_prove::input::srs::cache_paths(proof, Path::new(&dir))
        .unwrap()
        .params;
    assert_eq!(header(&Srs::open(&sp).unwrap()), golden());
    assert_eq!(header(&Srs::open(&params_file()).unwrap()), golden());
}
