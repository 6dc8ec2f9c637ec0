//! man/cuzk-prove.1 is generated from the same flags as --help and must stay in sync.

mod common;

#[test]
fn man_page_matches_help() {
    let committed = std::fs::read_to_string(common::root().join("man/cuzk-prove.1"))
        .expect("man/cuzk-prove.1 is missing");
    let generated = cuzk_prove::cli::manpage().unwrap();
    assert!(
        committed == generated,
        "man/cuzk-prove.1 is stale: regenerate it with `cargo run --release -- manpage > man/cuzk-prove.1`"
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
