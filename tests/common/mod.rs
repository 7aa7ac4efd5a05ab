//! Helpers shared by every integration-test binary. Each `tests/<area>/main.rs`
//! includes this folder with `#[path = "../common/mod.rs"] mod common;` (a
//! folder without `main.rs`, so cargo does not build it as a test of its own).
#![allow(dead_code)]

pub mod broker;
pub mod harness;
pub mod onnx;
pub mod ops;
pub mod video;
pub mod xvfb;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The GPU every test uses. Tests that need a GPU fail (never skip) when there
/// is none: CI has lavapipe, so a missing adapter is a broken set-up.
pub fn gpu() -> wgnn::gpu::Gpu {
    static GPU: OnceLock<wgnn::gpu::Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        wgnn::gpu::Gpu::new().unwrap_or_else(|e| {
            panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
        })
    })
    .clone()
}

/// A GPU handle of its own, for tests that assert exact transfer counts and
/// must not see the traffic of the other tests running in the same process.
pub fn own_gpu() -> wgnn::gpu::Gpu {
    let _ = gpu();
    wgnn::gpu::Gpu::new().expect("GPU adapter")
}

/// A compute pipeline of the WGSL `source` (entry point `main`, layout
/// from the shader), made with plain wgpu as an application's own kernel is.
pub fn compute_pipeline(gpu: &wgnn::gpu::Gpu, label: &str, source: &str) -> wgpu::ComputePipeline {
    let module = gpu
        .device()
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
    gpu.device()
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        })
}

/// Path of the repository root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the golden references in `tests/data/golden` (see its README:
/// other implementations' outputs, kept in the repository).
pub fn golden(name: &str) -> PathBuf {
    let path = root().join("tests/data/golden").join(name);
    assert!(
        path.exists(),
        "golden file {} is missing from the checkout",
        path.display()
    );
    path
}

