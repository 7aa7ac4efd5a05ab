//! DMA-BUF input: frames in DMA-BUF memory (a memfd handed to GStreamer's
//! DMA-BUF allocator, as `v4l2src io-mode=dmabuf` or a VA decoder hands
//! real ones) pushed through `appsrc` under `memory:DMABuf` caps (both
//! GStreamer 1.22's and 1.24's DMA_DRM form) and under plain caps, planes in
//! one memory or one memory each, odd sizes and padded strides (VideoMeta).
//!
//! The output must be bit-identical to the system-memory path, and the
//! counters must say which path ran: on a device that can import DMA-BUFs
//! (`wgnn::video::dmabuf::support`), `frames-imported` grows and nothing is
//! uploaded; where it cannot (Mesa 22.3's lavapipe, which CI has), the
//! frames take the counted upload and the element says why once, at INFO.
//! A memfd is not a real DMA-BUF: drivers that check (not lavapipe) may
//! refuse to import one.
//!
//! Two binaries run this module: `tests/gst` on the system's device (Mesa
//! 22.3 lavapipe in CI: no import, the counted fallback), and `tests/dmabuf`
//! on Mesa 25 lavapipe, which imports (relying on its leniency: it takes a
//! memfd for a DMA-BUF). Each binary's root says which through
//! `DMABUF_IMPORT_EXPECTED` and picks the device in `select_dmabuf_device`.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

use gst::prelude::*;
use gst_allocators::prelude::*;
use gst_video::prelude::*;
use rand::{Rng, SeedableRng};

use wgnn::video::dmabuf::{self, Support};

use crate::common::harness::LogCapture;
use crate::{select_dmabuf_device, DMABUF_IMPORT_EXPECTED};

fn init() {
    select_dmabuf_device();
    crate::common::harness::init();
}

/// One test frame: its pixels (random, padding included) laid out plane by
/// plane with the given strides, and where each plane starts.
struct Frame {
    format: gst_video::VideoFormat,
    width: u32,
    height: u32,
    strides: Vec<usize>,
    /// Each plane's bytes (stride x rows), padding included.
    planes: Vec<Vec<u8>>,
}

impl Frame {
    /// A frame whose rows are `pad` bytes longer than the pixels need.
    fn random(format: &str, width: u32, height: u32, pad: usize, seed: u64) -> Frame {
        let format = gst_video::VideoFormat::from_string(format);
        let info = gst_video::VideoInfo::builder(format, width, height)
            .build()
            .unwrap();
        let finfo = info.format_info();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut strides = Vec::new();
        let mut planes = Vec::new();
        for p in 0..info.n_planes() as u8 {
            let row =
                finfo.scale_width(p, width) as usize * finfo.pixel_stride()[p as usize] as usize;
            let rows = finfo.scale_height(p, height) as usize;
            let stride = row + pad;
            strides.push(stride);
            planes.push((0..stride * rows).map(|_| rng.random()).collect());
        }
        Frame {
            format,
            width,
            height,
            strides,
            planes,
        }
    }

    fn rows(&self, p: usize) -> usize {
        self.planes[p].len() / self.strides[p]
    }

    fn row_bytes(&self, p: usize) -> usize {
        let finfo = gst_video::VideoFormatInfo::from_format(self.format);
        finfo.scale_width(p as u8, self.width) as usize * finfo.pixel_stride()[p] as usize
    }

    /// What an upload moves: stride x rows per plane.
    fn upload_bytes(&self) -> u64 {
        self.planes.iter().map(|p| p.len() as u64).sum()
    }

    /// The pixels alone, plane by plane, padding dropped.
    fn pixels(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in 0..self.planes.len() {
            for r in 0..self.rows(p) {
                let start = r * self.strides[p];
                out.extend_from_slice(&self.planes[p][start..start + self.row_bytes(p)]);
            }
        }
        out
    }

