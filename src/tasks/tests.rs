//! Helpers for the tasks' tests, and the typed video <-> ml hand-off as the
//! tasks use it: rented tensors of the wrong shape or data type are refused
//! by the video shaders with a clear message.

use std::sync::OnceLock;

use crate::gpu::Gpu;
use crate::ml::{Context, DataType, TensorDescriptor};
use crate::video::cpu::CpuFrame;
use crate::video::{
    create_rgba_texture, download_rgba, upload_frame, ColorSpec, CompositeOptions, Compositor,
    Effect, FrameLayout, GpuFrame, ImageWriter, MaskOptions, TensorizeOptions, Tensorizer,
    TexturePool, VideoFormat,
};

/// The GPU of every tasks test (lavapipe in CI): a missing adapter fails.
pub(crate) fn gpu() -> Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        Gpu::new().unwrap_or_else(|e| panic!("the tasks tests need a GPU adapter: {e}"))
    })
    .clone()
}

/// The bundled photo at `w` x `h`, as packed RGBA.
pub(crate) struct Picture {
    pub layout: FrameLayout,
    pub bytes: Vec<u8>,
}

impl Picture {
    pub fn astronaut(w: u32, h: u32) -> Picture {
        let path = crate::assets_dir().join("samples/astronaut.png");
        let img = image::open(&path).unwrap().to_rgba8();
        let img = image::imageops::resize(&img, w, h, image::imageops::FilterType::Triangle);
        Picture {
            layout: FrameLayout::packed(VideoFormat::Rgba, w, h),
            bytes: img.into_raw(),
        }
    }

    pub fn flat(w: u32, h: u32, value: u8) -> Picture {
        Picture {
            layout: FrameLayout::packed(VideoFormat::Rgba, w, h),
            bytes: vec![value; (w * h * 4) as usize],
        }
    }

    pub fn on_gpu(&self, gpu: &Gpu) -> GpuFrame {
        upload_frame(gpu, &TexturePool::new(), &self.layout, &self.bytes).unwrap()
    }

    pub fn on_cpu(&self) -> CpuFrame<'_> {
        CpuFrame::from_layout(&self.layout, &self.bytes).unwrap()
    }
}

/// Mean and largest absolute difference of two byte pictures.
pub(crate) fn diff(a: &[u8], b: &[u8]) -> (f64, u8) {
    assert_eq!(a.len(), b.len(), "the pictures differ in size");
    let d: Vec<u8> = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).collect();
    let mean = d.iter().map(|&v| f64::from(v)).sum::<f64>() / d.len() as f64;
    (mean, d.into_iter().max().unwrap_or(0))
}

/// The RGBA rows of a GPU output frame.
pub(crate) fn read_back(gpu: &Gpu, frame: &GpuFrame) -> Vec<u8> {
    download_rgba(gpu, frame.plane(0).unwrap()).unwrap()
}

#[test]
fn rented_tensors_of_the_wrong_shape_or_type_are_refused() {
    let gpu = gpu();
    let ctx = Context::gpu(&gpu);
    let rent = |dtype, shape: &[usize]| {
        let t = ctx
            .create_tensor(TensorDescriptor::new(dtype, shape).exportable_to_gpu())
            .unwrap();
        ctx.export_to_gpu(&t).unwrap()
    };
    let frame = Picture::flat(8, 6, 50).on_gpu(&gpu);

    // Tensorize: [1, 4, 4, 3] float32 NHWC.
    let t = Tensorizer::new(&gpu, TensorizeOptions::new(4, 4)).unwrap();
    t.run(&frame, &rent(DataType::Float32, &[1, 4, 4, 3]))
        .unwrap();
    // Same byte length, other layout.
    let err = t
        .run(&frame, &rent(DataType::Float32, &[1, 3, 4, 4]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "tensorize: the destination tensor is float32 [1, 3, 4, 4]; it must be float32 \
             [1, 4, 4, 3]"
        ),
        "{err}"
    );
    let err = t
        .run(&frame, &rent(DataType::Int32, &[1, 4, 4, 3]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is int32 [1, 4, 4, 3]; it must be float32"),
        "{err}"
    );

    // Composite: a 4x3 float32 mask; unit axes may be anywhere.
    let mut c = Compositor::new(
        &gpu,
        CompositeOptions {
            mask: MaskOptions::new(4, 3),
            effect: Effect::Mask,
            color: ColorSpec::default(),
        },
    )
    .unwrap();
    let out = create_rgba_texture(&gpu, 8, 6).unwrap();
    for ok in [&[1, 3, 4, 1][..], &[1, 1, 3, 4], &[3, 4]] {
        c.run(&frame, &rent(DataType::Float32, ok), &out).unwrap();
    }
    let err = c
        .run(&frame, &rent(DataType::Float32, &[1, 4, 3, 1]), &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "composite: the mask tensor is float32 [1, 4, 3, 1]; a 4x3 mask must be float32 \
             [1, 3, 4, 1]"
        ),
        "{err}"
    );
    let err = c
        .run(&frame, &rent(DataType::Float16, &[1, 3, 4, 1]), &out)
        .unwrap_err()
        .to_string();
    assert!(err.contains("the mask tensor is float16"), "{err}");

    // Image out: a float32 [1, H, W, 3] image.
    let w = ImageWriter::new(&gpu).unwrap();
    w.run(&rent(DataType::Float32, &[1, 6, 8, 3]), &out)
        .unwrap();
    let err = w
        .run(&rent(DataType::Float32, &[1, 3, 6, 8]), &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "image out: the source tensor is float32 [1, 3, 6, 8]; it must be float32 [1, 6, 8, 3]"
        ),
        "{err}"
    );
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let region = crate::video::ImageRegion {
        x0: 0,
        width: 8,
        height: 6,
    };
    let err = w
        .encode_region(
            &mut encoder,
            &rent(DataType::Float32, &[1, 2, 2, 1]),
            &out,
            region,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is float32 [1, 2, 2, 1]; it must be a float32 [1, H, W, 3] image"),
        "{err}"
    );
    gpu.check().unwrap();
    ctx.destroy();
}
