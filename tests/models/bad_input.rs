//! Corrupted copies of the bundled models, made at test time: each load must
//! fail with an error naming the file, the op or layer, and the cause; none
//! may panic or allocate what a lying header asks for.

use crate::common;

use std::path::{Path, PathBuf};

use wgnn::models;

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("models-bad-{name}"))
}

fn selfie_bytes() -> Vec<u8> {
    std::fs::read(common::root().join("assets/models/selfie/selfie_segmentation.tflite")).unwrap()
}

/// The x2 model copied into a scratch folder, its model.json passed through `edit`.
fn esrgan_copy(name: &str, edit: impl FnOnce(String) -> String) -> PathBuf {
    let dir = scratch(name);
    let src = common::root().join("assets/models/esrgan-slim/x2");
    let json = std::fs::read_to_string(src.join("model.json")).unwrap();
    std::fs::write(dir.join("model.json"), edit(json)).unwrap();
    std::fs::copy(
        src.join("group1-shard1of1.bin"),
        dir.join("group1-shard1of1.bin"),
    )
    .unwrap();
    dir.join("model.json")
}

fn load_err(path: &Path) -> String {
    let err = models::load(path).expect_err("the corrupted model must not load");
    let text = err.to_string();
    let file = path.file_name().unwrap().to_str().unwrap();
    assert!(
        text.contains(file),
        "error does not name the file {file}: {text}"
    );
    text
}

fn assert_has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "error lacks '{p}': {text}");
    }
}

fn replace_once(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    replace_n(bytes, from, to, 1);
}

fn replace_n(bytes: &mut [u8], from: &[u8], to: &[u8], n: usize) {
    assert_eq!(from.len(), to.len());
    let hits: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        hits.len(),
        n,
        "the pattern must occur exactly {n} times to patch it"
    );
    for h in hits {
        bytes[h..h + to.len()].copy_from_slice(to);
    }
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn tflite_cut_in_half() {
    let dir = scratch("half");
    let bytes = selfie_bytes();
    let path = dir.join("half.tflite");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_has(
        &load_err(&path),
        &["flatbuffer", "not a valid TFLite model"],
    );
}

