//! Tensorizing frames into the slots of a batched tensor [N, ...] (one model
//! dispatch for many streams): each item is bit for bit the tensor `encode`
//! (or `encode_region`) writes for that frame alone, whatever tensorizer
//! options, frame format, layout and dtype (f16 items of an odd number of
//! values, so that items start at odd elements), the bytes of the other
//! items stay as they were, and a wrong tensor or slot is an error naming it.

use crate::common;

use crate::common::video::{random_frame, rng};
use wgnn::gpu::Gpu;
use wgnn::video::{
    upload_frame, ChannelOrder, ColorSpec, GpuFrame, Normalize, OutputDtype, Resize, Sampling,
    TensorBuffer, TensorLayout, TensorizeOptions, Tensorizer, TexturePool, VideoFormat, YuvMatrix,
    YuvRange,
};

/// The byte every value of a fresh batched tensor starts as: no tensorized
/// value is 0xA5A5 (f16: -0.0222) or 0xA5A5A5A5 (f32: -2.9e-16) here.
const SENTINEL: u8 = 0xA5;

/// Output 7x5: 105 values an item, so that f16 items are 210 bytes and an
/// item after the first starts at an odd element or mid-word.
const OUT_W: u32 = 7;
const OUT_H: u32 = 5;

/// Three streams' options with the same output but each its own colour
/// spec, resize, channel order, normalisation and sampling.
fn stream_options(layout: TensorLayout, dtype: OutputDtype) -> [TensorizeOptions; 3] {
    let base = TensorizeOptions {
        layout,
        dtype,
        ..TensorizeOptions::new(OUT_W, OUT_H)
    };
    [
        base,
        TensorizeOptions {
            resize: Resize::Letterbox {
                pad: [114, 20, 250],
            },
            color: ColorSpec {
                matrix: YuvMatrix::Bt709,
                range: YuvRange::Full,
            },
            channels: ChannelOrder::Bgr,
            normalize: Normalize::MINUS_ONE_ONE,
            ..base
        },
        TensorizeOptions {
            resize: Resize::CenterCrop,
            normalize: Normalize::mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
            sampling: Sampling::Asymmetric,
            ..base
        },
    ]
}

/// A STORAGE buffer of `bytes` (rounded up to 4, as `ml` sizes tensors)
/// filled with [`SENTINEL`].
fn sentinel_buffer(gpu: &Gpu, bytes: u64) -> wgpu::Buffer {
    let size = bytes.div_ceil(4) * 4;
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test batched tensor"),
        size,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    gpu.upload_buffer(&buffer, 0, &vec![SENTINEL; size as usize])
        .unwrap();
    buffer
}

fn read(gpu: &Gpu, buffer: &wgpu::Buffer, bytes: u64) -> Vec<u8> {
    let data = gpu
        .download_buffer(buffer, 0, bytes.div_ceil(4) * 4)
        .unwrap()
        .wait()
        .unwrap();
    gpu.check().unwrap();
    data[..bytes as usize].to_vec()
}

/// The bytes `encode` (region None) or `encode_region` write for `frame`
/// alone into a [1, ...] tensor.
fn alone(gpu: &Gpu, t: &Tensorizer, frame: &GpuFrame, region: Option<[f32; 4]>) -> Vec<u8> {
    let dst = sentinel_buffer(gpu, t.output_bytes());
    let shape = t.output_shape().map(|d| d as usize);
    let tensor = TensorBuffer::new(&dst, t.options().dtype.data_type(), &shape);
    match region {
        None => t.run(frame, tensor).unwrap(),
        Some(region) => t.run_region(frame, region, tensor).unwrap(),
    }
    read(gpu, &dst, t.output_bytes())
}

/// One write into a batched tensor: which tensorizer, frame, region, slot.
struct Write<'a> {
    t: &'a Tensorizer,
    frame: &'a GpuFrame,
    region: Option<[f32; 4]>,
    slot: usize,
}

/// Records every write into one encoder over a fresh [`SENTINEL`]-filled
/// tensor of `batch` items, submits once, and reads the tensor back.
fn batched(gpu: &Gpu, batch: usize, writes: &[Write]) -> Vec<u8> {
    let t = writes[0].t;
    let bytes = batch as u64 * t.output_bytes();
    let dst = sentinel_buffer(gpu, bytes);
    let shape = t.batched_shape(batch as u32).map(|d| d as usize);
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    for w in writes {
        let tensor = TensorBuffer::new(&dst, w.t.options().dtype.data_type(), &shape);
        w.t.encode_slot(&mut encoder, w.frame, w.region, tensor, w.slot)
            .unwrap();
    }
    gpu.queue().submit([encoder.finish()]);
    read(gpu, &dst, bytes)
}

