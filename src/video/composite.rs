//! Segmentation output -> picture: a person mask (model output, any size)
//! combined with the frame it was computed from, at the frame's size.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu, Specialization};

use super::frame::GpuFrame;
use super::frame_read::{
    float_rgba_bind_group, frame_bind_group, planes_key, yuv_buffer, ColorSpec, Reader,
    FRAME_BINDINGS,
};
use super::groups_2d;
use super::tensor_buffer::{squeezed, TensorBuffer};
use crate::gpu::bind_cache::{BindCache, Bound};
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
    Image(crate::gpu::live::Texture),
}

#[derive(Clone, Debug)]
pub enum Effect {
    /// The frame, converted to RGBA.
    None,
    /// The mask as grey (white = person).
    Mask,
    /// The background blurred with a Gaussian of sigma `strength` pixels.
    /// From sigma 8 on, the blur is computed at every k-th pixel each way
    /// (k = floor(sigma / 4)) and interpolated between: within 2 levels of
    /// 255 of the exact Gaussian on any picture, and the blur's passes move
    /// k to k^2 times fewer bytes.
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

/// What shapes the composite kernel's code: each combination is its own
/// pipeline (see `video`'s rule: switches are specialised, values are
/// [`CompositeParams`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CompositeSwitches {
    pub reader: Reader,
    /// 0 frame as is, 1 mask, 2 colour, 3 image, 4 blurred background.
    pub effect: u32,
    pub edge: bool,
}

impl CompositeSwitches {
    fn of(o: &CompositeOptions, reader: Reader) -> Self {
        CompositeSwitches {
            reader,
            effect: match &o.effect {
                Effect::None => 0,
                Effect::Mask => 1,
                Effect::Replace(Background::Color(_)) => 2,
                Effect::Replace(Background::Image(_)) => 3,
                Effect::Blur { .. } => 4,
            },
            edge: o.mask.edge.is_some(),
        }
    }

    /// The kernel's WGSL.
    pub(crate) fn source(&self) -> String {
        Specialization::new()
            .u32("EFFECT", self.effect)
            .bool("EDGE", self.edge)
            .module(
                &[],
                &format!(
                    "{}\n{}",
                    self.reader.source(),
                    include_str!("composite.wgsl")
                ),
            )
    }

    /// Every combination, for the shader tests.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<CompositeSwitches> {
        let mut all = Vec::new();
        for reader in Reader::ALL {
            for effect in 0..5 {
                for edge in [false, true] {
                    all.push(CompositeSwitches {
                        reader,
                        effect,
                        edge,
                    });
                }
            }
        }
        all
    }
}

/// `Params` of composite.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct CompositeParams {
    pub bg: [f32; 4],
    pub mask_w: u32,
    pub mask_h: u32,
    pub edge_lo: f32,
    pub edge_hi: f32,
    pub blur_step: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

impl CompositeParams {
    fn of(o: &CompositeOptions) -> Self {
        // RGB in 0..255 like the frame, alpha in 0..1.
        let bg = match &o.effect {
            Effect::Replace(Background::Color([r, g, b, a])) => [
                f32::from(*r),
                f32::from(*g),
                f32::from(*b),
                f32::from(*a) / 255.0,
            ],
            _ => [0.0; 4],
        };
        let (edge_lo, edge_hi) = match o.mask.edge {
            Some(e) => (e.threshold - e.softness, e.threshold + e.softness),
            None => (0.0, 0.0),
        };
        let blur_step = match o.effect {
            Effect::Blur { strength } => blur_step(strength),
            _ => 1,
        };
        CompositeParams {
            bg,
            mask_w: o.mask.width,
            mask_h: o.mask.height,
            edge_lo,
            edge_hi,
            blur_step,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }
}

/// `Params` of blur.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct BlurParams {
    pub sigma: f32,
    pub radius: i32,
    pub _pad0: u32,
    pub _pad1: u32,
}

impl BlurParams {
    fn of(strength: f32) -> Self {
        BlurParams {
            sigma: strength,
            radius: blur_radius(strength) as i32,
            _pad0: 0,
            _pad1: 0,
        }
    }
}

