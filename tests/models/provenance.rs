//! The bundled models match the sha256 in their PROVENANCE files, and a
//! tampered file is reported in one line naming it.

use crate::common;

use std::process::Command;

#[test]
fn bundled_files_match_their_provenance() {
    let out = Command::new("bash")
        .arg(common::root().join("assets/check-models.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_tampered_model_is_named_in_one_error_line() {
    let tmp = std::env::temp_dir().join(format!("wgnn-prov-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let status = Command::new("cp")
        .arg("-r")
        .arg(common::root().join("assets"))
        .arg(&tmp)
        .status()
        .unwrap();
    assert!(status.success());
    let victim = tmp.join("models/selfie/selfie_segmentation.tflite");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();

    let out = Command::new("bash")
        .arg(tmp.join("check-models.sh"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("selfie_segmentation.tflite: sha256")
            && lines[0].contains("does not match"),
        "{stderr}"
    );
}