/// Item `slot` of a batched tensor's bytes.
fn item<'a>(bytes: &'a [u8], t: &Tensorizer, slot: usize) -> &'a [u8] {
    let n = t.output_bytes() as usize;
    &bytes[slot * n..(slot + 1) * n]
}

/// An RGBA 37x23, an NV12 64x48 and an I420 1x1 frame of random bytes.
fn three_frames(gpu: &Gpu, pool: &TexturePool, seed: u64) -> Vec<GpuFrame> {
    let mut r = rng(seed);
    [
        (VideoFormat::Rgba, 37, 23),
        (VideoFormat::Nv12, 64, 48),
        (VideoFormat::I420, 1, 1),
    ]
    .into_iter()
    .map(|(format, w, h)| {
        let (layout, bytes) = random_frame(&mut r, format, w, h, 3);
        upload_frame(gpu, pool, &layout, &bytes).unwrap()
    })
    .collect()
}

const LAYOUTS: [TensorLayout; 2] = [TensorLayout::Nhwc, TensorLayout::Nchw];
const DTYPES: [OutputDtype; 2] = [OutputDtype::F32, OutputDtype::F16];

#[test]
fn frames_of_three_streams_fill_their_slots_as_encode_would_alone() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let frames = three_frames(&gpu, &pool, 20);
    // Regions of each frame: sub-pixel, partly outside, the 1x1 whole.
    let regions = [
        [5.3, 1.7, 20.45, 12.2],
        [-4.0, 30.0, 40.0, 30.0],
        [0.0, 0.0, 1.0, 1.0],
    ];
    let slots = [2, 0, 1];
    for layout in LAYOUTS {
        for dtype in DTYPES {
            let ts = stream_options(layout, dtype).map(|o| Tensorizer::new(&gpu, o).unwrap());
            for with_regions in [false, true] {
                let what = format!("{layout:?} {dtype:?} regions {with_regions}");
                let region = |i: usize| with_regions.then_some(regions[i]);
                let writes: Vec<Write> = (0..3)
                    .map(|i| Write {
                        t: &ts[i],
                        frame: &frames[i],
                        region: region(i),
                        slot: slots[i],
                    })
                    .collect();
                let got = batched(&gpu, 3, &writes);
                for i in 0..3 {
                    let want = alone(&gpu, &ts[i], &frames[i], region(i));
                    assert!(
                        want.iter().any(|&b| b != SENTINEL),
                        "{what}: stream {i} wrote nothing"
                    );
                    assert!(
                        item(&got, &ts[i], slots[i]) == want.as_slice(),
                        "{what}: slot {} differs from encoding stream {i} alone",
                        slots[i]
                    );
                }
            }
        }
    }
}

#[test]
fn a_slot_write_leaves_the_other_items_untouched() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let frames = three_frames(&gpu, &pool, 21);
    for layout in LAYOUTS {
        for dtype in DTYPES {
            let [o, ..] = stream_options(layout, dtype);
            let t = Tensorizer::new(&gpu, o).unwrap();
            let what = format!("{layout:?} {dtype:?}");
            for region in [None, Some([2.0, 3.0, 11.0, 9.0])] {
                let got = batched(
                    &gpu,
                    3,
                    &[Write {
                        t: &t,
                        frame: &frames[0],
                        region,
                        slot: 1,
                    }],
                );
                for untouched in [0, 2] {
                    assert!(
                        item(&got, &t, untouched).iter().all(|&b| b == SENTINEL),
                        "{what} {region:?}: writing slot 1 changed slot {untouched}"
                    );
                }
                assert_eq!(
                    item(&got, &t, 1),
                    alone(&gpu, &t, &frames[0], region).as_slice(),
                    "{what} {region:?}"
                );
            }
        }
    }
}

#[test]
fn every_frame_format_fills_its_slot() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(22);
    for dtype in DTYPES {
        let [_, o, _] = stream_options(TensorLayout::Nchw, dtype);
        let t = Tensorizer::new(&gpu, o).unwrap();
        let n = VideoFormat::ALL.len();
        let frames: Vec<GpuFrame> = VideoFormat::ALL
            .iter()
            .map(|&format| {
                let (layout, bytes) = random_frame(&mut r, format, 19, 13, 5);
                upload_frame(&gpu, &pool, &layout, &bytes).unwrap()
            })
            .collect();
        // Slots in another order than the formats, the last one unwritten.
        let slot = |i: usize| (i * 3 + 1) % (n + 1);
        let writes: Vec<Write> = frames
            .iter()
            .enumerate()
            .map(|(i, frame)| Write {
                t: &t,
                frame,
                region: None,
                slot: slot(i),
            })
            .collect();
        let got = batched(&gpu, n + 1, &writes);
        let mut written = vec![false; n + 1];
        for (i, frame) in frames.iter().enumerate() {
            written[slot(i)] = true;
            assert_eq!(
                item(&got, &t, slot(i)),
                alone(&gpu, &t, frame, None).as_slice(),
                "{dtype:?} {:?} in slot {}",
                VideoFormat::ALL[i],
                slot(i)
            );
        }
        let free = written.iter().position(|&w| !w).unwrap();
        assert!(item(&got, &t, free).iter().all(|&b| b == SENTINEL));
    }
}