    /// The planes back to back after `gap` bytes, and their offsets.
    fn packed(&self, gap: usize) -> (Vec<u8>, Vec<usize>) {
        let mut data = vec![0xa5; gap];
        let mut offsets = Vec::new();
        for plane in &self.planes {
            offsets.push(data.len());
            data.extend_from_slice(plane);
        }
        (data, offsets)
    }

    fn add_meta(&self, buffer: &mut gst::BufferRef, offsets: &[usize]) {
        let strides: Vec<i32> = self.strides.iter().map(|&s| s as i32).collect();
        gst_video::VideoMeta::add_full(
            buffer,
            gst_video::VideoFrameFlags::empty(),
            self.format,
            self.width,
            self.height,
            offsets,
            &strides,
        )
        .unwrap();
    }

    /// The frame in plain system memory.
    fn system_buffer(&self) -> gst::Buffer {
        let (data, offsets) = self.packed(0);
        let mut b = gst::Buffer::from_mut_slice(data);
        self.add_meta(b.get_mut().unwrap(), &offsets);
        b
    }

    /// The frame in DMA-BUF memory, as `layout` says.
    fn dmabuf_buffer(&self, layout: Layout) -> gst::Buffer {
        let mut b = gst::Buffer::new();
        let r = b.get_mut().unwrap();
        match layout {
            Layout::OneMemory { gap } => {
                let (data, offsets) = self.packed(gap);
                r.append_memory(dmabuf_memory(&data, data.len()));
                self.add_meta(r, &offsets);
            }
            Layout::MemoryPerPlane { skip } => {
                // Each plane in its own fd, `skip` bytes in: the memory is a
                // share of the fd's from there, so the plane's offset in its
                // fd is the memory's offset, not 0.
                let mut offsets = Vec::new();
                let mut at = 0;
                for plane in &self.planes {
                    let mut data = vec![0x5a; skip];
                    data.extend_from_slice(plane);
                    let whole = dmabuf_memory(&data, data.len());
                    let memory = whole.share(skip..);
                    offsets.push(at);
                    at += memory.size();
                    r.append_memory(memory);
                }
                self.add_meta(r, &offsets);
            }
        }
        b
    }
}

#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Every plane in one memory, after `gap` bytes.
    OneMemory { gap: usize },
    /// One memory per plane, each `skip` bytes into its fd.
    MemoryPerPlane { skip: usize },
}

/// `data` in a new memfd of `size` bytes, wrapped by GStreamer's DMA-BUF
/// allocator (which takes the fd).
fn dmabuf_memory(data: &[u8], size: usize) -> gst::Memory {
    dmabuf_memory_claiming(data, size, size)
}

