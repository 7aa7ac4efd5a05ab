//! `wgnn-bench queue-overlap`: whether a 1080p frame's upload copy can run
//! beside the previous frame's compute work on wgpu's one queue.
//!
//! The zero-copy pipeline's wall time is its GPU work plus the frame's
//! buffer -> texture copy. The copy could hide behind frame N's work if it
//! were queued where no barrier waits on it: after a first pass that reads
//! frame N's texture (so the barrier making that texture readable is
//! already behind) and before the rest of frame N's dispatches, whose
//! barriers only wait for compute. This measures it with stand-in work (no
//! model): a pass reading the frame texture, then a chain of dependent
//! dispatches, on three rotating textures and staging buffers, and prints
//! wall ms per frame for the work alone, the copy alone, the copy queued
//! before the work (serial) and the copy of frame N + 1 queued between
//! frame N's first pass and its chain (ahead). If `ahead` is no faster than
//! `serial`, the copy does not overlap on this adapter and driver.

use std::collections::VecDeque;
use std::time::Instant;

use std::process::ExitCode;

use wgnn::gpu::Gpu;

use crate::cli::{open_gpu, verdict};
use crate::stamps::{encoder, median_min, submit, Stamps};

/// Elements of the chain's buffers (a 256 x 256 x 16 float32 tensor, the
/// size of a small model's activations).
const ELEMENTS: u32 = 256 * 256 * 16;
/// Frames kept queued before the oldest is waited for.
const IN_FLIGHT: usize = 2;
/// Rotating frame textures and staging buffers.
const RING: usize = 3;

/// Whether a frame's upload copy overlaps the previous frame's compute
/// work on wgpu's one queue when queued between that frame's first pass
/// and the rest (stand-in work, wall ms per frame).
#[derive(clap::Args)]
pub struct Args {
    /// Frames per measured order.
    #[arg(long, default_value_t = 300)]
    frames: u32,
    #[arg(long, default_value_t = 1920, value_parser = clap::value_parser!(u32).range(1..=8192))]
    width: u32,
    #[arg(long, default_value_t = 1080, value_parser = clap::value_parser!(u32).range(1..=8192))]
    height: u32,
    /// Multiply-adds per element in each dispatch of the stand-in work.
    #[arg(long, default_value_t = 10)]
    work: u32,
    /// Dependent dispatches of the stand-in work per frame.
    #[arg(long, default_value_t = 60)]
    dispatches: u32,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let gpu = match open_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let options = Options {
            width: self.width,
            height: self.height,
            frames: self.frames.max(1),
            work: self.work,
            dispatches: self.dispatches.max(1),
        };
        verdict(measure(&gpu, &options).map(|()| true))
    }
}

struct Options {
    width: u32,
    height: u32,
    frames: u32,
    /// Multiply-adds per element in each chain dispatch.
    work: u32,
    dispatches: u32,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Work,
    Copy,
    Serial,
    Ahead,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Work => "work only",
            Mode::Copy => "copy only",
            Mode::Serial => "serial",
            Mode::Ahead => "ahead",
        }
    }
}

struct Rig<'a> {
    gpu: &'a Gpu,
    staging: Vec<wgpu::Buffer>,
    frames: Vec<wgpu::Texture>,
    first: wgpu::ComputePipeline,
    first_groups: Vec<wgpu::BindGroup>,
    chain: wgpu::ComputePipeline,
    chain_groups: [wgpu::BindGroup; 2],
    size: wgpu::Extent3d,
    dispatches: u32,
}

fn pipeline(gpu: &Gpu, source: String) -> wgnn::Result<wgpu::ComputePipeline> {
    let device = gpu.device();
    gpu.scoped("queue-overlap pipeline", || {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("wgnn-bench queue-overlap"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("wgnn-bench queue-overlap"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        })
    })
}

fn groups(n: u32) -> u32 {
    n.div_ceil(256)
}

/// The frame's size, and its RGBA rows' length in a staging buffer.
fn frame_extent(o: &Options) -> (wgpu::Extent3d, u32) {
    let size = wgpu::Extent3d {
        width: o.width,
        height: o.height,
        depth_or_array_layers: 1,
    };
    let row = (4 * o.width).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    (size, row)
}

