//! The manuals: `--help` reads like the man page (EXAMPLES, EXIT STATUS,
//! FILES, ENVIRONMENT), and the man pages and completions the Debian package
//! ships from `dist/` are what the programs generate now.
//! `WGNN_BLESS=1 cargo test --test cli manual` rewrites them after a change.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAMS: [(&str, &str); 3] = [
    ("wgnn-selfie", env!("CARGO_BIN_EXE_wgnn-selfie")),
    ("wgnn-superres", env!("CARGO_BIN_EXE_wgnn-superres")),
    ("wgnn-bench", env!("CARGO_BIN_EXE_wgnn-bench")),
];

fn generate(exe: &str, what: &str) -> String {
    let out = Command::new(exe)
        .args(["--generate", what])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{exe} --generate {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Where the package takes each generated file from.
fn shipped(name: &str, what: &str) -> PathBuf {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist");
    match what {
        "man" => dist.join(format!("man/{name}.1")),
        "bash" => dist.join(format!("completions/bash/{name}")),
        "zsh" => dist.join(format!("completions/zsh/_{name}")),
        "fish" => dist.join(format!("completions/fish/{name}.fish")),
        _ => unreachable!(),
    }
}

#[test]
fn shipped_man_pages_and_completions_are_current() {
    let bless = std::env::var_os("WGNN_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, exe) in PROGRAMS {
        for what in ["man", "bash", "zsh", "fish"] {
            let now = generate(exe, what);
            let path = shipped(name, what);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(now.as_str()) {
                if bless {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &now).unwrap();
                } else {
                    stale.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "out of date (WGNN_BLESS=1 cargo test --test cli manual rewrites them): {stale:?}"
    );
}

#[test]
fn man_pages_carry_every_section_and_render() {
    for (name, exe) in PROGRAMS {
        let page = generate(exe, "man");
        assert!(
            page.starts_with(&format!(
                ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH {name} 1"
            )),
            "{name}: {}",
            &page[..page.len().min(200)]
        );
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXAMPLES",
            "EXIT STATUS",
            "FILES",
            "ENVIRONMENT",
            "SEE ALSO",
        ] {
            assert!(
                page.contains(&format!(".SH \"{section}\""))
                    || page.contains(&format!(".SH {section}")),
                "{name}: no {section} section"
            );
        }
        // The roff is well formed for man(1) (man-db, which .ci/setup
        // installs): it renders with no warnings.
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), &page).unwrap();
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(tmp.path())
            .env("MANWIDTH", "80")
            .output()
            .expect("man (man-db) must be installed: bash .ci/setup");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: man failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("WGNN_ASSETS_DIR"), "{name}: {text}");
        assert_eq!(page.matches(".ds Aq").count(), 2, "{name}: one preamble");
    }
}

#[test]
fn long_help_ends_with_the_man_page_sections() {
    for (name, exe) in PROGRAMS {
        let out = Command::new(exe).arg("--help").output().unwrap();
        assert!(out.status.success(), "{name} --help");
        let help = String::from_utf8(out.stdout).unwrap();
        let at = |s: &str| {
            help.find(s)
                .unwrap_or_else(|| panic!("{name}: no {s} in --help:\n{help}"))
        };
        // In man-page order, after the options.
        assert!(at("Options:") < at("EXAMPLES:"), "{name}");
        assert!(at("EXAMPLES:") < at("EXIT STATUS:"), "{name}");
        assert!(at("EXIT STATUS:") < at("FILES:"), "{name}");
        assert!(at("FILES:") < at("ENVIRONMENT:"), "{name}");
        assert!(help.contains("/usr/share/wgnn"), "{name}");
        // Every example names the program it is the example of.
        let examples = &help[at("EXAMPLES:")..at("EXIT STATUS:")];
        let commands: Vec<&str> = examples
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
            .collect();
        assert!(commands.len() >= 4, "{name}: {examples}");
        assert!(
            commands.iter().all(|c| c.trim().starts_with(name)),
            "{name}: {examples}"
        );
        // -h stays short.
        let short = Command::new(exe).arg("-h").output().unwrap();
        let short = String::from_utf8(short.stdout).unwrap();
        assert!(!short.contains("EXAMPLES:"), "{name} -h:\n{short}");
    }
}

#[test]
fn generate_takes_no_other_flags_and_names_what_it_can_print() {
    let out = Command::new(PROGRAMS[0].1)
        .args(["--generate", "man", "--null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(PROGRAMS[1].1)
        .args(["--generate", "pdf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("man, bash, zsh, fish"), "{stderr}");
    // wgnn-superres needs INPUT, except to print its manual.
    let out = Command::new(PROGRAMS[1].1).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<INPUT>"));
}