/// `data` in a new memfd of `size` bytes, wrapped as a DMA-BUF memory of
/// `claimed` bytes (more than the fd has: a producer's wrong size).
fn dmabuf_memory_claiming(data: &[u8], size: usize, claimed: usize) -> gst::Memory {
    // SAFETY: memfd_create with a valid C string; the fd it returns is ours.
    let fd = unsafe { libc::memfd_create(c"wgnn-dmabuf-test".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh fd nobody else owns.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.set_len(size as u64).unwrap();
    file.write_all(&data[..data.len().min(size)]).unwrap();
    let allocator = gst_allocators::DmaBufAllocator::new();
    // SAFETY: the allocator takes the fd, which nothing else uses.
    let memory = unsafe { allocator.alloc_dmabuf(OwnedFd::from(file), claimed) }.unwrap();
    assert!(memory.is_memory_type::<gst_allocators::DmaBufMemory>());
    memory
}

/// The caps of `frame` in the given form.
fn caps_for(frame: &Frame, form: Caps) -> gst::Caps {
    let format = frame.format.to_str();
    let text = match form {
        Caps::Plain => format!("video/x-raw,format={format}"),
        Caps::Dmabuf => format!("video/x-raw(memory:DMABuf),format={format}"),
        Caps::DmaDrm(drm) => {
            format!("video/x-raw(memory:DMABuf),format=DMA_DRM,drm-format=(string){drm}")
        }
    };
    format!(
        "{text},width={},height={},framerate=30/1",
        frame.width, frame.height
    )
    .parse()
    .unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Caps {
    Plain,
    Dmabuf,
    DmaDrm(&'static str),
}

/// What a run gave: the output frames' pixels, the named element's
/// counters, and the bus error, if any.
struct Run {
    pixels: Vec<Vec<u8>>,
    frames: u64,
    uploaded: u64,
    imported_frames: u64,
    imported: u64,
    error: Option<String>,
    /// How the element's device imports DMA-BUFs.
    support: Support,
}

/// `appsrc ! middle ! appsink` with `buffers` pushed under `caps`; the
/// counters are those of the element called `counted` in `middle`.
fn run(caps: gst::Caps, middle: &str, counted: &str, buffers: Vec<gst::Buffer>) -> Run {
    let pipeline = gst::parse::launch(&format!(
        "appsrc name=src format=time ! {middle} ! appsink name=sink sync=false"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    // The counters are the element's own: the device may be shared.
    pipeline.set_context(&crate::common::harness::shared_device());
    let src = pipeline
        .by_name("src")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    src.set_caps(Some(&caps));
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    for (i, mut b) in buffers.into_iter().enumerate() {
        let r = b.get_mut().unwrap();
        r.set_pts(gst::ClockTime::from_mseconds(i as u64 * 33));
        r.set_duration(gst::ClockTime::from_mseconds(33));
        if src.push_buffer(b).is_err() {
            break;
        }
    }
    let _ = src.end_of_stream();
    let mut pixels = Vec::new();
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
        let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
        let buffer = sample.buffer().unwrap();
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).unwrap();
        let mut out = Vec::new();
        for p in 0..frame.n_planes() {
            let finfo = info.format_info();
            let rows = finfo.scale_height(p as u8, info.height()) as usize;
            let row = finfo.scale_width(p as u8, info.width()) as usize
                * finfo.pixel_stride()[p as usize] as usize;
            let stride = frame.plane_stride()[p as usize] as usize;
            let data = frame.plane_data(p).unwrap();
            for r in 0..rows {
                out.extend_from_slice(&data[r * stride..r * stride + row]);
            }
        }
        pixels.push(out);
    }
    let error = pipeline
        .bus()
        .unwrap()
        .pop_filtered(&[gst::MessageType::Error])
        .map(|msg| match msg.view() {
            gst::MessageView::Error(e) => format!("{} ({:?})", e.error(), e.debug()),
            _ => unreachable!(),
        });
    let e = pipeline.by_name(counted).unwrap();
    let support = e
        .context(wgnn::gst::device::CONTEXT_TYPE)
        .and_then(|c| wgnn::gst::device::gpu_from(&c))
        .map(|gpu| dmabuf::support(&gpu))
        .unwrap_or_else(|| Support::None(format!("{counted} holds no wgnn device")));
    let run = Run {
        support,
        pixels,
        frames: e.property("frames"),
        uploaded: e.property("bytes-uploaded"),
        imported_frames: e.property("frames-imported"),
        imported: e.property("bytes-imported"),
        error,
    };
    pipeline.set_state(gst::State::Null).unwrap();
    run
}

impl Run {
    /// Whether the element's device imports DMA-BUFs (linear ones at least).
    fn imports(&self) -> bool {
        let imports = !matches!(self.support, Support::None(_));
        assert!(
            imports || !DMABUF_IMPORT_EXPECTED,
            "this binary runs on a device that imports DMA-BUFs, but the element's \
             cannot: {}",
            self.support
        );
        imports
    }
}

/// The counters say the path the device can take: every frame imported
/// and nothing uploaded, or every frame uploaded (stride x rows per plane)
/// and nothing imported.
fn assert_path(run: &Run, frame: &Frame, n: u64, what: &str) {
    assert_eq!(run.frames, n, "{what}");
    if run.imports() {
        assert_eq!(run.uploaded, 0, "{what}: an imported frame uploads nothing");
        assert_eq!(run.imported_frames, n, "{what}");
        assert_eq!(run.imported, n * frame.upload_bytes(), "{what}");
    } else {
        assert_eq!(run.uploaded, n * frame.upload_bytes(), "{what}");
        assert_eq!(run.imported_frames, 0, "{what}");
        assert_eq!(run.imported, 0, "{what}");
    }
}

#[test]
fn dmabuf_frames_come_back_bit_exact_in_every_layout_and_caps_form() {
    init();
    let cases: [(&str, u32, u32, usize, &str); 4] = [
        ("RGBA", 33, 17, 0, "AB24"),
        ("RGBA", 20, 9, 12, "AB24"),
        ("NV12", 33, 17, 7, "NV12"),
        ("I420", 35, 19, 5, "YU12"),
    ];
    let mut seed = 1;
    for (format, w, h, pad, drm) in cases {
        for layout in [
            Layout::OneMemory { gap: 0 },
            Layout::OneMemory { gap: 64 },
            Layout::MemoryPerPlane { skip: 16 },
        ] {
            for form in [Caps::Plain, Caps::Dmabuf, Caps::DmaDrm(drm)] {
                let what = format!("{format} {w}x{h} pad {pad}, {layout:?}, {form:?} caps");
                let frames: Vec<Frame> = (0..3)
                    .map(|_| {
                        seed += 1;
                        Frame::random(format, w, h, pad, seed)
                    })
                    .collect();
                let buffers = frames.iter().map(|f| f.dmabuf_buffer(layout)).collect();
                let out = run(
                    caps_for(&frames[0], form),
                    "wgnnupload name=dmaup ! wgnndownload",
                    "dmaup",
                    buffers,
                );
                assert_eq!(out.error, None, "{what}");
                assert_eq!(out.pixels.len(), 3, "{what}");
                for (f, px) in frames.iter().zip(&out.pixels) {
                    assert!(*px == f.pixels(), "{what}: pixels differ");
                }
                assert_path(&out, &frames[0], 3, &what);
            }
        }
    }
}

/// A processing element reads DMA-BUF input as it reads system memory: the
/// overlay's RGBA output of an NV12 or I420 DMA-BUF frame is the one it
/// gives for the same frame in system memory.
#[test]
fn processing_elements_take_dmabuf_input_like_system_memory() {
    init();
    for (format, drm) in [("NV12", "NV12"), ("I420", "YU12"), ("RGBA", "AB24")] {
        let frame = Frame::random(format, 31, 15, 3, 99);
        let middle = "wgnnoverlay name=dmaov ! video/x-raw,format=RGBA";
        let system = run(
            caps_for(&frame, Caps::Plain),
            middle,
            "dmaov",
            vec![frame.system_buffer()],
        );
        assert_eq!(system.error, None, "{format}");
        assert_eq!(system.uploaded, frame.upload_bytes(), "{format}");
        for (layout, form) in [
            (Layout::OneMemory { gap: 32 }, Caps::Dmabuf),
            (Layout::MemoryPerPlane { skip: 8 }, Caps::DmaDrm(drm)),
            (Layout::OneMemory { gap: 0 }, Caps::Plain),
        ] {
            let what = format!("{format} {layout:?} {form:?}");
            let out = run(
                caps_for(&frame, form),
                middle,
                "dmaov",
                vec![frame.dmabuf_buffer(layout)],
            );
            assert_eq!(out.error, None, "{what}");
            assert_eq!(out.pixels.len(), 1, "{what}");
            assert!(
                out.pixels == system.pixels,
                "{what}: differs from the system-memory path"
            );
            assert_path(&out, &frame, 1, &what);
        }
    }
}

/// The whole zero-copy path of a segmentation element: a DMA-BUF frame
/// imported (on a device that can), tensorized, run through the selfie
/// model and composited with its blurred background, gives the pixels the
/// same frame gives from system memory, with nothing uploaded.
#[test]
fn segmentation_of_dmabuf_frames_matches_system_memory() {
    init();
    for (format, layout, form) in [
        (
            "NV12",
            Layout::MemoryPerPlane { skip: 8 },
            Caps::DmaDrm("NV12"),
        ),
        ("RGBA", Layout::OneMemory { gap: 0 }, Caps::Plain),
    ] {
        let frame = Frame::random(format, 33, 17, 5, 7);
        let middle = "wgnnsegment device=gpu name=dmaseg effect=blur blur-strength=3 \
                      ! video/x-raw,format=RGBA";
        let system = run(
            caps_for(&frame, Caps::Plain),
            middle,
            "dmaseg",
            vec![frame.system_buffer()],
        );
        assert_eq!(system.error, None, "{format}");
        assert_eq!(system.pixels.len(), 1, "{format}");
        let what = format!("{format} {layout:?} {form:?}");
        let out = run(
            caps_for(&frame, form),
            middle,
            "dmaseg",
            vec![frame.dmabuf_buffer(layout)],
        );
        assert_eq!(out.error, None, "{what}");
        assert!(
            out.pixels == system.pixels,
            "{what}: differs from the system-memory path"
        );
        assert_path(&out, &frame, 1, &what);
    }
}

/// Where the device cannot import, the element says why once, not per
/// frame; where it can, it says nothing of the kind.
#[test]
fn the_upload_fallback_is_explained_once() {
    init();
    let log = LogCapture::start("wgnnupload", gst::DebugLevel::Info, "wgnnupload", "dmaonce");
    let frame = Frame::random("NV12", 16, 8, 0, 5);
    let buffers = (0..4)
        .map(|_| frame.dmabuf_buffer(Layout::OneMemory { gap: 0 }))
        .collect();
    let out = run(
        caps_for(&frame, Caps::Dmabuf),
        "wgnnupload name=dmaonce ! wgnndownload",
        "dmaonce",
        buffers,
    );
    assert_eq!(out.error, None);
    assert_path(&out, &frame, 4, "NV12 16x8");
    let said: Vec<String> = log
        .lines_at(gst::DebugLevel::Info)
        .into_iter()
        .filter(|l| l.contains("DMA-BUF frames are uploaded"))
        .collect();
    if out.imports() {
        assert!(said.is_empty(), "{said:?}");
    } else {
        assert_eq!(
            said.len(),
            1,
            "one INFO line per element, not per frame: {said:?}"
        );
        assert!(said[0].contains(": "), "the line says why: {}", said[0]);
    }
}

/// One frame under `caps` through wgnnupload; the error it posts.
fn upload_error(caps: gst::Caps, buffer: gst::Buffer, name: &str) -> String {
    let out = run(
        caps,
        &format!("wgnnupload name={name} ! wgnndownload"),
        name,
        vec![buffer],
    );
    assert!(out.pixels.is_empty(), "{name}: a bad frame came out");
    out.error
        .unwrap_or_else(|| panic!("{name}: no error on the bus"))
}

#[test]
fn a_dmabuf_smaller_than_the_caps_say_is_an_error() {
    init();
    let frame = Frame::random("RGBA", 16, 8, 0, 7);
    for (form, name) in [(Caps::Dmabuf, "dmashort1"), (Caps::Plain, "dmashort2")] {
        // Half the frame's bytes in the fd, and no VideoMeta: the caps'
        // layout says 512 bytes.
        let (data, _) = frame.packed(0);
        let mut b = gst::Buffer::new();
        b.get_mut()
            .unwrap()
            .append_memory(dmabuf_memory(&data, data.len() / 2));
        let e = upload_error(caps_for(&frame, form), b, name);
        assert!(e.contains("needs bytes up to 512"), "{e}");
        assert!(e.contains("DMA-BUF"), "{e}");
    }
}

/// A memory that says it is larger than its fd would kill the process
/// when mapped and read (SIGBUS): it is refused before anything maps it.
#[test]
fn a_dmabuf_memory_larger_than_its_fd_is_an_error_not_a_crash() {
    init();
    let frame = Frame::random("RGBA", 16, 8, 0, 11);
    let (data, _) = frame.packed(0);
    for (form, name) in [(Caps::Dmabuf, "dmalie1"), (Caps::Plain, "dmalie2")] {
        let mut b = gst::Buffer::new();
        b.get_mut()
            .unwrap()
            .append_memory(dmabuf_memory_claiming(&data, 100, data.len()));
        let e = upload_error(caps_for(&frame, form), b, name);
        assert!(
            e.contains("DMA-BUF memory 0 says it holds bytes 0..512 of its fd, but the fd has 100"),
            "{e}"
        );
    }
}

/// The same on the CPU, which maps DMA-BUFs as plain memory.
#[test]
fn the_cpu_refuses_a_dmabuf_memory_larger_than_its_fd_too() {
    init();
    let frame = Frame::random("RGBA", 16, 8, 0, 13);
    let (data, _) = frame.packed(0);
    let mut b = gst::Buffer::new();
    b.get_mut()
        .unwrap()
        .append_memory(dmabuf_memory_claiming(&data, 64, data.len()));
    let model = crate::common::root().join("assets/models/esrgan-slim/x2/model.json");
    let out = run(
        caps_for(&frame, Caps::Dmabuf),
        &format!(
            "wgnninfer device=cpu name=dmacpulie model={}",
            model.display()
        ),
        "dmacpulie",
        vec![b],
    );
    assert!(out.pixels.is_empty());
    let e = out.error.expect("an error on the bus");
    assert!(e.contains("but the fd has 64"), "{e}");
}

#[test]
fn a_stride_narrower_than_a_row_is_an_error() {
    init();
    let mut frame = Frame::random("RGBA", 16, 8, 0, 8);
    // 60-byte rows of a 64-byte-wide frame: the VideoMeta lies.
    frame.strides = vec![60];
    let b = frame.dmabuf_buffer(Layout::OneMemory { gap: 0 });
    let e = upload_error(caps_for(&frame, Caps::Dmabuf), b, "dmanarrow");
    assert!(e.contains("stride 60 is shorter than a row"), "{e}");
}

/// A tiled layout (Intel's Y-tiling modifier) cannot be read as rows: where
/// the device has no texture import it is an error, never a frame of
/// garbage; with texture import, a memfd of random bytes may import (the
/// driver cannot tell), and then the frame is the driver's to read.
#[test]
fn a_tiled_dmabuf_that_cannot_be_imported_is_an_error_not_garbage() {
    init();
    let frame = Frame::random("NV12", 16, 8, 0, 9);
    let b = frame.dmabuf_buffer(Layout::OneMemory { gap: 0 });
    let out = run(
        caps_for(&frame, Caps::DmaDrm("NV12:0x0100000000000002")),
        "wgnnupload name=dmatiled ! wgnndownload",
        "dmatiled",
        vec![b],
    );
    if out.support == Support::Texture && out.error.is_none() {
        assert_eq!(out.imported_frames, 1);
        return;
    }
    assert!(out.pixels.is_empty(), "a tiled frame came out as rows");
    let e = out.error.expect("an error on the bus");
    assert!(
        e.contains("DRM modifier 0x0100000000000002 is not linear"),
        "{e}"
    );
}

#[test]
fn an_unknown_drm_fourcc_is_refused_by_name() {
    init();
    let log = LogCapture::start(
        "wgnnupload",
        gst::DebugLevel::Error,
        "wgnnupload",
        "dmap010",
    );
    let frame = Frame::random("NV12", 16, 8, 0, 10);
    let b = frame.dmabuf_buffer(Layout::OneMemory { gap: 0 });
    let caps = caps_for(&frame, Caps::DmaDrm("P010"));
    let e = upload_error(caps, b, "dmap010");
    // The bus error says why (it was a bare not-negotiated before the
    // upload's refusals went to the bus).
    assert!(e.contains("DRM fourcc P010 is not one wgnn reads"), "{e}");
    let said = log.lines();
    assert!(
        said.iter()
            .any(|l| l.contains("DRM fourcc P010 is not one wgnn reads")),
        "{said:?}"
    );
}

/// The memories a pad's caps offer, in order, repeats dropped.
fn memory_order(caps: &gst::Caps) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (s, f) in caps.iter_with_features() {
        let kind = if f.contains("memory:WgpuTexture") {
            "texture"
        } else if f.contains("memory:DMABuf") {
            if s.get::<&str>("format").is_ok_and(|f| f == "DMA_DRM") {
                "dma-drm"
            } else {
                "dmabuf"
            }
        } else {
            "system"
        };
        if out.last() != Some(&kind) {
            out.push(kind);
        }
    }
    out
}

/// Where upstream lets the element choose, it asks for texture memory
/// first, then DMA-BUFs (1.22's form, then 1.24's), then system memory.
#[test]
fn sink_pads_prefer_textures_then_dmabufs_then_system_memory() {
    init();
    let query = |factory: &str| {
        let e = gst::ElementFactory::make(factory).build().unwrap();
        memory_order(&e.static_pad("sink").unwrap().query_caps(None))
    };
    assert_eq!(query("wgnnupload"), ["dmabuf", "dma-drm", "system"]);
    for factory in [
        "wgnnsegment",
        "wgnnsuperres",
        "wgnnoverlay",
        "wgnninfer",
        "wgnndetect",
        "wgnnclassify",
        "wgnnsink",
    ] {
        assert_eq!(
            query(factory),
            ["texture", "dmabuf", "dma-drm", "system"],
            "{factory}"
        );
    }
}

/// The model outputs `wgnninfer` (on `device`) attaches to `buffer` under
/// `caps`, and its counters.
fn infer(device: &str, caps: gst::Caps, buffer: gst::Buffer) -> (Vec<f32>, u64, u64) {
    let model = crate::common::root().join("assets/models/esrgan-slim/x2/model.json");
    let mut h = crate::common::harness::harness_on_shared_device(&format!(
        "wgnninfer device={device} name=dmainfer model={}",
        model.display()
    ));
    h.set_src_caps(caps);
    let out = h.push_and_pull(buffer).unwrap();
    let outputs = wgnn::gst::tensor_meta::outputs_of(&out).unwrap();
    let e = crate::common::harness::element(&h, "dmainfer");
    (
        outputs.read_f32(0).unwrap(),
        e.property("bytes-uploaded"),
        e.property("frames-imported"),
    )
}

/// A pass-through element reads a DMA-BUF frame as it reads the same frame
/// in system memory, on the GPU (imported or uploaded) and on the CPU
/// (mapped: a linear DMA-BUF is plain memory there).
#[test]
fn inference_on_dmabuf_frames_matches_system_memory_on_gpu_and_cpu() {
    init();
    let frame = Frame::random("NV12", 13, 9, 3, 12);
    for device in ["gpu", "cpu"] {
        let (want, ..) = infer(device, caps_for(&frame, Caps::Plain), frame.system_buffer());
        for (layout, form) in [
            (Layout::OneMemory { gap: 16 }, Caps::Dmabuf),
            (Layout::MemoryPerPlane { skip: 8 }, Caps::DmaDrm("NV12")),
        ] {
            let what = format!("device={device} {layout:?} {form:?}");
            let (got, uploaded, imported) =
                infer(device, caps_for(&frame, form), frame.dmabuf_buffer(layout));
            assert!(got == want, "{what}: outputs differ from system memory");
            if device == "cpu" {
                assert_eq!((uploaded, imported), (0, 0), "{what}: the CPU maps");
            } else {
                let path = (uploaded, imported);
                if DMABUF_IMPORT_EXPECTED {
                    assert_eq!(path, (0, 1), "{what}: imported, nothing uploaded");
                }
                assert!(
                    path == (frame.upload_bytes(), 0) || path == (0, 1),
                    "{what}: one upload or one import, got {path:?}"
                );
            }
        }
    }
}