/// Taps each way: 3 sigma, rounded up.
fn blur_radius(strength: f32) -> u32 {
    (3.0 * strength).ceil() as u32
}

/// The blur's sample step k: both blur passes compute the Gaussian exactly
/// (same taps, same clamped reads), but only at pixels (k X, k Y), and the
/// composite interpolates bilinearly between those samples. The passes then
/// write 1/k and 1/k^2 of a full-size float texture and make 1/k and 1/k^2
/// of the outputs. Below sigma 8 the step is 1: the blur of every pixel.
/// (On an H100, 1080p at sigma 12, k = 3: the blur's passes plus the
/// composite took 0.082 ms of GPU time, against 0.165 at k = 1; at sigma 64,
/// 0.105 against 0.56.)
///
/// Why k <= sigma / 4 keeps within 2 levels of 255 of the exact blur f.
/// Linear interpolation between points k apart misses a function by at most
/// (k^2 / 8) max|f''| (the classic remainder; on pixels, with second
/// differences for f''), and bilinear adds the two directions' terms:
/// (k^2 / 8) (max|f_xx| + max|f_yy|). f = G * g for a picture g in 0..255,
/// so f_xx = G_xx * g, largest where g is 255 just where G_xx is negative
/// (or just where it is positive): G_xx < 0 for |x| < sigma, with integral
/// 2 G_x(sigma) = -2 phi(1) / sigma^2 (phi the standard normal density,
/// 2 phi(1) = 0.484), so a bar 2 sigma wide is the worst case and
/// max|f_xx| <= 255 * 0.484 / sigma^2. The error is then at most
/// 30.9 k^2 / sigma^2, and with k <= sigma / 4 at most 30.9 / 16 = 1.93.
/// Our kernel stops at 3 sigma; the step at its ends raises one direction's
/// worst case from 0.96 to 1.06 levels, but no picture meets both
/// directions' worst at once: the largest error over all pictures (255/2
/// times the summed magnitudes of the error's 2-D kernel), computed for
/// sigma = 4k, the worst ratio, at k = 2 to 16, is 1.66 levels. Photographs,
/// with few bars of full contrast, see a fraction of a level.
pub(crate) fn blur_step(strength: f32) -> u32 {
    ((strength / 4.0).floor() as u32).max(1)
}

/// Samples of a blur with step `step` along a line of `len` pixels: the
/// last one is at or past the last pixel, so every pixel lies between two.
pub(crate) fn blur_samples(len: u32, step: u32) -> u32 {
    (len - 1).div_ceil(step) + 1
}

/// `Params` of mask_smooth.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SmoothParams {
    pub alpha: f32,
    pub mask_len: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// The temporal smoothing kernel (no switches).
pub(crate) const SMOOTH_SOURCE: &str = include_str!("mask_smooth.wgsl");

struct Smoothing {
    state: crate::gpu::live::Buffer,
    pipeline: crate::gpu::live::ComputePipeline,
    /// Params with the configured weight, and with 0 for the first frame
    /// (it has no history: its mask is taken as is).
    steady: crate::gpu::live::Buffer,
    first: crate::gpu::live::Buffer,
    primed: bool,
}

/// Outputs each blur invocation computes along the blur; `blur.wgsl` is
/// written out for 4.
const BLUR_RUN: u32 = 4;

/// The blur passes' intermediates (`blur.wgsl` says why half floats).
const BLUR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;

/// Workgroup memory a blur tile may use: WebGPU's default limit. Larger
/// tiles would only trim the halo further while fewer workgroups fit on a
/// multiprocessor at once.
const BLUR_TILE_BYTES: u32 = 16 * 1024;

/// How one blur pass shares the frame among workgroups (see `blur.wgsl`):
/// each blurs `lines` neighbouring lines over `per_line` invocations of
/// BLUR_RUN outputs `step` pixels apart, reading the outputs' span plus the
/// kernel's radius either side into workgroup memory, one phase (pixels
/// p mod `step`) at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BlurTile {
    horizontal: bool,
    /// The sample step ([`blur_step`]): outputs are the Gaussian centred on
    /// every `step`-th input.
    step: u32,
    lines: u32,
    per_line: u32,
    /// A phase's kernel taps (2 * radius + 1) / step in groups of BLUR_RUN,
    /// rounded up (the shader takes taps p, p + step, ... together).
    tap_groups: u32,
}

