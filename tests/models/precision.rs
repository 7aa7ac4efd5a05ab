//! `Model::build_with` on the bundled models: selfie and ESRGAN-slim in
//! float16 against float32 on a real picture (the mask and the PSNR the
//! elements' `precision=auto` relies on), what `auto` picks on the GPU and
//! the CPU context, and its log line.

use wgnn::ml::{Context, HostTensor, Precision};
use wgnn::models::{bundled, load, Model, AUTO_F16_TOLERANCE};

use crate::common::{self, mask_agreement};

/// The astronaut's `w` x `h` crop at (`x0`, `y0`), RGB, scaled by `scale`.
fn crop(x0: u32, y0: u32, w: u32, h: u32, scale: f32) -> Vec<f32> {
    let img = common::astronaut();
    let mut v = Vec::with_capacity((w * h * 3) as usize);
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            v.extend(img.get_pixel(x, y).0.iter().map(|&c| c as f32 * scale));
        }
    }
    v
}

fn first_output(
    model: &Model,
    ctx: &Context,
    hw: Option<(usize, usize)>,
    precision: Precision,
    input: &[f32],
) -> Vec<f32> {
    let graph = model.build_with(ctx, hw, precision).unwrap();
    let (name, desc) = graph.inputs().remove(0);
    assert_eq!(
        desc.data_type,
        wgnn::ml::DataType::Float32,
        "inputs stay float32"
    );
    let value = HostTensor::f32(desc.shape, input.to_vec());
    let mut out = model
        .run_with(ctx, hw, precision, &[(&name, value)])
        .unwrap();
    let (_, first) = out.remove(0);
    assert_eq!(
        first.data_type(),
        wgnn::ml::DataType::Float32,
        "outputs stay float32"
    );
    first.to_f32()
}

fn psnr(a: &[f32], b: &[f32], peak: f64) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    10.0 * (peak * peak / mse.max(1e-30)).log10()
}

#[test]
fn selfie_mask_in_float16_matches_float32() {
    let model = load(bundled("selfie/selfie_segmentation.tflite")).unwrap();
    let ctx = Context::gpu(&common::gpu());
    let input = crop(128, 0, 256, 256, 1.0 / 255.0);
    let f32_mask = first_output(&model, &ctx, None, Precision::F32, &input);
    let f16_mask = first_output(&model, &ctx, None, Precision::F16, &input);
    assert_eq!(
        model
            .build_with(&ctx, None, Precision::F16)
            .unwrap()
            .precision(),
        Precision::F16
    );
    let (mean_diff, iou) = mask_agreement(&f16_mask, &f32_mask);
    let max_diff = f16_mask
        .iter()
        .zip(&f32_mask)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    eprintln!("selfie f16 vs f32: mean |diff| {mean_diff:.2e}, max {max_diff:.2e}, IoU {iou:.5}");
    // Less than one 8-bit grey level on average, and the same person.
    assert!(mean_diff < 1.0 / 255.0, "mean diff {mean_diff}");
    assert!(iou > 0.995, "IoU {iou}");
    // The test can fail: the two graphs are not the same graph.
    assert!(max_diff > 0.0, "float16 gave float32's mask bit for bit");
}

#[test]
fn esrgan_in_float16_is_above_40_db() {
    let model = load(bundled("esrgan-slim/x2/model.json")).unwrap();
    let ctx = Context::gpu(&common::gpu());
    let hw = Some((20, 28));
    let input = crop(180, 60, 28, 20, 1.0);
    let a = first_output(&model, &ctx, hw, Precision::F32, &input);
    let b = first_output(&model, &ctx, hw, Precision::F16, &input);
    let db = psnr(&b, &a, 255.0);
    eprintln!("esrgan-slim x2 f16 vs f32: PSNR {db:.1} dB");
    assert!(db >= 40.0 && db.is_finite(), "PSNR {db} dB");
}

#[test]
fn auto_picks_float16_on_this_gpu_and_float32_on_the_cpu() {
    let model = load(bundled("esrgan-slim/x2/model.json")).unwrap();
    let hw = Some((8, 12));
    let gpu = common::gpu();
    let ctx = Context::gpu(&gpu);
    let choice = model.choose_precision(&ctx, hw, Precision::Auto).unwrap();
    // lavapipe (CI) offers SHADER_F16; a GPU without it must say so.
    if gpu.has(wgpu::Features::SHADER_F16) {
        assert_eq!(choice.precision, Precision::F16, "{choice}");
        let tol = format!("<= {AUTO_F16_TOLERANCE:.0e}, max ");
        assert!(choice.reason.contains(&tol), "{choice}");
    } else {
        assert_eq!(choice.precision, Precision::F32, "{choice}");
        assert!(choice.reason.contains("SHADER_F16"), "{choice}");
    }
    // selfie too: its mask moves a lot at a few undecided pixels of a
    // noise input, but not in RMS.
    let selfie = load(bundled("selfie/selfie_segmentation.tflite")).unwrap();
    let selfie_choice = selfie
        .choose_precision(&ctx, None, Precision::Auto)
        .unwrap();
    eprintln!("auto: esrgan-slim {choice}; selfie {selfie_choice}");
    assert_eq!(selfie_choice.precision, choice.precision, "{selfie_choice}");
    let graph = model.build_with(&ctx, hw, Precision::Auto).unwrap();
    assert_eq!(graph.precision(), choice.precision);
    // Asked again: the same graph, not a second probe.
    let again = model.build_with(&ctx, hw, Precision::Auto).unwrap();
    assert_eq!(again.node_count(), graph.node_count());
    // The probe's other graph was let go; asking for it builds it afresh.
    let other = match choice.precision {
        Precision::F16 => Precision::F32,
        _ => Precision::F16,
    };
    assert_eq!(
        model.build_with(&ctx, hw, other).unwrap().precision(),
        other
    );

    let cpu = Context::cpu();
    let choice = model.choose_precision(&cpu, hw, Precision::Auto).unwrap();
    assert_eq!(choice.precision, Precision::F32, "{choice}");
    assert!(choice.reason.contains("CPU context"), "{choice}");
    // f16 on the CPU context is allowed: it rounds as the GPU does.
    let forced = model.build_with(&cpu, hw, Precision::F16).unwrap();
    assert_eq!(forced.precision(), Precision::F16);
    assert_eq!(
        model
            .choose_precision(&cpu, hw, Precision::F32)
            .unwrap()
            .precision,
        Precision::F32
    );
}

#[test]
fn auto_logs_its_choice_once() {
    if !common::is_child() {
        let text = common::run_in_child(
            module_path!(),
            "auto_logs_its_choice_once",
            &[("RUST_LOG", "wgnn=info")],
            &[],
        );
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("precision auto"))
            .collect();
        assert_eq!(lines.len(), 2, "one line per context:\n{text}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("model.json: precision auto: f16 (rms rel diff")),
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("precision auto: f32 (the CPU context")),
            "{text}"
        );
        return;
    }
    let model = load(bundled("esrgan-slim/x2/model.json")).unwrap();
    let (gpu, cpu) = (Context::gpu(&common::gpu()), Context::cpu());
    for _ in 0..2 {
        for ctx in [&gpu, &cpu] {
            model
                .build_with(ctx, Some((6, 6)), Precision::Auto)
                .unwrap();
        }
    }
}
