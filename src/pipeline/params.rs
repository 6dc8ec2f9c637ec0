//! The parameters stage: the `.params` file located (TEST-ONLY ones generated first with
//! `--gen-test-params`), mapped and checked against its `.vk`, its key classified against
//! filecoin-proofs' production digests, and with `--verify-params` the whole file hashed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, ensure, Result};
use filecoin_proofs_api::RegisteredSealProof;

use super::log;
use crate::cli::Config;
use crate::input::c1::sector_size_name;
use crate::input::params_digest::{self, KeyStatus};
use crate::input::srs::{cache_paths, Srs};
use crate::report::{Classify, ErrorKind, Failure, ParamsInfo, Report, Timings};
use crate::synthetic::{self, TEST_ONLY_NOTICE, TEST_PARAMS_SEED};

/// Resolves the parameters file: `--params`, else the standard name in `--param-cache`
/// (generating TEST-ONLY parameters there first with `--gen-test-params`).
fn locate_params(
    cfg: &Config,
    proof: RegisteredSealProof,
    t: &mut Timings,
) -> Result<PathBuf, Failure> {
    let paths = cache_paths(proof, &cfg.param_cache).kind(ErrorKind::BadInput)?;
    if let Some(p) = &cfg.params {
        // A file under a standard cache name must be the one for this C1's circuit.
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let expected = paths
            .params
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if let Some(name) = name.filter(|n| n.starts_with("v28-stacked-proof-of-replication")) {
            if name != expected {
                return Err(anyhow!(
                    "parameters {} are for another circuit than the C1's {proof:?} (another \
                     sector size or proof type): expected {expected}",
                    p.display()
                ))
                .kind(ErrorKind::BadInput);
            }
        }
        return Ok(p.clone());
    }
    if paths.params.exists() {
        return Ok(paths.params);
    }
    if !cfg.gen_test_params {
        let size = sector_size_name(u64::from(proof.sector_size()));
        return Err(anyhow!(
            "no parameters for {proof:?} in {}: expected {} (cuzk-prove never downloads \
             parameters: fetch them with `lotus fetch-params {size}` or `curio fetch-params \
             {size}`, or pass --params FILE; --gen-test-params makes TEST-ONLY ones)",
            cfg.param_cache.display(),
            paths.params.display()
        ))
        .kind(ErrorKind::MissingParameters);
    }
    if cfg.param_cache == Path::new(crate::cli::DEFAULT_PARAM_CACHE) {
        return Err(anyhow!(
            "--gen-test-params will not write TEST-ONLY parameters into {}, where the \
             production parameters live: name another --param-cache",
            cfg.param_cache.display()
        ))
        .kind(ErrorKind::BadInput);
    }
    log(
        cfg,
        &format!(
            "notice: generating {TEST_ONLY_NOTICE}.\n        {proof:?} → {} (this takes \
             minutes, once)",
            cfg.param_cache.display()
        ),
    );
    let (paths, _) = t.time("generate test parameters", || {
        synthetic::gen_params::generate(proof, &cfg.param_cache, Some(TEST_PARAMS_SEED))
    })?;
    Ok(paths.params)
}

/// The parameters for `proof`, and their verifying key's digest (filecoin-proofs'
/// digest of the `.vk`: what the recording is keyed by). Missing ones are their own
/// failure (exit status 4); a file that does not match its key or the circuit is bad input.
/// `mapped`: the file as [`map_early`] mapped it, used if it is the one located here.
pub(super) fn parameters(
    cfg: &Config,
    proof: RegisteredSealProof,
    mapped: Option<Arc<Srs>>,
    t: &mut Timings,
    report: &mut Report,
) -> Result<(PathBuf, Arc<Srs>, String), Failure> {
    let params_path = locate_params(cfg, proof, t)?;
    let mapped = mapped.filter(|m| m.path == params_path);
    let (srs, test_only) = open_params(cfg, &params_path, mapped, t).kind(ErrorKind::BadInput)?;
    let vk_digest = params_digest::digest(srs.vk_bytes());
    let key = key_status(proof, &srs, test_only);
    if key == KeyStatus::Unknown {
        report.warnings.push(unknown_key(proof, &srs));
    }
    if cfg.verify_params {
        t.time("verify parameters digest", || verify_params(cfg, &srs))
            .map_err(|e| match test_only {
                true => e.context("these are TEST-ONLY parameters, not the production file"),
                false => e,
            })
            .kind(ErrorKind::BadInput)?;
    }
    report.params = Some(ParamsInfo {
        path: srs.path.clone(),
        bytes: srs.file_len(),
        domain: srs.domain_size(),
        test_only,
        key,
        digest_verified: cfg.verify_params,
        sections: vec![srs.h, srs.l, srs.a, srs.b_g1, srs.b_g2],
    });
    Ok((params_path, srs, vk_digest))
}

