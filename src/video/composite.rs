//! Segmentation output -> picture: a person mask (model output, any size)
//! combined with the frame it was computed from, at the frame's size.

use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::frame::GpuFrame;
use super::frame_read::{frame_bind_group, textures_bind_group, ColorSpec, Reader};
use super::pipelines::{build, constants_key, groups_2d, PipelineCache};
use super::tensor_buffer::{squeezed, TensorBuffer};
use crate::ml::DataType;

/// Largest blur strength (Gaussian sigma in frame pixels); the kernel reaches
/// 3 sigma each way, so this bounds the taps per pixel at 2 * 192 + 1.
pub const MAX_BLUR_STRENGTH: f32 = 64.0;

/// What replaces the background.
#[derive(Clone, Debug)]
pub enum Background {
    /// RGBA; an alpha below 255 makes the background see-through.
    Color([u8; 4]),
    /// Any float-sampleable texture with TEXTURE_BINDING, stretched to the frame.
    Image(wgpu::Texture),
}

#[derive(Clone, Debug)]
pub enum Effect {
    /// The frame, converted to RGBA.
    None,
    /// The mask as grey (white = person).
    Mask,
    /// The background blurred with a Gaussian of sigma `strength` pixels.
    Blur {
        strength: f32,
    },
    Replace(Background),
}

/// Hardens the mask edge: smoothstep(threshold - softness, threshold + softness, m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeSoftening {
    pub threshold: f32,
    /// 0 gives a hard step at `threshold`.
    pub softness: f32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaskOptions {
    /// Mask size: the buffer holds `height` rows of `width` f32 values in 0..1.
    pub width: u32,
    pub height: u32,
    pub edge: Option<EdgeSoftening>,
    /// Weight of the previous frame's mask, 0 (off) to below 1:
    /// m = temporal * m_prev + (1 - temporal) * m.
    pub temporal: f32,
}