impl<'a> Rig<'a> {
    fn new(gpu: &'a Gpu, o: &Options) -> wgnn::Result<Rig<'a>> {
        let device = gpu.device();
        let (size, row) = frame_extent(o);
        let staging = (0..RING)
            .map(|_| {
                // Host-visible (MAP_WRITE), as the upload ring's staging
                // buffers are; what they hold does not matter here, so they
                // are never mapped (no transfer outside gpu::transfer).
                gpu.scoped("queue-overlap staging", || {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("wgnn-bench queue-overlap staging"),
                        size: u64::from(row) * u64::from(o.height),
                        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    })
                })
            })
            .collect::<wgnn::Result<Vec<_>>>()?;
        let frames = (0..RING)
            .map(|_| {
                gpu.scoped("queue-overlap frame", || {
                    device.create_texture(&wgpu::TextureDescriptor {
                        label: Some("wgnn-bench queue-overlap frame"),
                        size,
                        mip_level_count: 1,
                        sample_count: 1,
                        dimension: wgpu::TextureDimension::D2,
                        format: wgpu::TextureFormat::Rgba8Unorm,
                        usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::TEXTURE_BINDING,
                        view_formats: &[],
                    })
                })
            })
            .collect::<wgnn::Result<Vec<_>>>()?;
        let tensor = |label: &str| {
            gpu.scoped(label, || {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: u64::from(ELEMENTS) * 4,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })
        };
        let (a, b) = (tensor("queue-overlap a")?, tensor("queue-overlap b")?);
        // The first pass samples the frame into `a`, as a tensorizer would.
        let first = pipeline(
            gpu,
            format!(
                "@group(0) @binding(0) var frame: texture_2d<f32>;\n\
                 @group(0) @binding(1) var<storage, read_write> o: array<f32>;\n\
                 @compute @workgroup_size(256)\n\
                 fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n\
                 \x20   let i = g.x;\n\
                 \x20   if i >= {ELEMENTS}u {{ return; }}\n\
                 \x20   let p = i / 16u;\n\
                 \x20   let d = textureDimensions(frame);\n\
                 \x20   let at = vec2<u32>((p % 256u) * d.x / 256u, (p / 256u) * d.y / 256u);\n\
                 \x20   o[i] = textureLoad(frame, at, 0)[i % 4u];\n\
                 }}\n"
            ),
        )?;
        // Each chain dispatch reads what the one before wrote.
        let chain = pipeline(
            gpu,
            format!(
                "@group(0) @binding(0) var<storage, read> s: array<f32>;\n\
                 @group(0) @binding(1) var<storage, read_write> o: array<f32>;\n\
                 @compute @workgroup_size(256)\n\
                 fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n\
                 \x20   let i = g.x;\n\
                 \x20   if i >= {ELEMENTS}u {{ return; }}\n\
                 \x20   var v = s[i];\n\
                 \x20   for (var k = 0u; k < {}u; k++) {{ v = v * 0.9999 + 0.5; }}\n\
                 \x20   o[i] = v;\n\
                 }}\n",
                o.work
            ),
        )?;
        let bind = |p: &wgpu::ComputePipeline, entries: &[wgpu::BindGroupEntry]| {
            gpu.scoped("queue-overlap bind group", || {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &p.get_bind_group_layout(0),
                    entries,
                })
            })
        };
        let first_groups = frames
            .iter()
            .map(|t| {
                let view = t.create_view(&Default::default());
                bind(
                    &first,
                    &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::TextureView(&view),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: a.as_entire_binding(),
                        },
                    ],
                )
            })
            .collect::<wgnn::Result<Vec<_>>>()?;
        let pair = |s: &wgpu::Buffer, o: &wgpu::Buffer| {
            bind(
                &chain,
                &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: s.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: o.as_entire_binding(),
                    },
                ],
            )
        };
        let chain_groups = [pair(&a, &b)?, pair(&b, &a)?];
        Ok(Rig {
            gpu,
            staging,
            frames,
            first,
            first_groups,
            chain,
            chain_groups,
            size,
            dispatches: o.dispatches,
        })
    }

    fn submit(&self, encoder: wgpu::CommandEncoder) -> wgnn::Result<wgpu::SubmissionIndex> {
        self.gpu.submit("queue-overlap submit", [encoder.finish()])
    }

    fn encoder(&self) -> wgpu::CommandEncoder {
        self.gpu
            .device()
            .create_command_encoder(&Default::default())
    }

    /// Frame `n`'s copy from its staging buffer into its texture.
    fn copy(&self, n: usize) -> wgnn::Result<wgpu::SubmissionIndex> {
        let i = n % RING;
        let row = (4 * self.size.width).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let mut e = self.encoder();
        e.copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: &self.staging[i],
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: Some(self.size.height),
                },
            },
            wgpu::TexelCopyTextureInfo {
                texture: &self.frames[i],
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            self.size,
        );
        self.submit(e)
    }

    /// Frame `n`'s first pass, which reads its texture.
    fn first(&self, n: usize) -> wgnn::Result<wgpu::SubmissionIndex> {
        let mut e = self.encoder();
        {
            let mut p = e.begin_compute_pass(&Default::default());
            p.set_pipeline(&self.first);
            p.set_bind_group(0, &self.first_groups[n % RING], &[]);
            p.dispatch_workgroups(groups(ELEMENTS), 1, 1);
        }
        self.submit(e)
    }

    /// The rest of a frame's work: dependent dispatches.
    fn chain(&self) -> wgnn::Result<wgpu::SubmissionIndex> {
        let mut e = self.encoder();
        {
            let mut p = e.begin_compute_pass(&Default::default());
            p.set_pipeline(&self.chain);
            for k in 0..self.dispatches as usize {
                p.set_bind_group(0, &self.chain_groups[k % 2], &[]);
                p.dispatch_workgroups(groups(ELEMENTS), 1, 1);
            }
        }
        self.submit(e)
    }

    fn frame(&self, mode: Mode, n: usize) -> wgnn::Result<wgpu::SubmissionIndex> {
        match mode {
            Mode::Work => {
                self.first(n)?;
                self.chain()
            }
            Mode::Copy => self.copy(n),
            Mode::Serial => {
                self.copy(n)?;
                self.first(n)?;
                self.chain()
            }
            Mode::Ahead => {
                self.first(n)?;
                self.copy(n + 1)?;
                self.chain()
            }
        }
    }

    /// Wall ms per frame over `frames` frames of `mode`.
    fn run(&self, mode: Mode, frames: u32) -> wgnn::Result<f64> {
        let device = self.gpu.device();
        if mode == Mode::Ahead {
            self.copy(0)?;
        }
        self.gpu.wait_idle()?;
        let t = Instant::now();
        let mut pending = VecDeque::new();
        for n in 0..frames as usize {
            pending.push_back(self.frame(mode, n)?);
            if pending.len() > IN_FLIGHT {
                if let Some(oldest) = pending.pop_front() {
                    device
                        .poll(wgpu::PollType::Wait {
                            submission_index: Some(oldest),
                            timeout: None,
                        })
                        .map_err(|e| wgnn::Error::DeviceFailed(e.to_string()))?;
                }
            }
        }
        self.gpu.wait_idle()?;
        Ok(t.elapsed().as_secs_f64() * 1e3 / f64::from(frames))
    }
}

