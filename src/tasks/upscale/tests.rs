use std::sync::Arc;

use crate::models::{self, Model};
use crate::tasks::tests::{diff, gpu, read_back, Picture};
use crate::tasks::{Device, UpscaleOptions, Upscaler};

fn esrgan(scale: u32) -> Arc<Model> {
    Arc::new(models::load(models::bundled(&format!("esrgan-slim/x{scale}/model.json"))).unwrap())
}

fn on_cpu(u: &mut Upscaler, picture: &Picture) -> Vec<u8> {
    let (ow, oh) = u.output_size(picture.layout.width, picture.layout.height);
    let (ow, oh) = (ow as usize, oh as usize);
    let stride = 4 * ow + 4;
    let mut rows = vec![0xaa; stride * oh];
    u.run_cpu(&picture.on_cpu(), &mut rows, stride).unwrap();
    let mut packed = Vec::with_capacity(4 * ow * oh);
    for row in rows.chunks(stride) {
        packed.extend_from_slice(&row[..4 * ow]);
        assert_eq!(row[4 * ow..], [0; 4], "padding is zeroed");
    }
    packed
}

#[test]
fn gpu_and_cpu_upscale_alike_and_compare_puts_bicubic_on_the_left() {
    let gpu = gpu();
    let model = esrgan(2);
    let picture = Picture::astronaut(12, 10);
    for compare in [false, true] {
        let options = UpscaleOptions {
            compare,
            ..UpscaleOptions::new(2)
        };
        let mut g = Upscaler::new(&Device::Gpu(gpu.clone()), model.clone(), options).unwrap();
        let mut c = Upscaler::new(&Device::Cpu, model.clone(), options).unwrap();
        assert_eq!(
            g.output_size(12, 10),
            if compare { (48, 20) } else { (24, 20) }
        );
        let frame = g.run_gpu(&picture.on_gpu(&gpu)).unwrap();
        assert_eq!((frame.width(), frame.height()), g.output_size(12, 10));
        let a = read_back(&gpu, &frame);
        let b = on_cpu(&mut c, &picture);
        let (mean, max) = diff(&a, &b);
        assert!(
            mean <= 0.05 && max <= 2,
            "compare={compare}: mean {mean}, max {max}"
        );
        assert!(a.chunks_exact(4).all(|p| p[3] == 255), "opaque");
        if compare {
            // Bicubic and the model see the same face: similar brightness.
            let half = |x0: usize| {
                let mut s = 0u64;
                for y in 0..20 {
                    for x in x0..x0 + 24 {
                        let i = 4 * (y * 48 + x);
                        s += a[i..i + 3].iter().map(|&v| u64::from(v)).sum::<u64>();
                    }
                }
                s as f64 / (24.0 * 20.0 * 3.0)
            };
            assert!(
                (half(0) - half(24)).abs() < 12.0,
                "{} vs {}",
                half(0),
                half(24)
            );
        }
    }
    gpu.check().unwrap();
}

#[test]
fn a_new_input_size_rebuilds_the_model_for_it() {
    let gpu = gpu();
    let mut u =
        Upscaler::new(&Device::Gpu(gpu.clone()), esrgan(3), UpscaleOptions::new(3)).unwrap();
    for (w, h) in [(8, 6), (5, 7), (8, 6)] {
        let out = u.run_gpu(&Picture::flat(w, h, 180).on_gpu(&gpu)).unwrap();
        assert_eq!((out.width(), out.height()), (3 * w, 3 * h));
        // A flat grey frame upscales to (nearly) the same flat grey.
        let rgba = read_back(&gpu, &out);
        let mean =
            rgba.chunks_exact(4).map(|p| f64::from(p[0])).sum::<f64>() / f64::from(9 * w * h);
        assert!((mean - 180.0).abs() < 8.0, "{w}x{h}: mean {mean}");
    }
}

#[test]
fn models_that_do_not_upscale_by_the_scale_are_refused() {
    let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
    let err = Upscaler::check(&selfie, 2).unwrap_err().to_string();
    assert!(
        err.contains("not a super-resolution model for scale=2: a 256x256 input gives"),
        "{err}"
    );
    let err = Upscaler::new(&Device::Cpu, esrgan(2), UpscaleOptions::new(3))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("not a super-resolution model for scale=3"),
        "{err}"
    );
    let err = Upscaler::check(&crate::tasks::image_input::tests::eight_channel_model(), 2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not an image model"), "{err}");

    let gpu = gpu();
    let mut c = Upscaler::new(&Device::Cpu, esrgan(2), UpscaleOptions::new(2)).unwrap();
    let err = c
        .run_gpu(&Picture::flat(4, 4, 0).on_gpu(&gpu))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("upscaler: run_gpu takes GPU frames"), "{err}");
}

#[test]
fn a_new_input_size_or_a_second_upscaler_compiles_no_pipeline() {
    // A device of its own: the compile counter is per device, and the other
    // tests compile on the shared one while this runs.
    let gpu = crate::gpu::Gpu::new().unwrap();
    let model = esrgan(2);
    let device = Device::Gpu(gpu.clone());
    let mut first = Upscaler::new(&device, model.clone(), UpscaleOptions::new(2)).unwrap();
    first
        .run_gpu(&Picture::astronaut(12, 10).on_gpu(&gpu))
        .unwrap();
    let compiled = gpu.pipelines_compiled();
    assert!(compiled > 0, "the first frame compiles the kernels");
    // A new frame size: a new graph, tensors and tensorizer (wgnnsuperres
    // on a caps change), all on kernels compiled before. (A width that is a
    // multiple of 8 would take conv2d_split's row-reuse variant for the
    // 64 -> 4 convolutions: one more pipeline, once; these widths do not.)
    first
        .run_gpu(&Picture::astronaut(18, 8).on_gpu(&gpu))
        .unwrap();
    // A second instance on the same device, as a second element would be.
    let mut second = Upscaler::new(&device, model, UpscaleOptions::new(2)).unwrap();
    second
        .run_gpu(&Picture::astronaut(14, 12).on_gpu(&gpu))
        .unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "a new size and a second upscaler reuse the device's pipelines"
    );
    gpu.check().unwrap();
}