#[test]
fn tflite_root_offset_out_of_range() {
    let dir = scratch("root");
    let mut bytes = selfie_bytes();
    bytes[0..4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let path = dir.join("root.tflite");
    std::fs::write(&path, &bytes).unwrap();
    assert_has(&load_err(&path), &["not a valid TFLite model"]);
}

/// Flipping bytes anywhere either still loads (a weight changed) or fails
/// with the file named; it never panics.
#[test]
fn tflite_flipped_bytes_never_panic() {
    let dir = scratch("flip");
    let original = selfie_bytes();
    let path = dir.join("flipped.tflite");
    let mut failures = 0;
    for k in 0..48 {
        let mut bytes = original.clone();
        let at = (k * 7919 + 13) % bytes.len();
        bytes[at] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = models::load(&path) {
            assert!(e.to_string().contains("flipped.tflite"), "{e}");
            failures += 1;
        }
    }
    eprintln!("{failures} of 48 flips refused");
}

#[test]
fn tflite_unknown_custom_op() {
    let dir = scratch("custom");
    let mut bytes = selfie_bytes();
    replace_once(
        &mut bytes,
        b"Convolution2DTransposeBias",
        b"Convolution2DTransposeBiaX",
    );
    let path = dir.join("custom.tflite");
    std::fs::write(&path, &bytes).unwrap();
    assert_has(
        &load_err(&path),
        &[
            "operator #244",
            "unsupported custom op 'Convolution2DTransposeBiaX'",
        ],
    );
}

#[test]
fn tflite_absurd_input_shape() {
    let dir = scratch("absurd");
    let mut bytes = selfie_bytes();
    replace_once(
        &mut bytes,
        &i32s(&[1, 256, 256, 3]),
        &i32s(&[1, i32::MAX, i32::MAX, 3]),
    );
    let path = dir.join("absurd.tflite");
    std::fs::write(&path, &bytes).unwrap();
    assert_has(&load_err(&path), &["input_1", "elements"]);
}

#[test]
fn tflite_shapes_that_do_not_chain() {
    let dir = scratch("chain");
    let mut bytes = selfie_bytes();
    // [1, 256, 256, 1] is the output's shape and shape_signature.
    replace_n(
        &mut bytes,
        &i32s(&[1, 256, 256, 1]),
        &i32s(&[1, 256, 256, 2]),
        2,
    );
    let path = dir.join("chain.tflite");
    std::fs::write(&path, &bytes).unwrap();
    assert_has(
        &load_err(&path),
        &["operator #", "computes [1, 256, 256, 1]", "declares"],
    );
}

/// A 16x8-quantized model (tests/data/tflite/bad, written by
/// make_references.py, which LiteRT runs): int8 and uint8 models are read,
/// an int16 one is refused up front, naming the first int16 tensor.
#[test]
fn tflite_int16_quantized_model() {
    let path = common::root().join("tests/data/tflite/bad/quantized_int16.tflite");
    assert_has(
        &load_err(&path),
        &[
            "tensor 0 'image_int16'",
            "is quantized as INT16 (scale 0.02)",
            "wgnn reads int8 and uint8 quantized tensors",
        ],
    );
}

/// LOG is a builtin op outside the vision set: named with its operator index.
#[test]
fn tflite_op_outside_the_list() {
    let path = common::root().join("tests/data/tflite/bad/unsupported_op.tflite");
    assert_has(
        &load_err(&path),
        &["operator #1 (LOG)", "unsupported op LOG"],
    );
}

/// A sparse weight whose CSR indices point past its dimension (the face
/// detector's first sparse tensor, with one index patched): a clear error
/// naming the tensor, no out-of-bounds write.
#[test]
fn tflite_sparse_index_out_of_range() {
    let dir = scratch("sparse");
    let src =
        common::root().join("assets/models/mediapipe/face_detection_full_range_sparse.tflite");
    let mut bytes = std::fs::read(src).unwrap();
    // Every width's largest value is past the tensor's 32 channels.
    let (at, width) = first_sparse_index(&bytes);
    bytes[at..at + width].fill(0x7f);
    let patched = match width {
        1 => "index 127 ",
        2 => "index 32639 ",
        _ => "index 2139062143 ",
    };
    let path = dir.join("sparse.tflite");
    std::fs::write(&path, &bytes).unwrap();
    assert_has(
        &load_err(&path),
        &["(DENSIFY)", "sparsity", patched, "is out of range"],
    );
}

/// The byte offset and width of the first element of the first sparse
/// tensor's `array_indices`, found by walking the flatbuffer by hand (so the
/// test does not share the importer's reading of it).
fn first_sparse_index(b: &[u8]) -> (usize, usize) {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let i32_at = |at: usize| i32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    // A table's field `k`: the absolute offset of its value, if present.
    let field = |table: usize, k: usize| {
        let vtable = (table as i64 - i64::from(i32_at(table))) as usize;
        let len = u16::from_le_bytes(b[vtable..vtable + 2].try_into().unwrap()) as usize;
        let slot = 4 + 2 * k;
        let off = if slot < len {
            u16::from_le_bytes(b[vtable + slot..vtable + slot + 2].try_into().unwrap()) as usize
        } else {
            0
        };
        (off != 0).then_some(table + off)
    };
    let deref = |at: usize| at + u32_at(at);
    // Model.subgraphs (field 2)[0].tensors (field 0); Tensor.sparsity is
    // field 6; SparsityParameters.dim_metadata field 2; DimensionMetadata
    // array_indices_type is field 4 (1 int32, 2 uint16, 3 uint8) and
    // array_indices field 5 (a table whose values are field 0).
    let model = u32_at(0);
    let subgraphs = deref(field(model, 2).unwrap());
    let subgraph = deref(subgraphs + 4);
    let tensors = deref(field(subgraph, 0).unwrap());
    for t in 0..u32_at(tensors) {
        let tensor = deref(tensors + 4 + 4 * t);
        let Some(sparsity) = field(tensor, 6) else {
            continue;
        };
        let dims = deref(field(deref(sparsity), 2).unwrap());
        for d in 0..u32_at(dims) {
            let dim = deref(dims + 4 + 4 * d);
            if let (Some(kind), Some(indices)) = (field(dim, 4), field(dim, 5)) {
                let width = match b[kind] {
                    1 => 4,
                    2 => 2,
                    _ => 1,
                };
                let values = deref(field(deref(indices), 0).unwrap());
                assert!(u32_at(values) > 0);
                return (values + 4, width);
            }
        }
    }
    panic!("no sparse tensor with CSR indices");
}

#[test]
fn tfjs_missing_shard() {
    let path = esrgan_copy("missing", |j| j);
    std::fs::remove_file(path.with_file_name("group1-shard1of1.bin")).unwrap();
    assert_has(
        &load_err(&path),
        &["weightsManifest", "group1-shard1of1.bin"],
    );
}

#[test]
fn tfjs_shard_of_the_wrong_size() {
    let path = esrgan_copy("short", |j| j);
    let shard = path.with_file_name("group1-shard1of1.bin");
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() - 4]).unwrap();
    assert_has(&load_err(&path), &["hold 888296 bytes", "need 888300"]);
}