impl BlurTile {
    /// The first shape, in order of preference, that fits in `budget` bytes.
    /// Across, one line of 512 outputs reads one run of a row and keeps the
    /// halo small next to it. Down, 4 columns side by side make each row's
    /// read 64 contiguous bytes rather than one texel; longer kernels fall
    /// back to shorter lines, then fewer columns. A step of k holds a k-th
    /// of the kernel's taps at a time, in the same shapes.
    fn new(horizontal: bool, radius: u32, step: u32, budget: u32) -> Option<BlurTile> {
        const ACROSS: &[(u32, u32)] = &[(1, 128)];
        const DOWN: &[(u32, u32)] = &[(4, 64), (4, 32), (2, 32)];
        let tap_groups = (2 * radius + 1).div_ceil(BLUR_RUN * step);
        let shapes = if horizontal { ACROSS } else { DOWN };
        shapes
            .iter()
            .map(|&(lines, per_line)| BlurTile {
                horizontal,
                step,
                lines,
                per_line,
                tap_groups,
            })
            .find(|t| t.bytes() <= u64::from(budget))
    }

    /// A line's inputs of a phase in each of the shader's BLUR_RUN storage
    /// classes.
    fn slots(&self) -> u32 {
        self.per_line + self.tap_groups
    }

    fn tile_len(&self) -> u32 {
        self.lines * BLUR_RUN * self.slots()
    }

    /// Three f32 channels per input plus the weights, of one phase.
    fn bytes(&self) -> u64 {
        4 * (3 * u64::from(self.tile_len()) + u64::from(BLUR_RUN * self.tap_groups))
    }

    /// The blur kernel reading frames through `reader`: the tile is
    /// compiled in, since it sizes the workgroup and its arrays.
    pub(crate) fn source(&self, reader: Reader) -> String {
        Specialization::new()
            .bool("HORIZONTAL", self.horizontal)
            .u32("STEP", self.step)
            .u32("LINES", self.lines)
            .u32("PER_LINE", self.per_line)
            .u32("TAP_GROUPS", self.tap_groups)
            .u32("SLOTS", self.slots())
            .u32("TILE_LEN", self.tile_len())
            .module(
                &[],
                &format!("{}\n{}", reader.source(), include_str!("blur.wgsl")),
            )
    }

    /// The tiles of every pass that MAX_BLUR_STRENGTH allows on a device
    /// with the least workgroup memory and with WebGPU's default, with the
    /// readers they meet (the frame's across, the intermediate's down).
    #[cfg(test)]
    pub(crate) fn all() -> Vec<(BlurTile, Reader)> {
        let mut all = Vec::new();
        for budget in [
            wgpu::Limits::downlevel_defaults().max_compute_workgroup_storage_size,
            BLUR_TILE_BYTES,
        ] {
            for (radius, step) in blur_shapes() {
                for horizontal in [true, false] {
                    let tile = BlurTile::new(horizontal, radius, step, budget).expect("a tile");
                    let readers: &[Reader] = if horizontal {
                        &[Reader::Packed, Reader::Rgb24, Reader::Nv12, Reader::I420]
                    } else {
                        &[Reader::FloatRgba]
                    };
                    for &reader in readers {
                        if !all.contains(&(tile, reader)) {
                            all.push((tile, reader));
                        }
                    }
                }
            }
        }
        all
    }

    /// Workgroups covering a pass's `width` x `height` output.
    fn groups(&self, width: u32, height: u32) -> (u32, u32) {
        let run = self.per_line * BLUR_RUN;
        if self.horizontal {
            (width.div_ceil(run), height.div_ceil(self.lines))
        } else {
            (width.div_ceil(self.lines), height.div_ceil(run))
        }
    }
}

