//! Where the programs find their bundled models: beside themselves when
//! installed in a prefix (PREFIX/bin -> PREFIX/share/wgnn), wherever
//! WGNN_ASSETS_DIR says, and one line naming the cause when the models are
//! not where they are looked for. (The folders searched when there is no
//! copy anywhere: the unit tests of wgnn::assets.)

use std::path::Path;
use std::process::Command;

use crate::files::{assert_clean, one_line};

const MODEL: &str = "models/selfie/selfie_segmentation.tflite";

fn place(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

fn source_assets() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/assets"))
}

/// A short selfie job on the CPU, run from `cwd`.
fn selfie(exe: &Path, cwd: &Path, assets: Option<&Path>) -> std::process::Output {
    let mut cmd = Command::new(exe);
    cmd.args([
        "--test-pattern",
        "--frames",
        "2",
        "--null",
        "--device",
        "cpu",
    ])
    .current_dir(cwd)
    .env_remove("WGNN_ASSETS_DIR");
    if let Some(dir) = assets {
        cmd.env("WGNN_ASSETS_DIR", dir);
    }
    cmd.output().unwrap()
}

#[test]
fn an_installed_program_reads_the_models_of_its_prefix() {
    let prefix = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = prefix.path().join("bin/wgnn-selfie");
    place(Path::new(env!("CARGO_BIN_EXE_wgnn-selfie")), &exe);
    let installed = prefix.path().join("share/wgnn");
    place(&source_assets().join(MODEL), &installed.join(MODEL));
    let elsewhere = tempfile::tempdir().unwrap();

    let out = selfie(&exe, elsewhere.path(), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let expected = format!("model {}", installed.join(MODEL).display());
    assert!(stderr.contains(&expected), "'{expected}' not in:\n{stderr}");

    // WGNN_ASSETS_DIR wins over the prefix.
    let out = selfie(&exe, elsewhere.path(), Some(source_assets()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let expected = format!("model {}", source_assets().join(MODEL).display());
    assert!(stderr.contains(&expected), "'{expected}' not in:\n{stderr}");
}

#[test]
fn a_wgnn_assets_dir_without_models_is_one_line_naming_it() {
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("no-such-folder");
    let out = selfie(
        Path::new(env!("CARGO_BIN_EXE_wgnn-selfie")),
        empty.path(),
        Some(&missing),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_clean(&stderr);
    let line = one_line(&stderr);
    for part in [
        format!("cannot load model {}", missing.join(MODEL).display()),
        format!(
            "WGNN_ASSETS_DIR is {}, which holds no models/ folder",
            missing.display()
        ),
    ] {
        assert!(line.contains(&part), "'{part}' not in: {line}");
    }
}