#[test]
fn tfjs_nan_weight() {
    let path = esrgan_copy("nan", |j| j);
    let shard = path.with_file_name("group1-shard1of1.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[0..4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&shard, &bytes).unwrap();
    assert_has(&load_err(&path), &["weight 'F_0/kernel'", "non-finite"]);
}

#[test]
fn tfjs_lying_weight_shape() {
    let path = esrgan_copy("lying", |j| {
        j.replacen("[3, 3, 64, 64]", "[300000, 300000, 64, 64]", 1)
    });
    // Refused from the sizes alone, before anything that large is allocated.
    assert_has(&load_err(&path), &["need", "bytes"]);
    let path = esrgan_copy("overflow", |j| {
        j.replacen("[3, 3, 64, 64]", "[4294967296, 4294967296, 64, 64]", 1)
    });
    assert_has(&load_err(&path), &["weight 'F_0/kernel'", "absurdly large"]);
}

#[test]
fn tfjs_unknown_layer() {
    let path = esrgan_copy("layer", |j| {
        j.replace("\"UpSampling2D\"", "\"UpSampling3D\"")
    });
    assert_has(
        &load_err(&path),
        &["layer 'UPsample'", "'UpSampling3D' is not supported"],
    );
}

#[test]
fn tfjs_shapes_that_do_not_chain() {
    // LRL_1 adds F_0 (64 channels) to F_1_1 (4 channels) instead of LFF_1.
    let path = esrgan_copy("chain", |j| {
        j.replacen(
            "[[[\"LFF_1\", 0, 0, {}], [\"F_0\"",
            "[[[\"F_1_1\", 0, 0, {}], [\"F_0\"",
            1,
        )
    });
    assert_has(&load_err(&path), &["layer 'LRL_1' (Add)", "add"]);
}

#[test]
fn tfjs_float16_weights_refused() {
    let path = esrgan_copy("dtype", |j| {
        j.replacen(
            "[3, 3, 64, 64], \"dtype\": \"float32\"",
            "[3, 3, 64, 64], \"dtype\": \"float16\"",
            1,
        )
    });
    assert_has(&load_err(&path), &["weight 'F_0/kernel'", "float16"]);
}

#[test]
fn tfjs_truncated_json() {
    let path = esrgan_copy("trunc", |j| j[..j.len() / 2].to_string());
    assert_has(&load_err(&path), &["model.json", "not valid JSON"]);
}

/// A model held in memory (`load_bytes`, the fuzz targets' way in) loads as
/// the same files on disk do, and the shard it names must be among the
/// files given with it.
#[test]
fn in_memory_tfjs_model_needs_its_shard() {
    let dir = common::root().join("assets/models/esrgan-slim/x2");
    let json = std::fs::read(dir.join("model.json")).unwrap();
    let shard = std::fs::read(dir.join("group1-shard1of1.bin")).unwrap();
    let on_disk = models::load(dir.join("model.json")).unwrap();
    let files = [("group1-shard1of1.bin", shard.as_slice())];
    let in_memory = models::load_bytes("x2.json", json.clone(), None, &files).unwrap();
    assert_eq!(in_memory.format(), models::Format::TfjsLayers);
    assert_eq!(in_memory.inputs(), on_disk.inputs());
    assert_eq!(
        in_memory.output_shapes(Some((6, 10))).unwrap(),
        on_disk.output_shapes(Some((6, 10))).unwrap()
    );
    let err = models::load_bytes("x2.json", json, None, &[]).unwrap_err();
    assert_has(
        &err.to_string(),
        &[
            "x2.json",
            "cannot read shard 'group1-shard1of1.bin'",
            "not among the files given",
        ],
    );
}

/// Every seed of the TF.js and TFLite fuzz corpora (fuzz/make_corpus.py) is
/// a valid model, so mutations start from models that get past the parser.
/// Files a fuzzer added (named by their SHA-1) are not seeds and are skipped.
#[test]
fn fuzz_seeds_are_valid_models() {
    let corpus = common::root().join("fuzz/corpus");
    let mut seeds = 0;
    for (target, format) in [
        ("tfjs", models::Format::TfjsLayers),
        ("tflite", models::Format::Tflite),
    ] {
        for entry in std::fs::read_dir(corpus.join(target)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy();
            if name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            // The tfjs target's form: model.json, a NUL, the shard.
            let (json, shard) = match bytes.iter().position(|&b| b == 0) {
                Some(at) if target == "tfjs" => (bytes[..at].to_vec(), &bytes[at + 1..]),
                _ => (bytes.clone(), &[][..]),
            };
            let files = [("group1-shard1of1.bin", shard)];
            let model = models::load_bytes(&path, json, None, &files)
                .unwrap_or_else(|e| panic!("seed {} does not load: {e}", path.display()));
            assert_eq!(model.format(), format, "{}", path.display());
            seeds += 1;
        }
    }
    assert!(seeds >= 70, "only {seeds} seeds");
}

/// A model the fuzzer made (tests/data/fuzz): it must fail to load with an
/// error naming the file and holding each of `parts`.
pub(crate) fn fuzz_finding_fails(file: &str, parts: &[&str]) {
    let path = common::root().join("tests/data/fuzz").join(file);
    assert_has(&load_err(&path), parts);
}

/// RESHAPE's new_shape [.., -24, 9, 150994944, 1862270964]: its product
/// overflowed before the negative dimension was refused.
#[test]
fn tflite_reshape_shape_whose_product_overflows() {
    fuzz_finding_fails(
        "tflite_reshape_shape_overflow.tflite",
        &[
            "operator #0 (RESHAPE)",
            "new shape [3, 48, 20, 4, -24",
            "is not valid",
        ],
    );
}

/// A file outside any model's folder, with `bytes` in it: were a model let
/// read it, it would load (the sizes fit), so only the path check refuses.
fn outside_copy(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch(&format!("outside-{name}")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// How a model names a file outside its folder: by `..`, by an absolute
/// path, and by a symbolic link in the folder (made in `dir`).
fn escapes(dir: &Path, outside: &Path) -> [(String, &'static str); 3] {
    let link = dir.join("link.bin");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(outside, &link).unwrap();
    let up = Path::new("..")
        .join(outside.parent().unwrap().file_name().unwrap())
        .join(outside.file_name().unwrap());
    [
        (
            up.to_str().unwrap().to_string(),
            "it leaves the folder with '..'; it must be a relative path inside the model's folder",
        ),
        (
            outside.to_str().unwrap().to_string(),
            "it is an absolute path; it must be a relative path inside the model's folder",
        ),
        ("link.bin".to_string(), "it is a symbolic link to "),
    ]
}

#[test]
fn tfjs_shards_outside_the_models_folder_are_refused() {
    let shard = common::root().join("assets/models/esrgan-slim/x2/group1-shard1of1.bin");
    let outside = outside_copy("tfjs-shard.bin", &std::fs::read(shard).unwrap());
    let mut ran = 0;
    for k in 0..3 {
        let model = esrgan_copy(&format!("tfjs-escape-{k}"), |json| json);
        let (name, says) = escapes(model.parent().unwrap(), &outside)[k].clone();
        let edited = std::fs::read_to_string(&model)
            .unwrap()
            .replace("group1-shard1of1.bin", &name);
        std::fs::write(&model, edited).unwrap();
        let err = load_err(&model);
        assert!(
            err.contains(&format!("cannot read shard '{name}': {says}")),
            "{err}"
        );
        ran += 1;
    }
    assert_eq!(ran, 3);
}

#[test]
fn onnx_external_data_outside_the_models_folder_is_refused() {
    use prost::Message;
    use wgnn::models::onnx::proto::{
        tensor_proto::DataLocation, ModelProto, StringStringEntryProto,
    };
    let source = common::root().join("tests/data/detect/yolo/yolov5.onnx");
    let mut m = ModelProto::decode(std::fs::read(source).unwrap().as_slice()).unwrap();
    // The first initializer's values, moved to a file outside.
    let init = &mut m.graph.as_mut().unwrap().initializer[0];
    let raw = match init.raw_data.take() {
        Some(raw) => raw,
        None => std::mem::take(&mut init.float_data)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    };
    let outside = outside_copy("onnx-data.bin", &raw);
    init.data_location = Some(DataLocation::External as i32);
    let mut ran = 0;
    for k in 0..3 {
        let dir = scratch(&format!("onnx-escape-{k}"));
        let (name, says) = escapes(&dir, &outside)[k].clone();
        let init = &mut m.graph.as_mut().unwrap().initializer[0];
        init.external_data = vec![StringStringEntryProto {
            key: Some("location".into()),
            value: Some(name.clone()),
        }];
        let path = dir.join("escape.onnx");
        std::fs::write(&path, m.encode_to_vec()).unwrap();
        let err = load_err(&path);
        assert!(err.contains(says), "{name}: {err}");
        ran += 1;
    }
    assert_eq!(ran, 3);
    // The same file inside the folder loads: the refusals were the paths.
    let dir = scratch("onnx-inside");
    std::fs::copy(&outside, dir.join("data.bin")).unwrap();
    let init = &mut m.graph.as_mut().unwrap().initializer[0];
    init.external_data[0].value = Some("data.bin".into());
    std::fs::write(dir.join("inside.onnx"), m.encode_to_vec()).unwrap();
    models::load(dir.join("inside.onnx")).unwrap();
}

/// A FIFO (or a device) as a model is refused at once: opening it would
/// block until something writes to it.
#[test]
fn a_fifo_or_a_device_as_a_model_is_refused_without_blocking() {
    let dir = scratch("fifo");
    let fifo = dir.join("m.onnx");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (path, says) in [
        (fifo, "it is a FIFO (named pipe), not a regular file"),
        (
            PathBuf::from("/dev/zero"),
            "it is a character device, not a regular file",
        ),
    ] {
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(models::load(&p).map(|_| ()).unwrap_err().to_string());
        });
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{}: the load blocked", path.display()));
        assert!(err.contains(says), "{err}");
    }
}

/// A negative size in the input shape is refused when the model loads, not
/// taken for "any size" and found at the first frame; the shape is quoted
/// as the file writes it.
#[test]
fn tfjs_negative_input_dimension_is_refused_at_load() {
    let path = esrgan_copy("negative", |j| {
        j.replacen(
            "\"batch_input_shape\": [null, null, null, 3]",
            "\"batch_input_shape\": [null, -5, null, 3]",
            1,
        )
    });
    assert_has(
        &load_err(&path),
        &["batch_input_shape [null,-5,null,3] is not [batch, h, w, channels] of sizes"],
    );
}
