//! Frames through the device's staging ring (`Gpu::upload_textures`, which
//! `upload_frame` uses): the plane textures hold exactly what
//! `write_texture` (`Gpu::upload_texture`) puts there, whether a compute
//! pass unpacks them or they are copied, for every format, odd sizes, padded strides, more frames than ring buffers and frames whose
//! size changes; the ring's buffers stay few; a lost device is the usual
//! one-line error.

use crate::common;

use crate::common::video::{planes_of, random_frame, rng, texture_bytes};
use wgnn::gpu::transfer::{TextureRegion, TextureWrite};
use wgnn::gpu::upload_ring::SLOTS;
use wgnn::gpu::{Gpu, UploadRing};
use wgnn::video::{upload_frame, FrameLayout, GpuFrame, TextureKey, TexturePool, VideoFormat};

/// Plane textures of the frame's own sizes and formats, for copies only
/// (no STORAGE_BINDING: the ring copies into them rather than unpacking).
fn copy_textures(gpu: &Gpu, layout: &FrameLayout) -> Vec<wgpu::Texture> {
    let f = layout.format;
    (0..f.plane_count())
        .map(|p| {
            let (w, h) = f.plane_size(p, layout.width, layout.height);
            gpu.device().create_texture(&wgpu::TextureDescriptor {
                label: Some("copied plane"),
                size: wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: f.plane_format(p),
                usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            })
        })
        .collect()
}

fn read_back(gpu: &Gpu, textures: &[wgpu::Texture]) -> Vec<Vec<u8>> {
    textures.iter().map(|t| texture_bytes(gpu, t)).collect()
}

/// The planes as `write_texture` uploads them, one plane at a time into
/// textures of the frame's own sizes and formats.
fn written_planes(gpu: &Gpu, layout: &FrameLayout, bytes: &[u8]) -> Vec<Vec<u8>> {
    let textures = copy_textures(gpu, layout);
    for (texture, plane) in textures.iter().zip(&layout.planes) {
        gpu.upload_texture(
            texture,
            TextureRegion::whole(texture),
            &bytes[plane.offset..],
            plane.stride as u32,
            texture.height(),
        )
        .unwrap();
    }
    read_back(gpu, &textures)
}

#[test]
fn ring_frames_match_write_texture() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(21);
    // Odd sizes, tight and padded strides; the two large ones (over 1 MiB a
    // plane) are copied in parallel bands, one of them row by row.
    let cases = [
        (VideoFormat::Rgba, 37, 23, 0),
        (VideoFormat::Rgba, 64, 16, 0),
        (VideoFormat::Bgrx, 51, 29, 13),
        (VideoFormat::Rgb, 33, 7, 5),
        (VideoFormat::Nv12, 1, 1, 0),
        (VideoFormat::Nv12, 45, 31, 3),
        (VideoFormat::I420, 39, 27, 0),
        (VideoFormat::I420, 40, 20, 17),
        (VideoFormat::Rgba, 640, 480, 0),
        (VideoFormat::Nv12, 1201, 901, 7),
    ];
    let before = pool.upload_ring().stats();
    for (format, w, h, pad) in cases {
        let (layout, bytes) = random_frame(&mut r, format, w, h, pad);
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        assert_eq!(
            planes_of(&gpu, &frame),
            written_planes(&gpu, &layout, &bytes),
            "{format} {w}x{h} pad {pad}"
        );
    }
    let used = pool.upload_ring().stats().since(&before);
    // Each case waits for its read-back, so the ring always has a free buffer.
    assert_eq!(used.staged, cases.len() as u64, "{used:?}");
    assert_eq!(used.fallbacks, 0, "{used:?}");
    // The planes of formats the device can write as storage went through
    // the compute unpack, the rest (RGB's R8Uint at least) were copied.
    let unpackable = cases
        .iter()
        .flat_map(|&(format, ..)| (0..format.plane_count()).map(move |p| format.plane_format(p)))
        .filter(|&f| !gpu.upload_usage(f).is_empty())
        .count() as u64;
    assert_eq!(used.planes_unpacked, unpackable, "{used:?}");
    if std::env::var(wgnn::gpu::UPLOAD_UNPACK_ENV).as_deref() != Ok("0") {
        // Every Vulkan adapter, lavapipe included, maps primary buffers.
        assert!(
            !gpu.upload_usage(wgpu::TextureFormat::Rgba8Unorm).is_empty(),
            "RGBA planes are unpacked by compute"
        );
    }
}

#[test]
fn planes_without_storage_usage_are_copied_and_match() {
    let gpu = common::own_gpu();
    let ring = UploadRing::new();
    let mut r = rng(28);
    // One frame of each plane format; textures without STORAGE_BINDING,
    // so the ring copies them (the path of adapters that cannot unpack).
    for format in [VideoFormat::Rgba, VideoFormat::Bgra, VideoFormat::Nv12] {
        let (layout, bytes) = random_frame(&mut r, format, 29, 13, 3);
        let textures = copy_textures(&gpu, &layout);
        let writes: Vec<TextureWrite> = textures
            .iter()
            .zip(&layout.planes)
            .map(|(t, plane)| TextureWrite {
                texture: t,
                region: TextureRegion::whole(t),
                data: &bytes[plane.offset..],
                bytes_per_row: plane.stride as u32,
                rows: t.height(),
            })
            .collect();
        let before = ring.stats();
        gpu.upload_textures(&ring, &writes).unwrap();
        let used = ring.stats().since(&before);
        assert_eq!((used.staged, used.planes_unpacked), (1, 0), "{used:?}");
        let got = read_back(&gpu, &textures);
        assert_eq!(got, written_planes(&gpu, &layout, &bytes), "{format}");
    }
}

