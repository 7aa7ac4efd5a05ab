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

/// Every file in a model folder is either its LICENSE, its PROVENANCE, or
/// listed with a checksum in that PROVENANCE: no model ships unaccounted.
#[test]
fn every_bundled_model_file_is_in_its_provenance() {
    let models = common::root().join("assets/models");
    let mut folders = 0;
    for dir in std::fs::read_dir(&models).unwrap() {
        let dir = dir.unwrap().path();
        let provenance = std::fs::read_to_string(dir.join("PROVENANCE")).unwrap();
        let listed: Vec<&str> = provenance
            .lines()
            .filter_map(|l| l.split_once("  "))
            .filter(|(sum, _)| sum.len() == 64)
            .map(|(_, file)| file)
            .collect();
        for file in walk(&dir) {
            let rel = file
                .strip_prefix(&dir)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            assert!(
                rel == "LICENSE" || rel == "PROVENANCE" || listed.contains(&rel.as_str()),
                "{} has no sha256 in {}",
                file.display(),
                dir.join("PROVENANCE").display()
            );
        }
        folders += 1;
    }
    assert!(folders >= 3, "only {folders} model folders");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
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
