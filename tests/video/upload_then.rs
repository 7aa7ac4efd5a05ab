//! Work recorded while a frame's bytes are copied (`upload_frame_then`,
//! `Gpu::upload_textures_then`): it is submitted with the upload and after
//! it, so it reads the new frame even where the pool hands back textures
//! that held the last one; the planes hold what `upload_frame` puts there;
//! a failing recording still submits the upload and gives its buffer back
//! to the ring. (A full ring, where the upload falls back to
//! `write_texture`, is tested in `gpu::upload_ring`, which can hold its
//! buffers.)

use crate::common;

use crate::common::video::{planes_of, random_frame, rng, texture_bytes};
use wgnn::gpu::upload_ring::SLOTS;
use wgnn::gpu::{Commands, Gpu};
use wgnn::video::{upload_frame, upload_frame_then, GpuFrame, TexturePool, VideoFormat};
use wgnn::Error;

/// Textures of the frame's plane sizes and formats that `copy_planes`
/// copies into.
fn twin_textures(gpu: &Gpu, frame: &GpuFrame) -> Vec<wgpu::Texture> {
    frame
        .planes()
        .map(|t| {
            gpu.device().create_texture(&wgpu::TextureDescriptor {
                label: Some("twin plane"),
                size: t.size(),
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: t.format(),
                usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            })
        })
        .collect()
}

/// Records a copy of each of `frame`'s planes into `twins`.
fn copy_planes(commands: &mut Commands, frame: &GpuFrame, twins: &[wgpu::Texture]) {
    for (plane, twin) in frame.planes().zip(twins) {
        commands.encoder().copy_texture_to_texture(
            plane.as_image_copy(),
            twin.as_image_copy(),
            plane.size(),
        );
    }
}

fn read(gpu: &Gpu, textures: &[wgpu::Texture]) -> Vec<Vec<u8>> {
    textures.iter().map(|t| texture_bytes(gpu, t)).collect()
}

#[test]
fn work_recorded_during_the_upload_reads_the_new_frame() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(31);
    // Small frames copied on the calling thread, large ones (over 1 MiB a
    // plane) in parallel bands while the work is recorded; RGB's plane is
    // copied rather than unpacked.
    let cases = [
        (VideoFormat::Rgba, 37, 23, 0),
        (VideoFormat::Rgb, 33, 7, 5),
        (VideoFormat::I420, 40, 20, 17),
        (VideoFormat::Rgba, 640, 480, 0),
        (VideoFormat::Nv12, 1201, 901, 7),
    ];
    for (format, w, h, pad) in cases {
        // Two frames through the same pool: the second gets the first's
        // textures back, so work that ran before its upload would see the
        // first frame's bytes.
        for frame_no in 0..2 {
            let (layout, bytes) = random_frame(&mut r, format, w, h, pad);
            let before = (gpu.transfers(), pool.upload_ring().stats());
            let mut twins = Vec::new();
            let (frame, recorded, _) =
                upload_frame_then(&gpu, &pool, &layout, &bytes, "test work", |frame, c| {
                    twins = twin_textures(&gpu, frame);
                    copy_planes(c, frame, &twins);
                    Ok(frame.planes().count())
                })
                .unwrap();
            assert_eq!(recorded, format.plane_count());
            let moved = gpu.transfers().since(&before.0);
            let staged = pool.upload_ring().stats().since(&before.1);
            let what = format!("{format} {w}x{h} pad {pad}, frame {frame_no}");
            let expected = planes_of(
                &gpu,
                &upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap(),
            );
            assert_eq!(read(&gpu, &twins), expected, "{what}: the work's copies");
            assert_eq!(planes_of(&gpu, &frame), expected, "{what}: the planes");
            assert_eq!(moved.uploads, format.plane_count() as u64, "{what}");
            assert_eq!(moved.downloads, 0, "{what}");
            assert_eq!(
                (staged.staged, staged.fallbacks),
                (1, 0),
                "{what}: {staged:?}"
            );
        }
    }
    gpu.check().unwrap();
}

#[test]
fn a_failing_recording_still_uploads_and_keeps_the_ring() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(32);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, 320, 240, 0);
    let before = pool.upload_ring().stats();
    for _ in 0..3 * SLOTS {
        let err = upload_frame_then(&gpu, &pool, &layout, &bytes, "test work", |_, c| {
            // Half-recorded work is dropped, not submitted.
            c.encoder();
            Err::<(), _>(Error::Invalid("the work could not be recorded".into()))
        })
        .expect_err("the recording failed")
        .to_string();
        assert_eq!(err, "the work could not be recorded");
    }
    gpu.wait_idle().unwrap();
    let used = pool.upload_ring().stats().since(&before);
    assert_eq!(
        (used.staged, used.fallbacks),
        (3 * SLOTS as u64, 0),
        "every upload went through the ring and gave its buffer back: {used:?}"
    );
    assert!(pool.upload_ring().stats().buffers_created as usize <= SLOTS);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    assert_eq!(planes_of(&gpu, &frame)[0], bytes);
    gpu.check().unwrap();
}