fn measure(gpu: &Gpu, o: &Options) -> wgnn::Result<()> {
    let rig = Rig::new(gpu, o)?;
    println!(
        "{}: {}x{} RGBA frames, {} frames per order, {} dispatches of {} multiply-adds per element",
        gpu.info().name,
        o.width,
        o.height,
        o.frames,
        o.dispatches,
        o.work
    );
    println!("{:<10} {:>12}", "order", "wall ms");
    let mut ms = Vec::new();
    for mode in [Mode::Work, Mode::Copy, Mode::Serial, Mode::Ahead] {
        // One untimed round first (pipelines, first touches).
        rig.run(mode, o.frames.min(10))?;
        let t = rig.run(mode, o.frames)?;
        println!("{:<10} {t:>12.3}", mode.name());
        ms.push(t);
    }
    let (copy, serial, ahead) = (ms[1], ms[2], ms[3]);
    println!(
        "ahead against serial: {:.3} ms per frame saved; the copy alone takes {copy:.3} ms",
        serial - ahead
    );
    copy_sources(gpu, o)
}

/// Records one way of moving a frame into a texture.
type Encode<'a> = dyn Fn(&mut wgpu::CommandEncoder) + 'a;

/// Timed copies per source in [`copy_sources`].
const COPY_RUNS: u32 = 50;