#[test]
fn more_frames_than_ring_buffers_and_changing_sizes() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(22);
    let sizes = [(64, 48), (65, 47), (128, 96), (33, 17), (200, 150)];
    let frames: Vec<_> = (0..3 * SLOTS + 1)
        .map(|i| {
            let (w, h) = sizes[i % sizes.len()];
            let format = [VideoFormat::Rgba, VideoFormat::Nv12, VideoFormat::I420][i % 3];
            random_frame(&mut r, format, w, h, i % 4)
        })
        .collect();
    // All uploaded before any is read: uploads queue up behind each other,
    // each into the buffer the ring has free (or write_texture).
    let uploaded: Vec<GpuFrame> = frames
        .iter()
        .map(|(layout, bytes)| upload_frame(&gpu, &pool, layout, bytes).unwrap())
        .collect();
    for ((layout, bytes), frame) in frames.iter().zip(&uploaded) {
        assert_eq!(
            planes_of(&gpu, frame),
            written_planes(&gpu, layout, bytes),
            "{} {}x{}",
            layout.format,
            layout.width,
            layout.height
        );
    }
    let stats = pool.upload_ring().stats();
    assert_eq!(
        stats.staged + stats.fallbacks,
        frames.len() as u64,
        "{stats:?}"
    );
    assert!(stats.staged > 0, "{stats:?}");
}

#[test]
fn ring_buffers_do_not_grow_with_frames() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(23);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Nv12, 96, 64, 4);
    let run = |n: usize| {
        for _ in 0..n {
            let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
            drop(frame);
        }
        gpu.wait_idle().unwrap();
    };
    // How many ring buffers a run needs depends on how far the GPU lags the
    // uploads, never on how many frames there were.
    run(2 * SLOTS);
    let settled = gpu.live();
    run(20 * SLOTS);
    let after = gpu.live();
    assert!(after.buffers as usize <= SLOTS, "{after}");
    assert!(pool.upload_ring().stats().buffers_created as usize <= SLOTS);
    assert_eq!(
        (after.textures, after.texture_bytes),
        (settled.textures, settled.texture_bytes)
    );
    assert_eq!(
        after.buffer_bytes / after.buffers.max(1),
        settled.buffer_bytes / settled.buffers.max(1),
        "ring buffers keep their size"
    );
}

#[test]
fn counts_are_those_of_write_texture() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(24);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::I420, 41, 25, 6);
    let before = gpu.transfers();
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let ring = gpu.transfers().since(&before);
    let before = gpu.transfers();
    written_planes(&gpu, &layout, &bytes);
    let mut written = gpu.transfers().since(&before);
    // written_planes also reads its textures back.
    written.downloads = 0;
    written.download_bytes = 0;
    assert_eq!(ring, written);
    assert_eq!(ring.uploads, 3);
    drop(frame);
}

#[test]
fn a_lost_device_is_one_line() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(25);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, 32, 16, 0);
    // A ring buffer is being mapped again when the device goes.
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    gpu.destroy();
    let texture = frame.plane(0).unwrap();
    let err = gpu
        .upload_textures(
            pool.upload_ring(),
            &[TextureWrite {
                texture,
                region: TextureRegion::whole(texture),
                data: &bytes,
                bytes_per_row: 32 * 4,
                rows: 16,
            }],
        )
        .expect_err("a lost device cannot upload")
        .to_string();
    assert_eq!(err, "the GPU device was lost: destroyed");
    let err = upload_frame(&gpu, &pool, &layout, &bytes)
        .expect_err("a lost device cannot upload")
        .to_string();
    assert_eq!(err, "the GPU device was lost: destroyed");
}

#[test]
fn the_ring_goes_with_its_pool() {
    let gpu = common::own_gpu();
    let mut r = rng(26);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, 48, 32, 0);
    let pool = TexturePool::new();
    drop(upload_frame(&gpu, &pool, &layout, &bytes).unwrap());
    gpu.wait_idle().unwrap();
    assert!(gpu.live().buffers > 0, "the ring holds a staging buffer");
    drop(pool);
    gpu.wait_idle().unwrap();
    // What outlives the pool: the device's kernel cache (the unpack's).
    gpu.clear_pipeline_cache();
    assert_eq!(gpu.live(), Default::default());
}

#[test]
fn a_ring_used_on_another_device_makes_new_buffers_there() {
    let (a, b) = (common::own_gpu(), common::own_gpu());
    let ring = UploadRing::new();
    let mut r = rng(27);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, 30, 20, 8);
    for (i, gpu) in [&a, &b, &a].into_iter().enumerate() {
        let texture = TexturePool::new()
            .acquire(
                gpu,
                "test frame",
                TextureKey {
                    width: 30,
                    height: 20,
                    format: wgpu::TextureFormat::Rgba8Unorm,
                    usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
                },
            )
            .unwrap();
        let region = TextureRegion::whole(&texture);
        gpu.upload_textures(
            &ring,
            &[TextureWrite {
                texture: &texture,
                region,
                data: &bytes[layout.planes[0].offset..],
                bytes_per_row: layout.planes[0].stride as u32,
                rows: 20,
            }],
        )
        .unwrap();
        let got = gpu
            .download_texture(&texture, region)
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(
            vec![got],
            written_planes(gpu, &layout, &bytes),
            "device {i}"
        );
        // The whole ring is made on each device it is used on.
        assert_eq!(ring.stats().buffers_created, (i + 1) as u64 * SLOTS as u64);
    }
    assert_eq!(ring.stats().staged, 3);
}
