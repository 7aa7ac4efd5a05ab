//! Zero-config Ultralytics models: an Ultralytics ONNX export records in
//! its metadata what a model-proc says (`names`, `imgsz`, `task`,
//! `end2end`, the export `args` with `nms`), as Python literals. A model
//! whose metadata has `task` and `names` gets the model-proc they imply:
//! Ultralytics' own preprocessing (letterbox with 114 grey, RGB, 0..1), its
//! predict defaults (confidence 0.25, IoU 0.45), its labels, its input size
//! where the export takes any, and the `yolo` decoder in the layout and task
//! the export wrote. A model-proc file still overrides it (docs/MODEL_PROC.md,
//! "Models that need none").

mod literal;

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::models::Model;

use super::model_proc::ModelProc;
use literal::Literal;

/// Ultralytics' `predict` defaults (`conf`, `iou`) and letterbox colour.
const THRESHOLD: f64 = 0.25;
const IOU_THRESHOLD: f64 = 0.45;
const PAD: u8 = 114;

impl ModelProc {
    /// The model-proc of a loaded model. With no metadata implying one,
    /// [`ModelProc::for_model`]'s, and with no file either the one a
    /// torchvision detector's output names imply (`tasks/torchvision.rs`).
    /// Where the metadata implies one (an
    /// Ultralytics export), that one, with the model-proc file (`explicit`,
    /// else `<stem>.json` beside the model) over it: each top-level field
    /// the file gives replaces the implied one, except `input`, whose
    /// fields replace the implied input's one by one.
    pub fn for_loaded_model(model: &Model, explicit: Option<&Path>) -> Result<Option<ModelProc>> {
        let path = model.path();
        let implied = implied(model.metadata()).map_err(|e| Error::File {
            path: path.to_path_buf(),
            message: format!("Ultralytics metadata: {e}"),
        })?;
        let file = ModelProc::file_for(path, explicit);
        match (implied, file) {
            (None, None) => match super::torchvision::implied(model) {
                Some(implied) => ModelProc::from_json(path, implied).map(Some),
                None => Ok(None),
            },
            (None, Some(_)) => ModelProc::for_model(path, explicit),
            (Some(implied), None) => ModelProc::from_json(path, implied).map(Some),
            (Some(mut merged), Some(file)) => {
                // Checked alone first, so that its errors give lines.
                ModelProc::load(&file)?;
                let text = crate::files::read_regular(&file).map_err(|e| Error::File {
                    path: file.clone(),
                    message: format!("cannot read the model-proc: {e}"),
                })?;
                let over: Value = serde_json::from_slice(&text).map_err(|e| Error::File {
                    path: file.clone(),
                    message: format!("not a valid model-proc: {e}"),
                })?;
                overlay(&mut merged, over);
                ModelProc::from_json(&file, merged).map(Some)
            }
        }
    }
}

/// `over`'s fields over `base`'s: `input` field by field, the rest whole.
fn overlay(base: &mut Value, over: Value) {
    let (Value::Object(base), Value::Object(over)) = (base, over) else {
        return;
    };
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(inner)), Value::Object(fields)) if key == "input" => {
                inner.extend(fields);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The model-proc (as JSON) that an Ultralytics export's metadata implies;
/// `None` where the metadata has no `task` and `names`.
pub(crate) fn implied(metadata: &[(String, String)]) -> std::result::Result<Option<Value>, String> {
    let get = |key: &str| {
        metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let (Some(task), Some(names)) = (get("task"), get("names")) else {
        return Ok(None);
    };
    let parse = |key: &str, text: &str| Literal::parse(text).map_err(|e| format!("{key}: {e}"));
    let labels = labels(&parse("names", names)?).map_err(|e| format!("names: {e}"))?;
    let mut input = json!({
        "range": [0, 1],
        "color": "rgb",
        "resize": "letterbox",
        "pad": [PAD, PAD, PAD],
    });
    if let Some(text) = get("imgsz") {
        let [h, w] = imgsz(&parse("imgsz", text)?).map_err(|e| format!("imgsz: {e}"))?;
        input["size"] = json!([w, h]);
    }
    let decoder = match task {
        "detect" | "segment" | "pose" | "obb" => {
            let flag = |v: Option<&Literal>| matches!(v, Some(Literal::Bool(true)));
            let end2end = get("end2end") == Some("True");
            let nms = match get("args") {
                Some(text) => flag(parse("args", text)?.get("nms")),
                None => false,
            };
            let layout = if end2end || nms { "end2end" } else { "yolov8" };
            json!({"type": "yolo", "layout": layout, "task": task})
        }
        // Ultralytics' classify transforms: the short side resized, the
        // centre cropped, 0..1 with no mean or std; outputs are softmaxed.
        "classify" => {
            input["resize"] = json!("crop");
            json!({"type": "classification"})
        }
        other => return Err(format!("task '{other}' is not one wgnn reads")),
    };
    let mut proc = Map::new();
    proc.insert("input".into(), input);
    proc.insert("decoder".into(), decoder);
    proc.insert("labels".into(), json!(labels));
    proc.insert("threshold".into(), json!(THRESHOLD));
    proc.insert("iou_threshold".into(), json!(IOU_THRESHOLD));
    Ok(Some(Value::Object(proc)))
}

/// `{0: 'person', 1: 'bicycle'}` as a list by class id: the ids must be
/// 0..n, each once (in any order), the names strings.
fn labels(names: &Literal) -> std::result::Result<Vec<String>, String> {
    let Literal::Dict(pairs) = names else {
        return Err("not a dict of class ids to names".into());
    };
    if pairs.is_empty() {
        return Err("no classes".into());
    }
    let mut labels = vec![None; pairs.len()];
    for (key, value) in pairs {
        let Literal::Int(i) = key else {
            return Err("a key is not a class id (an integer)".into());
        };
        let Some(id) = usize::try_from(*i).ok().filter(|&i| i < pairs.len()) else {
            return Err(format!(
                "class ids must be 0 to {}; {i} is not",
                pairs.len() - 1
            ));
        };
        let Literal::Str(name) = value else {
            return Err(format!("the name of class {id} is not a string"));
        };
        if labels[id].replace(name.clone()).is_some() {
            return Err(format!("class {id} is named twice"));
        }
    }
    Ok(labels.into_iter().flatten().collect())
}

/// `[h, w]`, `(h, w)` or one `s` for both, as [h, w].
fn imgsz(size: &Literal) -> std::result::Result<[u32; 2], String> {
    let dim = |v: &Literal| match v {
        Literal::Int(i) => u32::try_from(*i)
            .ok()
            .filter(|&d| (1..=1 << 16).contains(&d))
            .ok_or_else(|| format!("{i} is not an image size")),
        Literal::Float(f) => Err(format!("{f} is not a whole number of pixels")),
        _ => Err("not a list of two integers".into()),
    };
    match size {
        Literal::List(items) if items.len() == 2 => Ok([dim(&items[0])?, dim(&items[1])?]),
        Literal::Int(_) => dim(size).map(|s| [s, s]),
        _ => Err("not an integer or a list of two".into()),
    }
}

#[cfg(test)]
mod tests;