/// Every (radius, step) pair of the strengths up to MAX_BLUR_STRENGTH:
/// both change only at multiples of 1/3 (radius at r / 3, step at 4 k), so
/// a region of strengths with one pair holds one of them, and strengths
/// 1/12 apart meet them all.
#[cfg(test)]
fn blur_shapes() -> Vec<(u32, u32)> {
    let mut shapes = Vec::new();
    for i in 1..=(12.0 * MAX_BLUR_STRENGTH) as u32 {
        let strength = i as f32 / 12.0;
        let shape = (blur_radius(strength), blur_step(strength));
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    shapes
}

/// The blur's intermediates for a `size` frame and `step`: the horizontal
/// pass's output (samples x full height) and the blur's samples.
struct BlurTargets {
    size: (u32, u32),
    step: u32,
    across: crate::gpu::live::Texture,
    done: crate::gpu::live::Texture,
}

/// A pipeline this compositor uses, by what shaped its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kernel {
    Composite(CompositeSwitches),
    Blur(BlurTile, Reader),
}

/// Composites frames with masks; holds the temporal state and blur
/// intermediates between frames.
pub struct Compositor {
    gpu: Gpu,
    options: CompositeOptions,
    /// This compositor's pipelines, from the device's cache: a frame costs
    /// a map look-up rather than building and hashing a kernel's source.
    pipelines: HashMap<Kernel, crate::gpu::live::ComputePipeline>,
    /// `CompositeParams` of the options, rewritten when the effect changes.
    params: crate::gpu::live::Buffer,
    /// `BlurParams` of the blur strength (both passes), when blurring.
    blur_params: Option<(f32, crate::gpu::live::Buffer)>,
    yuv: crate::gpu::live::Buffer,
    smoothing: Option<Smoothing>,
    blur: Option<BlurTargets>,
    // Bound where the effect reads no background texture: the pipeline layout
    // has the slot either way.
    placeholder: crate::gpu::live::Texture,
    /// Bind groups of the frames' planes (the pool's few recycled textures),
    /// of the blur's and smoothing's own textures and buffers, and of the
    /// outputs (`gpu::bind_cache`).
    frames: BindCache,
    own: BindCache,
    outputs: BindCache,
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
            let params = |alpha: f32| {
                let p = SmoothParams {
                    alpha,
                    mask_len: mask_len as u32,
                    _pad0: 0,
                    _pad1: 0,
                };
                gpu.create_buffer_with_data(
                    "wgnn mask smoothing params",
                    bytemuck::bytes_of(&p),
                    wgpu::BufferUsages::UNIFORM,
                )
            };
            let state = gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn smoothed mask"),
                size: mask_len * 4,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })?;
            Some(Smoothing {
                state,
                pipeline: gpu.compute_pipeline(
                    "wgnn mask smoothing",
                    SMOOTH_SOURCE,
                    Checks::All,
                )?,
                steady: params(m.temporal)?,
                first: params(0.0)?,
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
        let params = composite_params(gpu, &options)?;
        let blur_params = effect_blur_params(gpu, &options.effect, None)?;
        Ok(Compositor {
            gpu: gpu.clone(),
            yuv: yuv_buffer(gpu, options.color)?,
            options,
            pipelines: HashMap::new(),
            params,
            blur_params,
            smoothing,
            blur: None,
            placeholder,
            frames: BindCache::new(FRAME_BINDINGS),
            own: BindCache::new(8),
            outputs: BindCache::new(FRAME_BINDINGS),
        })
    }

    pub fn options(&self) -> &CompositeOptions {
        &self.options
    }

    pub fn set_effect(&mut self, effect: Effect) -> Result<()> {
        check_effect(&effect)?;
        let before = CompositeParams::of(&self.options);
        self.options.effect = effect;
        // New buffers rather than writes into the old ones: passes already
        // recorded (and not yet submitted) keep the values they were
        // recorded with.
        if CompositeParams::of(&self.options) != before {
            self.params = composite_params(&self.gpu, &self.options)?;
        }
        self.blur_params =
            effect_blur_params(&self.gpu, &self.options.effect, self.blur_params.take())?;
        Ok(())
    }

    /// Forgets the mask history (after a scene cut, say).
    pub fn reset_temporal(&mut self) {
        if let Some(s) = &mut self.smoothing {
            s.primed = false;
        }
    }

    /// Pipelines this compositor has used so far. They are compiled once
    /// per device: another compositor with the same switches reuses them.
    pub fn pipelines_built(&self) -> u64 {
        self.pipelines.len() as u64
    }

    fn pipeline(&mut self, kernel: Kernel) -> Result<crate::gpu::live::ComputePipeline> {
        if let Some(p) = self.pipelines.get(&kernel) {
            return Ok(p.clone());
        }
        let p = match kernel {
            Kernel::Composite(switches) => {
                self.gpu
                    .compute_pipeline("wgnn composite", &switches.source(), Checks::All)?
            }
            // Every index of blur.wgsl is in range by construction (its
            // header says why) and its loops run to compiled-in bounds: the
            // runtime clamps only slowed it (an H100's 1080p pass across,
            // sigma 12: 0.042 -> 0.033 ms).
            Kernel::Blur(tile, reader) => {
                self.gpu
                    .compute_pipeline("wgnn blur", &tile.source(reader), Checks::Trusted)?
            }
        };
        self.pipelines.insert(kernel, p.clone());
        Ok(p)
    }

    /// The blur pass reading through `reader` and its tile.
    fn blur_pipeline(
        &mut self,
        reader: Reader,
        strength: f32,
    ) -> Result<(crate::gpu::live::ComputePipeline, BlurTile)> {
        let horizontal = reader != Reader::FloatRgba;
        let radius = blur_radius(strength);
        let budget = self
            .gpu
            .limits()
            .max_compute_workgroup_storage_size
            .min(BLUR_TILE_BYTES);
        let step = blur_step(strength);
        let tile = BlurTile::new(horizontal, radius, step, budget).ok_or_else(|| {
            Error::invalid(format!(
                "composite: no blur tile for radius {radius} fits in the device's \
                 max_compute_workgroup_storage_size = {budget}"
            ))
        })?;
        Ok((self.pipeline(Kernel::Blur(tile, reader))?, tile))
    }

    fn blur_targets(&mut self, width: u32, height: u32, step: u32) -> Result<&BlurTargets> {
        if self.blur.as_ref().map(|b| (b.size, b.step)) != Some(((width, height), step)) {
            let make = |label, width, height| {
                create_texture(
                    &self.gpu,
                    label,
                    width,
                    height,
                    BLUR_FORMAT,
                    wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::TEXTURE_BINDING,
                )
            };
            let samples_w = blur_samples(width, step);
            // The old targets' bind groups would only keep them alive.
            self.own.clear();
            self.blur = Some(BlurTargets {
                size: (width, height),
                step,
                across: make("wgnn blur horizontal", samples_w, height)?,
                done: make("wgnn blur", samples_w, blur_samples(height, step))?,
            });
        }
        Ok(self.blur.as_ref().expect("just set"))
    }

    /// Records the mask smoothing pass where smoothing is on, and returns
    /// the buffer the composite reads the mask from: the smoothed state, or
    /// `mask` itself.
    fn smooth_mask(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        mask: &wgpu::Buffer,
    ) -> Result<wgpu::Buffer> {
        let m = self.options.mask;
        let gpu = self.gpu.clone();
        let mut mask_src = mask.clone();
        if let Some(s) = &mut self.smoothing {
            let pipeline = &s.pipeline;
            let params = if s.primed { &s.steady } else { &s.first };
            let key = vec![
                Bound::Pipeline((**pipeline).clone()),
                Bound::buffer(mask),
                Bound::buffer(&s.state),
                Bound::buffer(params),
            ];
            let bind = self.own.get_or_make(key, || {
                gpu.scoped("mask smoothing bindings", || {
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
                            wgpu::BindGroupEntry {
                                binding: 2,
                                resource: params.as_entire_binding(),
                            },
                        ],
                    })
                })
            })?;
            let groups = (u64::from(m.width) * u64::from(m.height)).div_ceil(64) as u32;
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("wgnn mask smoothing"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
            s.primed = true;
            mask_src = (*s.state).clone();
        }
        Ok(mask_src)
    }

    /// Records the two blur passes over `frame` (across, then down) and
    /// returns the blurred texture the composite reads as its background.
    fn blur(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        reader: Reader,
        strength: f32,
    ) -> Result<crate::gpu::live::Texture> {
        let gpu = self.gpu.clone();
        let (w, h) = (frame.width(), frame.height());
        let (across_pipe, across_tile) = self.blur_pipeline(reader, strength)?;
        let (down_pipe, down_tile) = self.blur_pipeline(Reader::FloatRgba, strength)?;
        // Made by `new` or `set_effect`: this only hands them over.
        let (_, blur_params) = blur_params(&gpu, strength, self.blur_params.take())?;
        self.blur_params = Some((strength, blur_params.clone()));
        let targets = self.blur_targets(w, h, blur_step(strength))?;
        let (across, done) = (targets.across.clone(), targets.done.clone());
        let src = self
            .frames
            .get_or_make(planes_key(&across_pipe, frame), || {
                frame_bind_group(
                    &gpu,
                    &across_pipe.get_bind_group_layout(0),
                    frame,
                    Some(&self.yuv),
                )
            })?;
        let key = vec![
            Bound::Pipeline((*down_pipe).clone()),
            Bound::Texture((*across).clone()),
        ];
        let mid = self.own.get_or_make(key, || {
            let view = across.create_view(&Default::default());
            float_rgba_bind_group(&gpu, &down_pipe.get_bind_group_layout(0), &view)
        })?;
        for (pipe, tile, input, output) in [
            (&across_pipe, across_tile, &src, &across),
            (&down_pipe, down_tile, &mid, &done),
        ] {
            let (gx, gy) = tile.groups(output.width(), output.height());
            let key = vec![
                Bound::Pipeline((**pipe).clone()),
                Bound::Texture((**output).clone()),
                Bound::buffer(&blur_params),
            ];
            let target = self.own.get_or_make(key, || {
                let view = output.create_view(&Default::default());
                blur_target_bind_group(&gpu, pipe, &view, &blur_params)
            })?;
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("wgnn blur"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipe);
                pass.set_bind_group(0, input, &[]);
                pass.set_bind_group(1, &target, &[]);
                pass.dispatch_workgroups(gx, gy, 1);
            }
        }
        Ok(done)
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
        check_targets(mask, &m, frame, out)?;
        let gpu = self.gpu.clone();
        let reader = Reader::of(frame.format());
        let mask_src = self.smooth_mask(encoder, mask)?;
        let (w, h) = (frame.width(), frame.height());
        let background = match self.options.effect.clone() {
            Effect::Replace(Background::Image(t)) => t,
            Effect::Blur { strength } => self.blur(encoder, frame, reader, strength)?,
            _ => self.placeholder.clone(),
        };

        let switches = CompositeSwitches::of(&self.options, reader);
        let pipeline = self.pipeline(Kernel::Composite(switches))?;
        let planes = self.frames.get_or_make(planes_key(&pipeline, frame), || {
            frame_bind_group(
                &gpu,
                &pipeline.get_bind_group_layout(0),
                frame,
                Some(&self.yuv),
            )
        })?;
        let key = vec![
            Bound::Pipeline((*pipeline).clone()),
            Bound::buffer(&mask_src),
            Bound::Texture((*background).clone()),
            Bound::Texture(out.clone()),
            Bound::buffer(&self.params),
        ];
        let params = &self.params;
        let own = self.outputs.get_or_make(key, || {
            let bg_view = background.create_view(&Default::default());
            let out_view = out.create_view(&Default::default());
            gpu.scoped("composite bindings", || {
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
                        wgpu::BindGroupEntry {
                            binding: 3,
                            resource: params.as_entire_binding(),
                        },
                    ],
                })
            })
        })?;
        let (gx, gy) = groups_2d(w, h);
        // The passes here take no error scope: wgpu 30 validates a pass as
        // its encoder finishes, inside the submitter's scope.
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn composite"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &planes, &[]);
            pass.set_bind_group(1, &own, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        Ok(())
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
        gpu.submit("composite submit", [encoder.finish()])
            .map(|_| ())
    }
}