impl MaskOptions {
    pub fn new(width: u32, height: u32) -> Self {
        MaskOptions {
            width,
            height,
            edge: None,
            temporal: 0.0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct CompositeOptions {
    pub mask: MaskOptions,
    pub effect: Effect,
    /// For YUV frames.
    pub color: ColorSpec,
}

struct Smoothing {
    state: wgpu::Buffer,
    steady: wgpu::ComputePipeline,
    first: wgpu::ComputePipeline,
    primed: bool,
}

/// Outputs each blur invocation computes along the blur; `blur.wgsl` is
/// written out for 4.
const BLUR_RUN: u32 = 4;

/// Workgroup memory a blur tile may use: WebGPU's default limit. Larger
/// tiles would only trim the halo further while fewer workgroups fit on a
/// multiprocessor at once.
const BLUR_TILE_BYTES: u32 = 16 * 1024;

/// How one blur pass shares the frame among workgroups (see `blur.wgsl`):
/// each blurs `lines` neighbouring lines over `per_line` invocations of
/// BLUR_RUN outputs, reading the outputs' span plus the kernel's radius
/// either side into workgroup memory.
#[derive(Clone, Copy, Debug, PartialEq)]
struct BlurTile {
    horizontal: bool,
    lines: u32,
    per_line: u32,
    /// Kernel taps (2 * radius + 1) in groups of BLUR_RUN, rounded up.
    tap_groups: u32,
}

impl BlurTile {
    /// The first shape, in order of preference, that fits in `budget` bytes.
    /// Across, one line of 512 outputs reads one run of a row and keeps the
    /// halo small next to it. Down, 4 columns side by side make each row's
    /// read 64 contiguous bytes rather than one texel; longer kernels fall
    /// back to shorter lines, then fewer columns.
    fn new(horizontal: bool, radius: u32, budget: u32) -> Option<BlurTile> {
        const ACROSS: &[(u32, u32)] = &[(1, 128)];
        const DOWN: &[(u32, u32)] = &[(4, 64), (4, 32), (2, 32)];
        let tap_groups = (2 * radius + 1).div_ceil(BLUR_RUN);
        let shapes = if horizontal { ACROSS } else { DOWN };
        shapes
            .iter()
            .map(|&(lines, per_line)| BlurTile {
                horizontal,
                lines,
                per_line,
                tap_groups,
            })
            .find(|t| t.bytes() <= u64::from(budget))
    }

    /// A line's inputs in each of the shader's BLUR_RUN storage classes.
    fn slots(&self) -> u32 {
        self.per_line + self.tap_groups
    }

    fn tile_len(&self) -> u32 {
        self.lines * BLUR_RUN * self.slots()
    }

    /// Three f32 channels per input plus the weights.
    fn bytes(&self) -> u64 {
        4 * (3 * u64::from(self.tile_len()) + u64::from(BLUR_RUN * self.tap_groups))
    }

    fn constants(&self) -> [(&'static str, f64); 5] {
        [
            ("lines", f64::from(self.lines)),
            ("per_line", f64::from(self.per_line)),
            ("tap_groups", f64::from(self.tap_groups)),
            ("slots", f64::from(self.slots())),
            ("tile_len", f64::from(self.tile_len())),
        ]
    }

    /// Workgroups covering a `width` x `height` frame.
    fn groups(&self, width: u32, height: u32) -> (u32, u32) {
        let run = self.per_line * BLUR_RUN;
        if self.horizontal {
            (width.div_ceil(run), height.div_ceil(self.lines))
        } else {
            (width.div_ceil(self.lines), height.div_ceil(run))
        }
    }
}

struct BlurTargets {
    size: (u32, u32),
    across: wgpu::Texture,
    done: wgpu::Texture,
}

/// Composites frames with masks; holds the temporal state and blur
/// intermediates between frames.
pub struct Compositor {
    gpu: Gpu,
    options: CompositeOptions,
    pipelines: PipelineCache,
    smoothing: Option<Smoothing>,
    blur: Option<BlurTargets>,
    // Bound where the effect reads no background texture: the pipeline layout
    // has the slot either way.
    placeholder: wgpu::Texture,
}

impl std::fmt::Debug for Compositor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compositor")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Shared with `video::cpu`, so both paths accept the same strengths.
pub(crate) fn check_blur(strength: f32) -> Result<()> {
    if strength > 0.0 && strength <= MAX_BLUR_STRENGTH {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "composite: blur strength {strength} must be above 0 and at most \
         MAX_BLUR_STRENGTH = {MAX_BLUR_STRENGTH}"
    )))
}

/// The mask checks that hold whatever runs the composite (GPU or `video::cpu`).
pub(crate) fn check_mask(m: &MaskOptions) -> Result<()> {
    if m.width == 0 || m.height == 0 {
        return Err(Error::invalid(format!(
            "composite: mask size {}x{} must be at least 1x1",
            m.width, m.height
        )));
    }
    if !(0.0..1.0).contains(&m.temporal) {
        return Err(Error::invalid(format!(
            "composite: temporal smoothing {} must be in 0..1 (0 = off)",
            m.temporal
        )));
    }
    if let Some(e) = m.edge {
        if !(e.threshold.is_finite() && e.softness.is_finite() && e.softness >= 0.0) {
            return Err(Error::invalid(format!(
                "composite: edge softening {e:?} needs a finite threshold and softness >= 0"
            )));
        }
    }
    Ok(())
}

fn check_effect(effect: &Effect) -> Result<()> {
    match effect {
        Effect::Blur { strength } => check_blur(*strength),
        Effect::Replace(Background::Image(t)) => {
            if !t.usage().contains(wgpu::TextureUsages::TEXTURE_BINDING) {
                return Err(Error::invalid(
                    "composite: the background image texture lacks TEXTURE_BINDING usage",
                ));
            }
            match t.format().sample_type(None, None) {
                Some(wgpu::TextureSampleType::Float { .. }) => Ok(()),
                _ => Err(Error::invalid(format!(
                    "composite: background image format {:?} is not a float colour format",
                    t.format()
                ))),
            }
        }
        _ => Ok(()),
    }
}

impl Compositor {
    pub fn new(gpu: &Gpu, options: CompositeOptions) -> Result<Compositor> {
        let m = &options.mask;
        check_mask(m)?;
        check_effect(&options.effect)?;
        let mask_len = u64::from(m.width) * u64::from(m.height);
        let limits = gpu.limits();
        if mask_len * 4 > limits.max_storage_buffer_binding_size {
            return Err(Error::invalid(format!(
                "composite: a {}x{} mask is over the device limit max_storage_buffer_binding_size = {}",
                m.width, m.height, limits.max_storage_buffer_binding_size
            )));
        }
        let smoothing = if m.temporal > 0.0 {
            let groups = mask_len.div_ceil(64);
            if groups > u64::from(limits.max_compute_workgroups_per_dimension) {
                return Err(Error::invalid(format!(
                    "composite: temporal smoothing of a {}x{} mask needs {groups} workgroups, \
                     over the device limit max_compute_workgroups_per_dimension = {}",
                    m.width, m.height, limits.max_compute_workgroups_per_dimension
                )));
            }
            let pipeline = |alpha: f32| {
                build(
                    gpu,
                    "wgnn mask smoothing",
                    include_str!("mask_smooth.wgsl"),
                    &[("alpha", f64::from(alpha)), ("mask_len", mask_len as f64)],
                )
            };
            let state = gpu.scoped("mask smoothing state", || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgnn smoothed mask"),
                    size: mask_len * 4,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })?;
            Some(Smoothing {
                state,
                steady: pipeline(m.temporal)?,
                // The first frame has no history: take its mask as is.
                first: pipeline(0.0)?,
                primed: false,
            })
        } else {
            None
        };
        let placeholder = create_texture(
            gpu,
            "wgnn no background",
            1,
            1,
            wgpu::TextureFormat::Rgba8Unorm,
            wgpu::TextureUsages::TEXTURE_BINDING,
        )?;
        Ok(Compositor {
            gpu: gpu.clone(),
            options,
            pipelines: PipelineCache::default(),
            smoothing,
            blur: None,
            placeholder,
        })
    }

    pub fn options(&self) -> &CompositeOptions {
        &self.options
    }

    pub fn set_effect(&mut self, effect: Effect) -> Result<()> {
        check_effect(&effect)?;
        self.options.effect = effect;
        Ok(())
    }

    /// Forgets the mask history (after a scene cut, say).
    pub fn reset_temporal(&mut self) {
        if let Some(s) = &mut self.smoothing {
            s.primed = false;
        }
    }

    /// Pipelines compiled so far.
    pub fn pipelines_built(&self) -> u64 {
        self.pipelines.built()
    }

    fn composite_pipeline(&self, reader: Reader) -> Result<wgpu::ComputePipeline> {
        let o = &self.options;
        let (effect, bg) = match &o.effect {
            Effect::None => (0, [0; 4]),
            Effect::Mask => (1, [0; 4]),
            Effect::Replace(Background::Color(c)) => (2, *c),
            Effect::Replace(Background::Image(_)) => (3, [0; 4]),
            Effect::Blur { .. } => (4, [0; 4]),
        };
        let (edge, lo, hi) = match o.mask.edge {
            Some(e) => (1, e.threshold - e.softness, e.threshold + e.softness),
            None => (0, 0.0, 0.0),
        };
        let mut c = vec![
            ("mask_w", f64::from(o.mask.width)),
            ("mask_h", f64::from(o.mask.height)),
            ("edge", f64::from(edge)),
            ("edge_lo", f64::from(lo)),
            ("edge_hi", f64::from(hi)),
            ("effect", f64::from(effect)),
            ("bg_r", f64::from(bg[0])),
            ("bg_g", f64::from(bg[1])),
            ("bg_b", f64::from(bg[2])),
            ("bg_a", f64::from(bg[3]) / 255.0),
        ];
        c.extend(reader.constants(o.color));
        self.pipelines.get(
            &self.gpu,
            format!("composite {reader:?} {}", constants_key(&c)),
            "wgnn composite",
            || format!("{}\n{}", reader.source(), include_str!("composite.wgsl")),
            &c,
        )
    }

    fn blur_pipeline(
        &self,
        reader: Reader,
        strength: f32,
    ) -> Result<(wgpu::ComputePipeline, BlurTile)> {
        let horizontal = reader != Reader::FloatRgba;
        let radius = (3.0 * strength).ceil();
        let budget = self
            .gpu
            .limits()
            .max_compute_workgroup_storage_size
            .min(BLUR_TILE_BYTES);
        let tile = BlurTile::new(horizontal, radius as u32, budget).ok_or_else(|| {
            Error::invalid(format!(
                "composite: no blur tile for radius {radius} fits in the device's \
                 max_compute_workgroup_storage_size = {budget}"
            ))
        })?;
        let mut c = vec![
            ("horizontal", f64::from(u8::from(horizontal))),
            ("sigma", f64::from(strength)),
            ("radius", f64::from(radius)),
        ];
        c.extend(tile.constants());
        c.extend(reader.constants(self.options.color));
        let pipeline = self.pipelines.get(
            &self.gpu,
            format!("blur {reader:?} {}", constants_key(&c)),
            "wgnn blur",
            || format!("{}\n{}", reader.source(), include_str!("blur.wgsl")),
            &c,
        )?;
        Ok((pipeline, tile))
    }

    fn blur_targets(&mut self, width: u32, height: u32) -> Result<&BlurTargets> {
        if self.blur.as_ref().map(|b| b.size) != Some((width, height)) {
            let make = |label| {
                create_texture(
                    &self.gpu,
                    label,
                    width,
                    height,
                    wgpu::TextureFormat::Rgba32Float,
                    wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::TEXTURE_BINDING,
                )
            };
            self.blur = Some(BlurTargets {
                size: (width, height),
                across: make("wgnn blur horizontal")?,
                done: make("wgnn blur")?,
            });
        }
        Ok(self.blur.as_ref().expect("just set"))
    }

    /// Records the passes writing the composite of `frame` and `mask` into
    /// `out` (Rgba8Unorm, STORAGE_BINDING, the frame's size). `mask` is a
    /// float32 tensor of the options' mask size: [1, height, width, 1] or
    /// any shape that differs from it only in axes of size 1.
    pub fn encode<'a>(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        mask: impl Into<TensorBuffer<'a>>,
        out: &wgpu::Texture,
    ) -> Result<()> {
        let m = self.options.mask;
        let mask = mask.into();
        check_mask_tensor(&mask, &m)?;
        let mask = mask.buffer();
        let mask_bytes = 4 * u64::from(m.width) * u64::from(m.height);
        if !mask.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::invalid(
                "composite: the mask buffer lacks STORAGE usage",
            ));
        }
        if mask.size() < mask_bytes {
            return Err(Error::invalid(format!(
                "composite: the mask buffer has {} bytes, a {}x{} f32 mask needs {mask_bytes}",
                mask.size(),
                m.width,
                m.height
            )));
        }
        let (w, h) = (frame.width(), frame.height());
        if out.format() != wgpu::TextureFormat::Rgba8Unorm
            || !out.usage().contains(wgpu::TextureUsages::STORAGE_BINDING)
        {
            return Err(Error::invalid(format!(
                "composite: the output must be an Rgba8Unorm texture with STORAGE_BINDING, \
                 got {:?} with {:?}",
                out.format(),
                out.usage()
            )));
        }
        if (out.width(), out.height()) != (w, h) {
            return Err(Error::invalid(format!(
                "composite: the output is {}x{}, the frame {w}x{h}; they must match",
                out.width(),
                out.height()
            )));
        }
        let gpu = self.gpu.clone();
        let reader = Reader::of(frame.format());

        let mut mask_src = mask.clone();
        if let Some(s) = &mut self.smoothing {
            let pipeline = if s.primed { &s.steady } else { &s.first };
            let bind = gpu.scoped("mask smoothing bindings", || {
                gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgnn mask smoothing"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: mask.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: s.state.as_entire_binding(),
                        },
                    ],
                })
            })?;
            let groups = (u64::from(m.width) * u64::from(m.height)).div_ceil(64) as u32;
            gpu.scoped("mask smoothing pass", || {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("wgnn mask smoothing"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            })?;
            s.primed = true;
            mask_src = s.state.clone();
        }

        let background = match self.options.effect.clone() {
            Effect::Replace(Background::Image(t)) => t,
            Effect::Blur { strength } => {
                let (across_pipe, across_tile) = self.blur_pipeline(reader, strength)?;
                let (down_pipe, down_tile) = self.blur_pipeline(Reader::FloatRgba, strength)?;
                let targets = self.blur_targets(w, h)?;
                let across = targets.across.create_view(&Default::default());
                let done = targets.done.create_view(&Default::default());
                let done_tex = targets.done.clone();
                let src = frame_bind_group(&gpu, &across_pipe, frame)?;
                let mid = textures_bind_group(&gpu, &down_pipe, std::slice::from_ref(&across))?;
                for (pipe, tile, input, output) in [
                    (&across_pipe, across_tile, &src, &across),
                    (&down_pipe, down_tile, &mid, &done),
                ] {
                    let (gx, gy) = tile.groups(w, h);
                    let target = storage_bind_group(&gpu, pipe, output)?;
                    gpu.scoped("blur pass", || {
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some("wgnn blur"),
                            timestamp_writes: None,
                        });
                        pass.set_pipeline(pipe);
                        pass.set_bind_group(0, input, &[]);
                        pass.set_bind_group(1, &target, &[]);
                        pass.dispatch_workgroups(gx, gy, 1);
                    })?;
                }
                done_tex
            }
            _ => self.placeholder.clone(),
        };

        let pipeline = self.composite_pipeline(reader)?;
        let planes = frame_bind_group(&gpu, &pipeline, frame)?;
        let bg_view = background.create_view(&Default::default());
        let out_view = out.create_view(&Default::default());
        let own = gpu.scoped("composite bindings", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn composite"),
                layout: &pipeline.get_bind_group_layout(1),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: mask_src.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(&bg_view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::TextureView(&out_view),
                    },
                ],
            })
        })?;
        let (gx, gy) = groups_2d(w, h);
        gpu.scoped("composite pass", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn composite"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &planes, &[]);
            pass.set_bind_group(1, &own, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        })
    }

    /// [`Compositor::encode`] and submit.
    pub fn run<'a>(
        &mut self,
        frame: &GpuFrame,
        mask: impl Into<TensorBuffer<'a>>,
        out: &wgpu::Texture,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode(&mut encoder, frame, mask, out)?;
        gpu.scoped("composite submit", || {
            gpu.queue().submit([encoder.finish()])
        })
        .map(|_| ())
    }
}

