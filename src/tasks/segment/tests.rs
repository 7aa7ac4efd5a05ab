use crate::gpu::Gpu;
use crate::models::{self, Model};
use crate::tasks::tests::{diff, gpu, read_back, Picture};
use crate::tasks::{
    BackgroundSpec, Device, ModelTiming, SegmentEffect, SegmentOptions, Segmenter, Stage,
    StageMarks,
};
use crate::video::{create_rgba_texture, download_rgba, upload_frame, EdgeSoftening, TexturePool};

fn selfie() -> Model {
    models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap()
}

/// The RGBA rows the CPU segmenter writes for `picture`, with padded rows
/// whose padding must come back zeroed.
fn on_cpu(s: &mut Segmenter, picture: &Picture) -> Vec<u8> {
    let (w, h) = (
        picture.layout.width as usize,
        picture.layout.height as usize,
    );
    let stride = 4 * w + 8;
    let mut rows = vec![0xaa; stride * h];
    s.run_cpu(&picture.on_cpu(), &mut rows, stride).unwrap();
    let mut packed = Vec::with_capacity(4 * w * h);
    for row in rows.chunks(stride) {
        packed.extend_from_slice(&row[..4 * w]);
        assert!(row[4 * w..].iter().all(|&b| b == 0), "padding is zeroed");
    }
    packed
}

fn on_gpu(s: &mut Segmenter, gpu: &Gpu, picture: &Picture) -> Vec<u8> {
    let (out, ms) = s.run_gpu(&picture.on_gpu(gpu), ModelTiming::Off).unwrap();
    assert_eq!(ms, None, "untimed");
    read_back(gpu, &out)
}

#[test]
fn gpu_and_cpu_segment_a_frame_alike() {
    let gpu = gpu();
    let model: std::sync::Arc<Model> = selfie().into();
    let picture = Picture::astronaut(48, 40);
    let cases = [
        SegmentOptions::new(SegmentEffect::Mask),
        SegmentOptions {
            temporal: 0.5,
            ..SegmentOptions::new(SegmentEffect::Blur { strength: 2.0 })
        },
        SegmentOptions {
            edge: Some(EdgeSoftening {
                threshold: 0.5,
                softness: 0.2,
            }),
            ..SegmentOptions::new(SegmentEffect::Replace(BackgroundSpec::Color([
                255, 0, 0, 128,
            ])))
        },
        SegmentOptions::new(SegmentEffect::None),
    ];
    for options in cases {
        let mut g = Segmenter::new(&Device::Gpu(gpu.clone()), model.clone(), &options).unwrap();
        let mut c = Segmenter::new(&Device::Cpu, model.clone(), &options).unwrap();
        assert!(!g.is_cpu() && c.is_cpu());
        // Twice: the second frame goes through the temporal smoothing.
        for frame in 0..2 {
            let (a, b) = (on_gpu(&mut g, &gpu, &picture), on_cpu(&mut c, &picture));
            let (mean, max) = diff(&a, &b);
            if options.effect == SegmentEffect::None {
                assert_eq!(max, 0, "no model: the same picture");
                assert_eq!(a, picture.bytes, "the frame itself");
            }
            // Only the model's kernels (WGSL vs the CPU reference) differ,
            // by f32 rounding.
            assert!(
                mean <= 0.05 && max <= 2,
                "{options:?} frame {frame}: mean {mean}, max {max}"
            );
        }
    }
    gpu.check().unwrap();
}

#[test]
fn the_mask_finds_the_person() {
    let gpu = gpu();
    let picture = Picture::astronaut(64, 64);
    let options = SegmentOptions::new(SegmentEffect::Mask);
    let mut s = Segmenter::new(&Device::Gpu(gpu.clone()), selfie().into(), &options).unwrap();
    let mask = on_gpu(&mut s, &gpu, &picture);
    // The astronaut fills the middle of the photo; the top corners are
    // background.
    let at = |x: usize, y: usize| mask[4 * (y * 64 + x)];
    assert!(at(32, 40) > 200, "centre {}", at(32, 40));
    assert!(
        at(2, 2) < 60 && at(61, 2) < 60,
        "{} {}",
        at(2, 2),
        at(61, 2)
    );
}