#[test]
fn whole_frame_slots_upload_their_parameters_once() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let frames = three_frames(&gpu, &pool, 23);
    let t = Tensorizer::new(&gpu, TensorizeOptions::new(OUT_W, OUT_H)).unwrap();
    let writes: Vec<Write> = (0..4)
        .map(|slot| Write {
            t: &t,
            frame: &frames[slot % 3],
            region: None,
            slot,
        })
        .collect();
    let first = batched(&gpu, 4, &writes);
    // The second time round every slot's parameters exist: the passes and
    // the tensor's own upload and download are all that moves.
    let before = gpu.transfers();
    let again = batched(&gpu, 4, &writes);
    let moved = gpu.transfers().since(&before);
    let bytes = (4 * t.output_bytes()).div_ceil(4) * 4;
    assert_eq!(moved.upload_bytes, bytes, "{moved:?}");
    assert_eq!(moved.download_bytes, bytes, "{moved:?}");
    assert_eq!(first, again);

    // A region uploads its parameters each time.
    let before = gpu.transfers();
    let region = Write {
        region: Some([1.0, 1.0, 5.0, 5.0]),
        ..writes.into_iter().nth(1).unwrap()
    };
    batched(&gpu, 4, &[region]);
    let moved = gpu.transfers().since(&before);
    assert_eq!(
        moved.upload_bytes,
        bytes + Tensorizer::region_upload_bytes(),
        "{moved:?}"
    );
}

#[test]
fn wrong_slot_tensors_are_errors_naming_them() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let frames = three_frames(&gpu, &pool, 24);
    let t = Tensorizer::new(
        &gpu,
        TensorizeOptions {
            layout: TensorLayout::Nchw,
            ..TensorizeOptions::new(8, 6)
        },
    )
    .unwrap();
    let item_bytes = t.output_bytes();
    let dst = sentinel_buffer(&gpu, 4 * item_bytes);
    let err = |dst: &wgpu::Buffer, dtype: wgnn::ml::DataType, shape: &[usize], slot: usize| {
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let tensor = TensorBuffer::new(dst, dtype, shape);
        t.encode_slot(&mut encoder, &frames[0], None, tensor, slot)
            .unwrap_err()
            .to_string()
    };
    let f32 = wgnn::ml::DataType::Float32;
    let cases: [(&[usize], wgnn::ml::DataType, usize, &str); 5] = [
        (
            &[4, 6, 8, 3],
            f32,
            0,
            "tensorize: the slot tensor is float32 [4, 6, 8, 3]; it must be float32 [N, 3, 6, 8] \
             (items of the tensorizer's output [1, 3, 6, 8])",
        ),
        (
            &[4, 3, 6, 8],
            wgnn::ml::DataType::Float16,
            0,
            "the slot tensor is float16 [4, 3, 6, 8]; it must be float32",
        ),
        (&[3, 6, 8], f32, 0, "the slot tensor is float32 [3, 6, 8]"),
        (
            &[4, 3, 6, 8],
            f32,
            4,
            "tensorize: slot 4 is outside the float32 [4, 3, 6, 8] tensor, which has 4 items",
        ),
        (
            &[5, 3, 6, 8],
            f32,
            1,
            "tensorize: the destination buffer has 2304 bytes, the [5, 3, 6, 8] tensor needs 2880",
        ),
    ];
    for (shape, dtype, slot, want) in cases {
        let got = err(&dst, dtype, shape, slot);
        assert!(got.contains(want), "{shape:?} slot {slot}: {got}");
        assert_eq!(got.lines().count(), 1, "{got}");
    }
    let not_storage = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 4 * item_bytes,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let got = err(&not_storage, f32, &[4, 3, 6, 8], 0);
    assert!(got.contains("lacks STORAGE"), "{got}");
    // `encode` still takes only the [1, ...] tensor.
    let shape = [4, 3, 6, 8];
    let got = t
        .run(&frames[0], TensorBuffer::new(&dst, f32, &shape))
        .unwrap_err()
        .to_string();
    assert!(
        got.contains(
            "the destination tensor is float32 [4, 3, 6, 8]; it must be float32 [1, 3, 6, 8]"
        ),
        "{got}"
    );
    // Nothing was written by any of them.
    assert!(read(&gpu, &dst, 4 * item_bytes)
        .iter()
        .all(|&b| b == SENTINEL));
}