/// The mask is float32 and holds `height` rows of `width` values: its shape
/// is [1, height, width, 1] up to axes of size 1, which do not change the
/// order of the values.
/// Refuses a mask buffer or output texture the composite pass cannot bind:
/// the mask too small or not STORAGE, the output not an Rgba8Unorm storage
/// texture of the frame's size.
fn check_targets(
    mask: &wgpu::Buffer,
    m: &MaskOptions,
    frame: &GpuFrame,
    out: &wgpu::Texture,
) -> Result<()> {
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
    Ok(())
}

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

fn composite_params(gpu: &Gpu, options: &CompositeOptions) -> Result<crate::gpu::live::Buffer> {
    gpu.create_buffer_with_data(
        "wgnn composite params",
        bytemuck::bytes_of(&CompositeParams::of(options)),
        wgpu::BufferUsages::UNIFORM,
    )
}

/// The blur's params for `strength`: `old` when made for the same strength.
fn blur_params(
    gpu: &Gpu,
    strength: f32,
    old: Option<(f32, crate::gpu::live::Buffer)>,
) -> Result<(f32, crate::gpu::live::Buffer)> {
    if let Some(old) = old.filter(|(s, _)| *s == strength) {
        return Ok(old);
    }
    let buffer = gpu.create_buffer_with_data(
        "wgnn blur params",
        bytemuck::bytes_of(&BlurParams::of(strength)),
        wgpu::BufferUsages::UNIFORM,
    )?;
    Ok((strength, buffer))
}