/// Whose key the parameters hold (production, TEST-ONLY, unknown: then a warning).
fn key_status(proof: RegisteredSealProof, srs: &Srs, test_only: bool) -> KeyStatus {
    let vk_name = srs.path.with_extension("vk");
    let vk_name = vk_name
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into());
    let status = params_digest::key_status(
        &vk_name,
        srs.vk_bytes(),
        test_only,
        params_digest::production(),
    );
    log::info!(
        "parameters {} for {proof:?}: {status:?} key",
        srs.path.display()
    );
    status
}

/// The warning for parameters that are neither production nor TEST-ONLY, given once the
/// run has succeeded (a failing run's one line is its error).
fn unknown_key(proof: RegisteredSealProof, srs: &Srs) -> String {
    format!(
        "warning: the verifying key in {} is not filecoin-proofs' production key for \
         {proof:?} (nor TEST-ONLY parameters): proofs made with it will not verify on chain",
        srs.path.display()
    )
}

/// `--verify-params`: the whole file against its production digest, with a progress bar
/// on a terminal.
fn verify_params(cfg: &Config, srs: &Srs) -> Result<()> {
    let name = srs
        .path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into());
    let bar = (!cfg.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        let b = indicatif::ProgressBar::new(srs.file_len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} verifying parameters {bytes} of {total_bytes}  (ETA {eta})",
        ) {
            b.set_style(style);
        }
        b
    });
    let done =
        params_digest::verify_file(&name, srs.file_bytes(), params_digest::production(), |n| {
            if let Some(b) = &bar {
                b.set_position(n as u64);
            }
        });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    done
}

/// The parameters `proof` names, mapped before the C1's parse is done when they are
/// there already (none to generate), so that their upload to the GPU can start beside it.
/// Nothing is said or decided here: [`parameters`] locates, checks and reports them, and
/// maps them itself when this did not.
pub(super) fn map_early(cfg: &Config, proof: RegisteredSealProof) -> Option<Arc<Srs>> {
    let path = match &cfg.params {
        Some(p) => p.clone(),
        None => cache_paths(proof, &cfg.param_cache).ok()?.params,
    };
    if !std::fs::metadata(&path).ok()?.is_file() {
        return None;
    }
    Srs::open(&path).ok().map(Arc::new)
}

/// The parameters, mapped (or `mapped` already) and checked against their `.vk`; whether
/// they are TEST-ONLY (said once, here).
fn open_params(
    cfg: &Config,
    params_path: &Path,
    mapped: Option<Arc<Srs>>,
    t: &mut Timings,
) -> Result<(Arc<Srs>, bool)> {
    let srs = t.time("map + check SRS", || -> Result<Arc<Srs>> {
        let srs = match mapped {
            Some(m) => m,
            None => Arc::new(Srs::open(params_path)?),
        };
        let vk_path = params_path.with_extension("vk");
        if let Ok(vk) = std::fs::read(&vk_path) {
            ensure!(
                vk == srs.vk_bytes(),
                "{} does not match the verifying key in {}",
                vk_path.display(),
                params_path.display()
            );
        }
        Ok(srs)
    })?;
    // Test parameters carry a label in their .meta file; say so wherever they are used.
    let test_only = std::fs::read_to_string(params_path.with_extension("meta"))
        .is_ok_and(|m| m.contains("\"test_only\""));
    if test_only {
        log(cfg, &format!("notice: using {TEST_ONLY_NOTICE}"));
    }
    Ok((srs, test_only))
}