/// A golden `.f32` file: little-endian float32, no header.
pub fn golden_f32(name: &str) -> Vec<f32> {
    let path = golden(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytemuck::pod_collect_to_vec(&bytes)
}

/// The bundled 512x512 sample photo, also the input of the golden masks.
pub fn astronaut() -> image::RgbImage {
    let path = root().join("assets/samples/astronaut.png");
    image::open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgb8()
}

/// [`astronaut`] as packed RGB bytes, width and height.
pub fn astronaut_rgb() -> (Vec<u8>, u32, u32) {
    let img = astronaut();
    let (w, h) = img.dimensions();
    (img.into_raw(), w, h)
}

/// `wgnn-<name>-<pid>` in the temporary folder, created if missing. Tests of
/// one binary share a process id, so `name` keeps their folders apart.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgnn-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// [`temp_dir`], emptied first.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgnn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs one of the wgnn binaries (`env!("CARGO_BIN_EXE_...")`) with
/// `RUST_LOG=warn` and `env` added, and prints what it wrote (shown when the
/// test fails).
pub fn run_bin(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let name = Path::new(exe).file_name().unwrap().to_string_lossy();
    let out = Command::new(exe)
        .args(args)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"));
    eprintln!(
        "{name} {args:?} -> {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Set in the environment of a test process started by [`run_in_child`].
const CHILD: &str = "WGNN_TEST_CHILD";

/// Whether this process is a child started by [`run_in_child`].
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs the test `test` of module `module` (its `module_path!()`) again in a
/// child process of this test binary, with `set` added to and `unset` removed
/// from its environment; the test body checks [`is_child`] to know which side
/// it is on. For tests that need an environment of their own: variables are
/// process-wide, and changing them while other tests' threads (and the C
/// libraries under them) read them is a data race. Fails unless the child ran
/// exactly that test and it passed; returns what the child printed.
pub fn run_in_child(module: &str, test: &str, set: &[(&str, &str)], unset: &[&str]) -> String {
    // module_path!() starts with the test binary's crate name; libtest's
    // test names do not.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    };
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(set.iter().copied());
    for var in unset {
        command.env_remove(var);
    }
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child {name} failed:\n{text}");
    assert!(
        text.contains("test result: ok. 1 passed;"),
        "the child did not run {name}:\n{text}"
    );
    text
}

/// Frames and size of a video file, decoded with GStreamer.
pub fn decode_video(path: &Path) -> (usize, u32, u32) {
    gst::init().unwrap();
    let (mut n, mut size) = (0, (0, 0));
    let pipeline = harness::pull_samples(
        &format!(
            "filesrc location=\"{}\" ! decodebin ! videoconvert ! video/x-raw,format=RGBA ! appsink name=sink sync=false",
            path.display()
        ),
        |sample| {
            let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
            size = (info.width(), info.height());
            n += 1;
        },
    );
    harness::stop(&pipeline);
    (n, size.0, size.1)
}

/// How well a person mask agrees with a reference, both in [0, 1]: the mean
/// absolute difference and the IoU of (mask > 0.5), as the golden README
/// asks for.
pub fn mask_agreement(ours: &[f32], reference: &[f32]) -> (f64, f64) {
    assert_eq!(ours.len(), reference.len(), "masks of different sizes");
    let mut sum = 0.0f64;
    let (mut inter, mut union) = (0usize, 0usize);
    for (&a, &b) in ours.iter().zip(reference) {
        sum += f64::from((a - b).abs());
        inter += usize::from(a > 0.5 && b > 0.5);
        union += usize::from(a > 0.5 || b > 0.5);
    }
    (sum / ours.len() as f64, inter as f64 / union as f64)
}

/// A `width` x `height` RGBA frame whose every pixel differs from its
/// neighbours, so a shifted, flipped or resampled picture cannot pass for it.
pub fn known_frame(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height {
        for x in 0..width {
            out.extend_from_slice(&[
                (x * 4 + y) as u8,
                (y * 5 + x * 2) as u8,
                ((x * 7) ^ (y * 3)) as u8,
                255,
            ]);
        }
    }
    out
}

/// The largest per-channel difference between two RGBA pictures (alpha
/// ignored).
pub fn max_rgb_diff(a: &[u8], b: &[u8]) -> u8 {
    assert_eq!(a.len(), b.len());
    a.chunks_exact(4)
        .zip(b.chunks_exact(4))
        .flat_map(|(p, q)| (0..3).map(move |c| p[c].abs_diff(q[c])))
        .max()
        .unwrap_or(0)
}

/// Runs a one-input model on float32 `input` and returns its first output's
/// shape and values: the single-image case most model tests check.
pub fn run_image_model(
    model: &wgnn::models::Model,
    ctx: &wgnn::ml::Context,
    input_hw: Option<(usize, usize)>,
    input: &[f32],
) -> wgnn::Result<(Vec<usize>, Vec<f32>)> {
    let graph = model.build(ctx, input_hw)?;
    let (name, desc) = graph.inputs().remove(0);
    let value = wgnn::ml::HostTensor::f32(desc.shape, input.to_vec());
    let mut outputs = model.run(ctx, input_hw, &[(&name, value)])?;
    let (_, first) = outputs.remove(0);
    Ok((first.shape.clone(), first.to_f32()))
}

/// A one-frame PNG that only claims to be `w` x `h` (header only; the
/// decoder would fail on its empty data, but nothing must get that far).
pub fn png_header_only(path: &Path, w: u32, h: u32) {
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        let mut crc_in = kind.to_vec();
        crc_in.extend_from_slice(data);
        c.extend_from_slice(&crc32(&crc_in).to_be_bytes());
        c
    };
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    // zlib's empty stream: a final stored block of no bytes.
    png.extend(chunk(
        b"IDAT",
        &[0x78, 0x01, 0x01, 0, 0, 0xff, 0xff, 0, 0, 0, 1],
    ));
    png.extend(chunk(b"IEND", &[]));
    std::fs::write(path, png).unwrap();
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
