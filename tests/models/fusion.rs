//! What fusion makes of the bundled selfie models, pinned so that a change
//! that loses a fusion fails here: the kernels each model runs (one per node
//! after fusion; on a large GPU each costs its dispatch and barrier, about
//! 8 us on an H100, whatever it computes), and the GPU context's mask
//! against the CPU context's on the same picture.

use crate::common;

use wgnn::ml::{Context, Graph, OperandDescriptor, Profile, TensorDescriptor};
use wgnn::models;

/// (file, input height and width, builder nodes, nodes after fusion).
/// Before squeeze-and-excitation chains, binary residuals and depthwise +
/// pointwise pairs fused, both ran 81 kernels; 62 while the three
/// squeeze-and-excitation chains on large images (the square model's
/// 64x64x16 twice and 128x128x16) kept their pools as kernels of their own,
/// before the fused kernel spread an image over many workgroups; 59 before
/// each decoder stage's `x + relu(dw3x3(x))` add became the depthwise
/// conv's late residual (`fuse/late_residual.rs`, -3) and its bilinear
/// upsample swapped places with the 1x1 conv after it
/// (`fuse/resample_swap.rs`), which put the first stage's gate `mul`
/// straight before a conv, as its input scale (-1).
const SELFIE: [(&str, (usize, usize), usize, usize); 2] = [
    ("selfie_segmentation.tflite", (256, 256), 136, 55),
    ("selfie_segmentation_landscape.tflite", (144, 256), 136, 55),
];

#[test]
fn selfie_kernel_counts() {
    let ctx = Context::cpu();
    for (file, _, written, fused) in SELFIE {
        let model = models::load(common::root().join("assets/models/selfie").join(file)).unwrap();
        let g = model.build(&ctx, None).unwrap();
        assert_eq!(
            (g.written_node_count(), g.node_count()),
            (written, fused),
            "{file}: (nodes written, nodes after fusion)"
        );
    }
}

/// (model directory, builder nodes, nodes after fusion) of ESRGAN-slim
/// (built for a 6x10 input). Each: its three relus fold into their convs,
/// its three adds into the convs before them as residuals, and the nearest
/// upsample into the last conv (`fuse/upsample.rs`), which reads through it
/// (16 nodes before that). Its three channel concats, each read by a conv,
/// become one more conv each (`fuse/concat.rs`: the conv splits in two), so
/// the count stays: 15 kernels, all conv2d.
const ESRGAN: [(&str, usize, usize); 3] = [("x2", 23, 15), ("x3", 23, 15), ("x4", 23, 15)];

#[test]
fn esrgan_kernel_counts() {
    let ctx = Context::cpu();
    for (dir, written, fused) in ESRGAN {
        let path = common::root()
            .join("assets/models/esrgan-slim")
            .join(dir)
            .join("model.json");
        let g = models::load(path)
            .unwrap()
            .build(&ctx, Some((6, 10)))
            .unwrap();
        assert_eq!(
            (g.written_node_count(), g.node_count()),
            (written, fused),
            "esrgan-slim {dir}: (nodes written, nodes after fusion)"
        );
        // The CPU context's profile names each node's op.
        let profile = profile(&ctx, &g);
        let ops: Vec<&str> = profile.kernels.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(ops, ["conv2d"; 15], "esrgan-slim {dir}");
        // Each kernel's profile line names its shapes and fusions: the
        // first conv reads the 6x10 RGB picture, the last its input
        // upsampled.
        let scale = &dir[1..];
        assert_eq!(profile.details.len(), 15, "esrgan-slim {dir}");
        assert!(
            profile.details[0].starts_with("conv2d 3x3 ") && profile.details[0].contains("x6x10"),
            "esrgan-slim {dir}: {}",
            profile.details[0]
        );
        assert!(
            profile.details[14].contains(&format!("up{scale}x{scale}")),
            "esrgan-slim {dir}: {}",
            profile.details[14]
        );
    }
}

