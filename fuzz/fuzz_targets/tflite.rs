//! Any bytes given to the model loader as a .tflite file: an error or a model,
//! never a panic, a hang or a huge allocation.
//!
//! Two ways in, picked by the first byte: the bytes as the whole file, or the
//! rest of them XORed into a real model at an offset the next four bytes
//! choose. Random files die in the flatbuffer verifier; patched real models
//! get past it and reach the operators' options, the shapes and the sparse
//! weight decoder (MediaPipe's sparse face detector, one DENSIFY per layer).
#![no_main]

use libfuzzer_sys::fuzz_target;

const MODELS: [&[u8]; 3] = [
    include_bytes!("../../assets/models/mediapipe/face_detection_full_range_sparse.tflite"),
    include_bytes!("../../assets/models/mediapipe/hand_recrop.tflite"),
    include_bytes!("../../tests/data/tflite/ops/strided_slice_new_axis.tflite"),
];

fuzz_target!(|data: &[u8]| {
    let bytes = match data {
        [mode, a, b, c, d, patch @ ..] if mode % 2 == 1 => {
            let mut model = MODELS[usize::from(mode / 2) % MODELS.len()].to_vec();
            let at = u32::from_le_bytes([*a, *b, *c, *d]) as usize % model.len();
            for (byte, p) in model[at..].iter_mut().zip(patch) {
                *byte ^= p;
            }
            model
        }
        _ => data.to_vec(),
    };
    let dir = std::env::temp_dir().join(format!("wgnn-fuzz-tflite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.tflite");
    std::fs::write(&path, bytes).unwrap();
    let _ = wgnn::models::load(&path);
});
