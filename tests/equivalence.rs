//! The project's synthesis and CPU prover against bellperson's, bit for bit.

mod common;

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use bellperson::groth16::{create_proof_batch, Parameters};
use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::Circuit;
use blstrs::{Bls12, Scalar as Fr};
use common::*;
use cuzk_prove::circuit::Porep;
use cuzk_prove::input::c1::read_c1;
use cuzk_prove::prove::Randomness;
use cuzk_prove::synth;
use ff::Field;
use filecoin_proofs::constants::SectorShape2KiB;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn porep() -> Porep<SectorShape2KiB> {
    let c1 = read_c1(&fixture_c1()).unwrap();
    Porep::new(&c1.registered_proof.as_v1_config(), c1.output).unwrap()
}

/// An independent recorder with bellperson's documented semantics, written differently:
/// bellpepper's own `LinearCombination::eval` for values, `Vec<bool>` for densities.
#[derive(Default)]
struct Recorder {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    a: Vec<Fr>,
    b: Vec<Fr>,
    c: Vec<Fr>,
    a_aux: Vec<bool>,
    b_in: Vec<bool>,
    b_aux: Vec<bool>,
}

impl ConstraintSystem<Fr> for Recorder {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux.push(false);
        self.b_aux.push(false);
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_in.push(false);
        Ok(Variable(Index::Input(self.inputs.len() - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        for (v, coeff) in a.iter() {
            if let (Index::Aux(i), false) = (v.get_unchecked(), coeff.is_zero_vartime()) {
                self.a_aux[i] = true;
            }
        }
        for (v, coeff) in b.iter() {
            if coeff.is_zero_vartime() {
                continue;
            }
            match v.get_unchecked() {
                Index::Input(i) => self.b_in[i] = true,
                Index::Aux(i) => self.b_aux[i] = true,
            }
        }
        self.a.push(a.eval(&self.inputs, &self.aux));
        self.b.push(b.eval(&self.inputs, &self.aux));
        self.c.push(c.eval(&self.inputs, &self.aux));
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}

fn bits(d: &synth::Density) -> Vec<bool> {
    (0..d.len()).map(|i| d.get(i)).collect()
}

#[test]
fn assignment_equals_independent_recording_and_bellperson_witness() {
    let p = porep();
    let ours = synth::synthesize(p.circuit(0).unwrap(), None).unwrap();

    let mut rec = Recorder::default();
    rec.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    p.circuit(0).unwrap().synthesize(&mut rec).unwrap();
    for i in 0..rec.inputs.len() {
        rec.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    assert_eq!(ours.input_assignment, rec.inputs);
    assert_eq!(ours.aux_assignment, rec.aux);
    let [a, b, c] = ours.abc.evaluated().unwrap();
    assert!(a == rec.a && b == rec.b && c == rec.c, "a, b, c differ");
    assert_eq!(bits(&ours.a_aux_density), rec.a_aux);
    assert_eq!(bits(&ours.b_input_density), rec.b_in);
    assert_eq!(bits(&ours.b_aux_density), rec.b_aux);

    // bellperson's own witness generator agrees on the assignment.
    let mut w = WitnessCS::<Fr>::new();
    p.circuit(0).unwrap().synthesize(&mut w).unwrap();
    assert_eq!(ours.input_assignment, w.scalar_inputs());
    assert_eq!(ours.aux_assignment, w.scalar_aux());

    // The witness satisfies every constraint, and presizing changes nothing.
    assert!(a.iter().zip(b).zip(c).all(|((a, b), c)| *a * b == *c));
    let hint = synth::SizeHint {
        constraints: a.len(),
        inputs: 1,
        aux: 10,
    };
    assert_eq!(
        synth::synthesize(p.circuit(0).unwrap(), Some(hint)).unwrap(),
        ours
    );
}

/// bellperson's proof of the fixture with r, s from seed 5 is the fixture's pinned proof,
/// which tests/e2e.rs (full synthesis), pce.rs (a recording, recorded and loaded) and
/// native_label.rs get from the CPU backend with the same r, s: ours equals theirs
/// without proving here a second time.
#[test]
fn cpu_proof_equals_bellperson_proof_with_the_same_r_and_s() {
    let params_path = params_file();
    let rs = Randomness::draw(&mut ChaCha20Rng::seed_from_u64(5), 1);
    let params = Parameters::<Bls12>::build_mapped_parameters(params_path, false).unwrap();
    let theirs = create_proof_batch(
        vec![porep().circuit(0).unwrap()],
        &params,
        vec![rs[0].r],
        vec![rs[0].s],
    )
    .unwrap();
    let mut bytes = Vec::new();
    theirs[0].write(&mut bytes).unwrap();
    assert_eq!(
        hex(&bytes),
        GOLDEN_2KIB_SEED_5,
        "CPU backend (pinned proof) and bellperson disagree"
    );
    assert!(verify_seal(&fixture_meta(), &bytes));
}