/// The mask is float32 and holds `height` rows of `width` values: its shape
/// is [1, height, width, 1] up to axes of size 1, which do not change the
/// order of the values.
fn check_mask_tensor(mask: &TensorBuffer, m: &MaskOptions) -> Result<()> {
    let (h, w) = (m.height as usize, m.width as usize);
    if mask.data_type() == DataType::Float32 && squeezed(mask.shape()) == squeezed(&[h, w]) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "composite: the mask tensor is {} {:?}; a {w}x{h} mask must be float32 [1, {h}, {w}, 1]",
        mask.data_type(),
        mask.shape()
    )))
}

fn storage_bind_group(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    view: &wgpu::TextureView,
) -> Result<wgpu::BindGroup> {
    gpu.scoped("storage texture binding", || {
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgnn storage target"),
            layout: &pipeline.get_bind_group_layout(1),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(view),
            }],
        })
    })
}

pub(crate) fn create_texture(
    gpu: &Gpu,
    label: &str,
    width: u32,
    height: u32,
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> Result<wgpu::Texture> {
    let max = gpu.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(Error::invalid(format!(
            "{label}: size {width}x{height} must be at least 1x1 and at most the device limit \
             max_texture_dimension_2d = {max}"
        )));
    }
    gpu.scoped(label, || {
        gpu.device().create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage,
            view_formats: &[],
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_blur_radius_has_a_tile_in_the_least_workgroup_memory_wgpu_allows() {
        let least = wgpu::Limits::downlevel_defaults().max_compute_workgroup_storage_size;
        let max_radius = (3.0 * MAX_BLUR_STRENGTH).ceil() as u32;
        for radius in 1..=max_radius {
            for horizontal in [true, false] {
                let tile = BlurTile::new(horizontal, radius, least);
                assert!(tile.is_some(), "radius {radius}, horizontal {horizontal}");
            }
        }
    }
}