/// Records the stages it is called for, and checks it gets the encoder.
#[derive(Default)]
struct Recorder(Vec<(&'static str, Stage)>);

impl StageMarks for Recorder {
    fn begin(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        encoder.push_debug_group("stage");
        self.0.push(("begin", stage));
    }

    fn end(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        encoder.pop_debug_group();
        self.0.push(("end", stage));
    }
}

#[test]
fn stage_marks_bracket_each_video_stage_and_the_model_can_be_timed() {
    let gpu = gpu();
    let picture = Picture::astronaut(32, 24);
    let frame = picture.on_gpu(&gpu);
    let options = SegmentOptions::new(SegmentEffect::Blur { strength: 1.5 });
    let mut s = Segmenter::new(&Device::Gpu(gpu.clone()), selfie().into(), &options).unwrap();
    let out = create_rgba_texture(&gpu, 32, 24).unwrap();
    let mut marks = Recorder::default();
    let run = s
        .run_gpu_into(&frame, &out, ModelTiming::Off, Some(&mut marks))
        .unwrap();
    assert_eq!(run.model_ms, None);
    assert_eq!(
        marks.0,
        [
            ("begin", Stage::Tensorize),
            ("end", Stage::Tensorize),
            ("begin", Stage::Output),
            ("end", Stage::Output),
        ]
    );
    let into = download_rgba(&gpu, &out).unwrap();
    let (pooled, _) = s.run_gpu(&frame, ModelTiming::Off).unwrap();
    assert_eq!(
        into,
        read_back(&gpu, &pooled),
        "the same picture either way"
    );

    if s.can_time_model() {
        let (_, ms) = s.run_gpu(&frame, ModelTiming::PerKernel).unwrap();
        assert!(ms.is_some_and(|ms| ms > 0.0), "{ms:?}");
    }
    // effect=none runs no model, so there is nothing to time.
    let none = SegmentOptions::new(SegmentEffect::None);
    let mut s = Segmenter::new(&Device::Gpu(gpu.clone()), selfie().into(), &none).unwrap();
    let mut marks = Recorder::default();
    s.run_gpu_into(&frame, &out, ModelTiming::PerKernel, Some(&mut marks))
        .unwrap();
    assert_eq!(marks.0, [("begin", Stage::Output), ("end", Stage::Output)]);
    gpu.check().unwrap();
}

#[test]
fn a_background_image_is_uploaded_once_and_counted_once() {
    let gpu = gpu();
    let path = std::env::temp_dir().join(format!("wgnn-tasks-bg-{}.png", std::process::id()));
    image::RgbaImage::from_pixel(5, 3, image::Rgba([0, 0, 255, 255]))
        .save(&path)
        .unwrap();
    let options = SegmentOptions::new(SegmentEffect::Replace(BackgroundSpec::Image(path.clone())));
    Segmenter::check(&selfie(), &options).unwrap();
    let mut s = Segmenter::new(&Device::Gpu(gpu.clone()), selfie().into(), &options).unwrap();
    let taken = s.take_setup_transfers();
    assert_eq!((taken.uploads, taken.upload_bytes), (1, 5 * 3 * 4));
    assert_eq!(s.take_setup_transfers(), Default::default(), "only once");
    // The CPU twin reads the same file and never touches a GPU.
    let mut c = Segmenter::new(&Device::Cpu, selfie().into(), &options).unwrap();
    assert_eq!(c.take_setup_transfers(), Default::default());
    let picture = Picture::astronaut(16, 16);
    on_cpu(&mut c, &picture);
    let _ = std::fs::remove_file(path);
}

#[test]
fn wrong_models_backgrounds_and_entry_points_are_errors() {
    let esrgan = models::load(models::bundled("esrgan-slim/x2/model.json")).unwrap();
    let options = SegmentOptions::new(SegmentEffect::Mask);
    let err = Segmenter::new(&Device::Cpu, esrgan.into(), &options)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("model.json: not a segmentation model"),
        "{err}"
    );
    assert!(err.contains("takes any size"), "{err}");

    let missing = SegmentOptions::new(SegmentEffect::Replace(BackgroundSpec::Image(
        "/no/such/beach.png".into(),
    )));
    let err = Segmenter::check(&selfie(), &missing)
        .unwrap_err()
        .to_string();
    assert!(err.contains("background image /no/such/beach.png"), "{err}");

    let gpu = gpu();
    let picture = Picture::flat(8, 8, 10);
    let mut c = Segmenter::new(&Device::Cpu, selfie().into(), &options).unwrap();
    let err = c
        .run_gpu(&picture.on_gpu(&gpu), ModelTiming::Off)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(
            "segmenter: run_gpu takes GPU frames, but this segmenter was made for the CPU"
        ),
        "{err}"
    );
    assert!(c.gpu_stages().is_err());
    let mut g = Segmenter::new(&Device::Gpu(gpu.clone()), selfie().into(), &options).unwrap();
    let err = g
        .run_cpu(&picture.on_cpu(), &mut [0; 256], 32)
        .unwrap_err()
        .to_string();
    assert!(err.contains("run_cpu takes CPU frames"), "{err}");
}