/// The GPU time of one frame's way into a texture, by where the bytes lie
/// and who moves them: what the upload ring's copy costs the queue, and
/// whether another source or a compute pass would cost less. Timestamps
/// before and after each copy, one copy per submission, medians of
/// [`COPY_RUNS`].
fn copy_sources(gpu: &Gpu, o: &Options) -> wgnn::Result<()> {
    let device = gpu.device();
    let (size, row) = frame_extent(o);
    let bytes = u64::from(row) * u64::from(o.height);
    // Where the upload ring's buffers lie (MAP_WRITE: host-visible memory),
    // usable as storage as the ring's are where the device unpacks uploads.
    let unpacks = gpu.has(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    let (mapped, local, texture) = copy_targets(gpu, o, unpacks)?;
    // The same unpack by a compute pass: one invocation per texel.
    let unpack = pipeline(gpu, unpack_shader(o, row))?;
    let view = texture.create_view(&Default::default());
    let unpack_group = |src: &wgpu::Buffer| {
        gpu.scoped("copy-sources bind group", || {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &unpack.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: src.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(&view),
                    },
                ],
            })
        })
    };
    let local_group = unpack_group(&local)?;
    let mapped_group = match unpacks {
        true => Some(unpack_group(&mapped)?),
        false => None,
    };
    let unpack_from = |e: &mut wgpu::CommandEncoder, group: &wgpu::BindGroup| {
        let mut p = e.begin_compute_pass(&Default::default());
        p.set_pipeline(&unpack);
        p.set_bind_group(0, group, &[]);
        p.dispatch_workgroups(o.width.div_ceil(64), o.height.div_ceil(4), 1);
    };
    let to_texture = |e: &mut wgpu::CommandEncoder, src: &wgpu::Buffer| {
        e.copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: src,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: Some(o.height),
                },
            },
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            size,
        )
    };
    let mut variants: Vec<(&str, Box<Encode>)> = vec![
        (
            "copy from mapped (upload ring)",
            Box::new(|e| to_texture(e, &mapped)),
        ),
        (
            "copy from device-local",
            Box::new(|e| to_texture(e, &local)),
        ),
        (
            "compute unpack from device-local",
            Box::new(|e| unpack_from(e, &local_group)),
        ),
        (
            "buffer copy mapped -> device-local",
            Box::new(|e| e.copy_buffer_to_buffer(&mapped, 0, &local, 0, bytes)),
        ),
    ];
    // What uploads do where the device allows (`WGNN_UPLOAD_UNPACK`).
    if let Some(group) = &mapped_group {
        variants.push((
            "compute unpack from mapped (ring)",
            Box::new(move |e| unpack_from(e, group)),
        ));
    }
    time_sources(gpu, o, bytes, variants)
}

/// [`copy_sources`]' frame in host-visible memory (a storage buffer too
/// where `unpacks`), in device-local memory, and the texture it goes to.
fn copy_targets(
    gpu: &Gpu,
    o: &Options,
    unpacks: bool,
) -> wgnn::Result<(wgpu::Buffer, wgpu::Buffer, wgpu::Texture)> {
    let device = gpu.device();
    let (size, row) = frame_extent(o);
    let buffer = |label: &str, usage| {
        gpu.scoped(label, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: u64::from(row) * u64::from(o.height),
                usage,
                mapped_at_creation: false,
            })
        })
    };
    let mapped = buffer(
        "copy-sources mapped",
        wgpu::BufferUsages::MAP_WRITE
            | wgpu::BufferUsages::COPY_SRC
            | match unpacks {
                true => wgpu::BufferUsages::STORAGE,
                false => wgpu::BufferUsages::empty(),
            },
    )?;
    let local = buffer(
        "copy-sources device-local",
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    )?;
    let texture = gpu.scoped("copy-sources frame", || {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some("copy-sources frame"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::STORAGE_BINDING,
            view_formats: &[],
        })
    })?;
    Ok((mapped, local, texture))
}

/// The compute pass that unpacks a frame of `row`-byte rows from a buffer
/// into the texture.
fn unpack_shader(o: &Options, row: u32) -> String {
    format!(
        "@group(0) @binding(0) var<storage, read> src: array<u32>;\n\
         @group(0) @binding(1) var dst: texture_storage_2d<rgba8unorm, write>;\n\
         @compute @workgroup_size(64, 4)\n\
         fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n\
         \x20   if g.x >= {w}u || g.y >= {h}u {{ return; }}\n\
         \x20   let v = src[g.y * {words}u + g.x];\n\
         \x20   textureStore(dst, g.xy, unpack4x8unorm(v));\n\
         }}\n",
        w = o.width,
        h = o.height,
        words = row / 4
    )
}

/// Times each way of moving the frame's `bytes` and prints a row for it.
fn time_sources(
    gpu: &Gpu,
    o: &Options,
    bytes: u64,
    variants: Vec<(&str, Box<Encode>)>,
) -> wgnn::Result<()> {
    let stamps = Stamps::new(gpu, COPY_RUNS)?;
    let mb = bytes as f64 / 1e6;
    println!(
        "{}x{} RGBA frame ({mb:.1} MB) into a texture, GPU ms (timestamps)",
        o.width, o.height
    );
    println!(
        "{:<34} {:>9} {:>9} {:>9}",
        "source", "median", "min", "GB/s"
    );
    for (name, encode) in variants {
        for _ in 0..2 {
            for i in 0..COPY_RUNS {
                let mut e = encoder(gpu);
                stamps.begin(&mut e, i);
                encode(&mut e);
                stamps.end(&mut e, i);
                submit(gpu, e)?;
            }
        }
        // The second round's times: the first warms up.
        let (median, min) = median_min(&stamps.read_ms()?);
        println!("{name:<34} {median:>9.4} {min:>9.4} {:>9.1}", mb / median);
    }
    Ok(())
}
