//! man/cuzk-prove.1 is generated from the same flags as --help and must stay in sync.

mod common;

#[test]
fn man_page_matches_help() {
    let committed = std::fs::read_to_string(common::root().join("man/cuzk-prove.1"))
        .expect("man/cuzk-prove.1 is missing");
    let generated = cuzk_dev::cli::manpage().unwrap();
    assert!(
        committed == generated,
        "man/cuzk-prove.1 is stale: regenerate it with `cargo run --release -p cuzk-dev -- manpage > man/cuzk-prove.1`"
    );
    // Every long flag of --help appears in the man page.
    let help = std::process::Command::new(common::BIN)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for flag in help.split_whitespace().filter(|w| w.starts_with("--")) {
        let flag = flag.trim_end_matches(|c: char| !c.is_alphanumeric());
        assert!(
            committed.contains(&flag.replace('-', "\\-")),
            "{flag} missing from the man page"
        );
    }
}

/// The sections clap does not make are there, and every runtime knob the code reads
/// (`env_long("CUZK_…")`, `getenv("CUZK_…")`) is documented under ENVIRONMENT.
#[test]
fn man_page_documents_every_runtime_knob() {
    let page = std::fs::read_to_string(common::root().join("man/cuzk-prove.1")).unwrap();
    for section in [".SH ENVIRONMENT", ".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
        assert!(page.contains(section), "{section} missing");
    }
    let env = &page[page.find(".SH ENVIRONMENT").unwrap()..];
    let mut knobs = Vec::new();
    let mut stack = vec![common::root().join("cuda"), common::root().join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for call in ["env_long(\"", "getenv(\""] {
                for (i, _) in text.match_indices(call) {
                    let name: String = text[i + call.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    knobs.push(name);
                }
            }
        }
    }
    assert!(
        knobs.len() >= 5,
        "the knobs' calls were not found: {knobs:?}"
    );
    for k in knobs {
        assert!(env.contains(&k), "{k} is not under ENVIRONMENT");
    }
}