#[test]
fn a_frame_uploaded_and_segmented_in_one_call_is_segmented_as_in_two() {
    let gpu = gpu();
    let model: std::sync::Arc<Model> = selfie().into();
    let photo = Picture::astronaut(48, 40);
    // The second frame differs, and reuses the first's plane textures.
    let mut negative = Picture::astronaut(48, 40);
    negative.bytes.iter_mut().for_each(|b| *b = 255 - *b);
    let out = create_rgba_texture(&gpu, 48, 40).unwrap();
    for effect in [
        SegmentEffect::Blur { strength: 2.0 },
        SegmentEffect::Mask,
        SegmentEffect::None,
    ] {
        let options = SegmentOptions {
            temporal: 0.5,
            ..SegmentOptions::new(effect)
        };
        let device = Device::Gpu(gpu.clone());
        let mut one = Segmenter::new(&device, model.clone(), &options).unwrap();
        let mut two = Segmenter::new(&device, model.clone(), &options).unwrap();
        let (pool_one, pool_two) = (TexturePool::new(), TexturePool::new());
        for (i, picture) in [&photo, &negative, &photo].into_iter().enumerate() {
            let mut marks = Recorder::default();
            let (frame, run) = one
                .upload_run_gpu_into(
                    &pool_one,
                    &picture.layout,
                    &picture.bytes,
                    &out,
                    ModelTiming::Off,
                    Some(&mut marks),
                )
                .unwrap();
            assert_eq!(run.model_ms, None);
            let got = download_rgba(&gpu, &out).unwrap();
            drop(frame);
            let mut two_marks = Recorder::default();
            let frame = upload_frame(&gpu, &pool_two, &picture.layout, &picture.bytes).unwrap();
            two.run_gpu_into(&frame, &out, ModelTiming::Off, Some(&mut two_marks))
                .unwrap();
            let want = download_rgba(&gpu, &out).unwrap();
            assert_eq!(
                got, want,
                "{options:?} frame {i}: the same picture either way"
            );
            assert_eq!(marks.0, two_marks.0, "the same stages marked");
        }
    }
    // A timed model waits for its dispatch, so it cannot be recorded during
    // the upload: the call uploads first, and still times it.
    let options = SegmentOptions::new(SegmentEffect::Mask);
    let mut s = Segmenter::new(&Device::Gpu(gpu.clone()), model, &options).unwrap();
    if s.can_time_model() {
        let (_, run) = s
            .upload_run_gpu_into(
                &TexturePool::new(),
                &photo.layout,
                &photo.bytes,
                &out,
                ModelTiming::Whole,
                None,
            )
            .unwrap();
        assert!(
            run.model_ms.is_some_and(|ms| ms > 0.0),
            "{:?}",
            run.model_ms
        );
        assert_eq!(
            download_rgba(&gpu, &out).unwrap(),
            on_gpu(&mut s, &gpu, &photo)
        );
    }
    gpu.check().unwrap();
}