/// One profiled run of `g` (one input, one output) on `ctx`.
fn profile(ctx: &Context, g: &Graph) -> Profile {
    let tensor = |(name, d): (String, OperandDescriptor), writable: bool| {
        let t = TensorDescriptor::new(d.data_type, d.shape);
        let t = if writable { t.writable() } else { t.readable() };
        (name, ctx.create_tensor(t).unwrap())
    };
    let input = tensor(g.inputs().remove(0), true);
    let output = tensor(g.outputs().remove(0), false);
    g.profile(ctx, &[(&input.0, &input.1)], &[(&output.0, &output.1)])
        .unwrap()
}

#[test]
fn selfie_gpu_matches_cpu() {
    let (gpu, cpu) = (Context::gpu(&common::gpu()), Context::cpu());
    for (file, (h, w), _, _) in SELFIE {
        let model = models::load(common::root().join("assets/models/selfie").join(file)).unwrap();
        // The astronaut (a person: a mask with both classes), sampled to
        // the model's size.
        let img = common::astronaut();
        let (iw, ih) = (img.width() as usize, img.height() as usize);
        let input: Vec<f32> = (0..h * w * 3)
            .map(|k| {
                let (p, c) = (k / 3, k % 3);
                let (y, x) = ((p / w) * ih / h, (p % w) * iw / w);
                img.as_raw()[(y * iw + x) * 3 + c] as f32 / 255.0
            })
            .collect();
        let (_, g) = common::run_image_model(&model, &gpu, None, &input).unwrap();
        let (_, c) = common::run_image_model(&model, &cpu, None, &input).unwrap();
        let worst = g
            .iter()
            .zip(&c)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        eprintln!("{file}: max |gpu - cpu| = {worst:.2e}");
        // The mask is a sigmoid in [0, 1]; summation orders differ.
        assert!(worst <= 1e-3, "{file}: max |gpu - cpu| = {worst}");
        let spread =
            c.iter().fold(0.0f32, |m, v| m.max(*v)) - c.iter().fold(1.0f32, |m, v| m.min(*v));
        assert!(spread > 0.1, "{file}: a flat mask checks little ({spread})");
    }
}

/// (Ultralytics test export, input height and width where it takes any,
/// GPU kernels, of them `split`s) for YOLOv8n and YOLO11n
/// (tests/data/detect/ultralytics), in float32, where a channel split of a
/// conv's result stays a split (`fuse/conv_split.rs` splits float16 convs
/// only). 134 and 166 kernels before the
/// head's sigmoid moved into the class convs (`fuse/through_concat.rs`),
/// its box decoding became one kernel (`gpu/pointwise.rs`) and the class
/// rows' concat copied into the output's block (`gpu/concat_writes.rs`);
/// 132 and 165 (16 and 21 splits) before the C2f and SPPF concats of 3-4
/// operands ran one copy kernel and one conv instead of a chain of convs
/// (`fuse/concat.rs`) and concats of whole splits read the split's input
/// (`fuse/whole_split.rs`).
type YoloCase = (&'static str, Option<(usize, usize)>, usize, usize);
const YOLO: [YoloCase; 2] = [
    ("yolov8n_detect", None, 108, 8),
    ("yolo11n_dynamic", Some((64, 96)), 143, 13),
];

#[test]
fn yolo_gpu_kernel_counts() {
    let ctx = Context::gpu(&common::gpu());
    for (case, hw, kernels, splits) in YOLO {
        let dir = common::root()
            .join("tests/data/detect/ultralytics")
            .join(case);
        let g = models::load(dir.join("model.onnx"))
            .unwrap()
            .build(&ctx, hw)
            .unwrap();
        let profile = profile(&ctx, &g);
        let count = |op: &str| profile.kernels.iter().filter(|(o, _)| o == op).count();
        assert_eq!(
            (profile.kernels.len(), count("split"), count("slice")),
            (kernels, splits, 0),
            "{case}: (kernels, splits, slices)"
        );
    }
}