/// The blur's params when `effect` is a blur, reusing `old` when it can.
fn effect_blur_params(
    gpu: &Gpu,
    effect: &Effect,
    old: Option<(f32, crate::gpu::live::Buffer)>,
) -> Result<Option<(f32, crate::gpu::live::Buffer)>> {
    match *effect {
        Effect::Blur { strength } => blur_params(gpu, strength, old).map(Some),
        _ => Ok(None),
    }
}

/// Group 1 of a blur pass: its output and its params.
fn blur_target_bind_group(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    view: &wgpu::TextureView,
    params: &wgpu::Buffer,
) -> Result<wgpu::BindGroup> {
    gpu.scoped("blur output binding", || {
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgnn blur target"),
            layout: &pipeline.get_bind_group_layout(1),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: params.as_entire_binding(),
                },
            ],
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
) -> Result<crate::gpu::live::Texture> {
    let max = gpu.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(Error::invalid(format!(
            "{label}: size {width}x{height} must be at least 1x1 and at most the device limit \
             max_texture_dimension_2d = {max}"
        )));
    }
    gpu.create_texture(&wgpu::TextureDescriptor {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_blur_radius_has_a_tile_in_the_least_workgroup_memory_wgpu_allows() {
        let least = wgpu::Limits::downlevel_defaults().max_compute_workgroup_storage_size;
        // Today's full-size blur at every radius, and each step with the
        // radii its strengths have.
        let max_radius = (3.0 * MAX_BLUR_STRENGTH).ceil() as u32;
        let full = (1..=max_radius).map(|radius| (radius, 1));
        for (radius, step) in full.chain(blur_shapes()) {
            for horizontal in [true, false] {
                let tile = BlurTile::new(horizontal, radius, step, least);
                assert!(
                    tile.is_some(),
                    "radius {radius}, step {step}, horizontal {horizontal}"
                );
            }
        }
    }

    #[test]
    fn the_blur_step_is_a_quarter_sigma_and_one_below_sigma_8() {
        for (strength, step) in [
            (0.5, 1),
            (7.99, 1),
            (8.0, 2),
            (12.0, 3),
            (13.0, 3),
            (64.0, 16),
        ] {
            assert_eq!(blur_step(strength), step, "sigma {strength}");
        }
        // The last sample is at or past the last pixel, and the one before
        // it inside the line.
        for len in 1..40 {
            for step in 1..6 {
                let n = blur_samples(len, step);
                assert!(step * (n - 1) >= len - 1, "{len} {step}");
                assert!(n == 1 || step * (n - 2) < len - 1, "{len} {step}");
            }
        }
    }
}
