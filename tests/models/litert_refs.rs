//! The LiteRT references in tests/data/tflite (made by its
//! make_references.py; see its README): each case's model, its inputs and
//! every output, read from references.json, and how far ours are from them.

use crate::common;

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use wgnn::ml::{Context, HostData, HostTensor};

pub struct Case {
    pub name: String,
    pub model: PathBuf,
    pub inputs: Vec<(String, HostTensor)>,
    pub outputs: Vec<(String, HostTensor)>,
}

fn data_dir() -> PathBuf {
    common::root().join("tests/data/tflite")
}

/// The cases of one group of the manifest ("mediapipe" or "ops").
pub fn cases(group: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(data_dir().join("references.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    manifest[group]
        .as_array()
        .unwrap_or_else(|| panic!("references.json has no '{group}' list"))
        .iter()
        .map(|c| {
            let model = common::root().join(c["model"].as_str().unwrap());
            // References made from another file would compare nothing.
            let bytes = std::fs::read(&model).unwrap();
            let sum: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(
                c["sha256"].as_str(),
                Some(sum.as_str()),
                "{} is not the file the references were made from",
                model.display()
            );
            Case {
                name: c["name"].as_str().unwrap().to_string(),
                model,
                inputs: c["inputs"].as_array().unwrap().iter().map(tensor).collect(),
                outputs: c["outputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(tensor)
                    .collect(),
            }
        })
        .collect()
}

/// One stored tensor. uint8 inputs with a range stand for the float32
/// `lo + (hi - lo) * (q / 255)`, computed as the script did.
fn tensor(entry: &Value) -> (String, HostTensor) {
    let name = entry["name"].as_str().unwrap().to_string();
    let shape: Vec<usize> = entry["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let bytes = std::fs::read(data_dir().join(entry["file"].as_str().unwrap())).unwrap();
    let words = |n: usize| bytes.chunks_exact(n);
    let value = match entry["dtype"].as_str().unwrap() {
        "f32" => HostTensor::f32(
            shape,
            words(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        ),
        "i32" => HostTensor::i32(
            shape,
            words(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        ),
        // wgnn holds int64 as int32.
        "i64" => HostTensor::i32(
            shape,
            words(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap()) as i32)
                .collect(),
        ),
        "u8" => {
            let range = &entry["range"];
            let (lo, hi) = (
                range[0].as_f64().unwrap() as f32,
                range[1].as_f64().unwrap() as f32,
            );
            HostTensor::f32(
                shape,
                bytes
                    .iter()
                    .map(|&q| lo + (hi - lo) * (f32::from(q) / 255.0))
                    .collect(),
            )
        }
        d => panic!("unknown dtype {d}"),
    };
    (name, value)
}

/// Runs `case` on `ctx`; per output, the largest |ours - LiteRT| relative to
/// the largest |LiteRT| of that output (for integer outputs, the count of
/// elements that differ). An error is the model failing to load or run.
pub fn errors(case: &Case, ctx: &Context) -> wgnn::Result<Vec<(String, f64)>> {
    let model = wgnn::models::load(&case.model)?;
    let inputs: Vec<(&str, HostTensor)> = case
        .inputs
        .iter()
        .map(|(n, t)| (n.as_str(), t.clone()))
        .collect();
    let ours = model.run(ctx, None, &inputs)?;
    assert_eq!(
        ours.len(),
        case.outputs.len(),
        "{}: output count differs",
        case.name
    );
    Ok(ours
        .iter()
        .zip(&case.outputs)
        .map(|((name, got), (want_name, want))| {
            assert_eq!(name, want_name, "{}: outputs in another order", case.name);
            assert_eq!(
                got.shape, want.shape,
                "{}: output '{name}' shape",
                case.name
            );
            (name.clone(), difference(got, want))
        })
        .collect())
}

fn difference(got: &HostTensor, want: &HostTensor) -> f64 {
    if let (HostData::I32(a), HostData::I32(b)) = (&got.data, &want.data) {
        return a.iter().zip(b).filter(|(x, y)| x != y).count() as f64;
    }
    let (a, b) = (got.to_f32(), want.to_f32());
    let scale = b.iter().fold(0.0f64, |m, &v| m.max(f64::from(v).abs()));
    let worst = a.iter().zip(&b).fold(0.0f64, |m, (&x, &y)| {
        let d = f64::from(x) - f64::from(y);
        // NaN must not hide: it counts as infinitely far.
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d.abs())
        }
    });
    worst / scale.max(1e-12)
}
