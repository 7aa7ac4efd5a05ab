//! Which kernel runs a conv2d: [`choose`], a pure function of the
//! convolution's numbers ([`ConvShape`]) and the device's ([`Target`]).
//! The lowering (`mod.rs`) computes both, calls it and emits the kernel it
//! names. Every threshold is a constant here, with the measurement that
//! set it; the kernels' own predicates (`takes`, `choose`) hold the limits
//! of what each kernel can run.

use super::coop_blocked::Blocked;
use super::coop_direct::Splits;
use super::coop_tile::Staged;
use super::gemm_split;
use super::gemm_vec::VecTile;
use super::params::{run_for, GEMM_TILE_PIXELS, SHORT_RUN, WIDE_MIN_TILES, WIDE_TILE_PIXELS};
use super::pointwise;
use super::split::Split;
use super::upsampled::Upsampled;
use super::winograd::Winograd;
use crate::ml::fuse::{pixel_by_pixel, NARROW_MAX_OUTPUTS};

/// Below this many 64 x 64 tiles an image, and up to
/// [`SMALL_MAX_REDUCTION`] products per output, conv2d takes the direct
/// kernel (one invocation per output element) instead of a GEMM: a small
/// map with a short reduction (selfie's 1x1 convolutions on 16x16 and
/// 32x32 maps) fills only a few tiles, 4 workgroups on an H100's 132
/// multiprocessors, each walking the whole reduction in slices behind
/// barriers (23 us for 16x16x128 -> 32).
pub(super) const SMALL_MAX_TILES: usize = 32;
pub(super) const SMALL_MAX_REDUCTION: usize = 256;
/// Input channels from which the direct kernel sums each output over
/// [`LANES`] invocations (`conv2d.wgsl` with LANES = 8: selfie 0.348 ->
/// 0.300 ms on an H200, docs/ARCHITECTURE.md).
pub(super) const LANES_MIN_CHANNELS: usize = 32;
/// Invocations sharing one output's sum in `conv2d.wgsl` over many input
/// channels.
pub(super) const LANES: u32 = 8;
/// Depthwise filters up to this many taps have them compiled in
/// (`conv2d_depthwise.wgsl`); more would unroll into long shaders.
pub(super) const DEPTHWISE_MAX_TAPS: u32 = 49;
/// On tensor cores, the split kernel keeps groups of up to this many
/// outputs; the staged kernel's 16-channel tile takes more: ESRGAN-slim's
/// 32 -> 12 at 960x540 on an H100 took 0.132 ms there against 0.227 split;
/// its 64 -> 4 0.192 against 0.145 on the split kernel, which reads rows
/// for up to 4 outputs (0.182 without).
pub(super) const SPLIT_TC_MAX_OUTPUTS: usize = 4;
/// Groups of up to this many outputs take the tensor cores' 32-channel
/// tile (ESRGAN-slim's 64 -> 32 3x3 at 960x540 on an H100: 0.44 ms, 0.55
/// on the 64-channel one, with the direct kernel).
pub(super) const TC_X32_MAX_OUTPUTS: usize = 32;
/// Fewer input channels than this are padded onto the blocked tensor-core
/// kernel only for one group of at least as many outputs (an RGB head), not
/// for depthwise or narrow groups, which would fill 1 of 16 rows and
/// columns; the blocked kernel takes them (ESRGAN-slim's RGB head at
/// 960x540 on an H100: 0.16 ms against 0.19-0.21 staged).
pub(crate) const TC_CHANNELS: usize = 16;
/// The fewest workgroups an image's convolution must fill for the tensor
/// cores: each of their workgroups is one subgroup walking the whole
/// reduction for its 64 pixels, so with fewer than one per multiprocessor
/// the convolution is latency-bound. ResNet-50 at batch 1 on an H200
/// (imported NCHW, run NHWC in float16): its 3x3 stride-2 14x14x512 ->
/// 7x7x512 took 0.277 ms in 56 tensor-core workgroups against 0.041 on the
/// split-reduction GEMM in float32, and the model 3.64 ms against 1.41
/// before; YOLOv8n's 3x3 stride-2 40x40x128 -> 20x20x256 took 0.099 ms in
/// 80. Counted over the batch, unlike the float32 rules below: float16
/// already rounds a batch apart from its images alone (tests/models/
/// batched.rs), and a batch of small maps fills the GPU. On an H200 with
/// the tensor cores on every float16 conv, YOLOv8n at batch 32 took 0.592
/// ms an image against 0.897 with this threshold counted per image, and
/// ResNet-50 0.360 against 0.732. Half a workgroup per multiprocessor
/// since the runs of 32 pixels (`params::run_for`) and the direct kernel's
/// unstaged short blocks: one H200 call at 12:47 UTC the same day, float16
/// batch 1, YOLOv8n 2.117 ms at 64 against 2.403 at 132, 2.419 at 32 and
/// 2.452 at 16 (its layout pass then turns more regions NHWC); ResNet-50
/// 1.422 at 64 and 132, 2.640 at 32; batch 8 alike at all four. Counted
/// in the small tile ([`TC_SMALL_TILE_BELOW`]) since it exists: with it,
/// YOLOv8n 1.574 ms at 32, 1.586 at 64 and 1.541 at 128 (the call there).
pub(super) const TC_MIN_WORKGROUPS: usize = 64;
/// Output channels of a group that one invocation of the int8 kernel
/// computes at most (`conv2d_int8.wgsl`): each input word it loads and
/// quantizes serves that many filter words. Not yet measured on a large GPU:
/// 8 keeps the sums in registers and a 64-channel layer at 8 blocks.
pub(super) const INT8_BLOCK_OUTPUTS: usize = 8;
/// The fewest workgroups a 1x1 convolution's pixels run as one row must
/// fill (`flat_pixels`): rows padded to runs of 32 or 64 pixels leave most
/// of a block idle on small maps (ResNet-50's 7x7: 7 of 32; YOLO's 80, 40
/// and 20: 5 of 8), but one row of all pixels makes fewer workgroups, each
/// one subgroup walking the whole reduction. One H200 call (15:34 UTC,
/// 2026-11-29), float16: ResNet-50 at batch 32 7.46 ms against 8.76 with
/// rows, at batch 8 3.10 against 3.55 (3.12 with 132 here); YOLOv8n at 32
/// 10.26 against 10.63, at 8 3.94 against 3.89; batch 1 alike.
pub(super) const FLAT_MIN_WORKGROUPS: usize = TC_MIN_WORKGROUPS;
/// An RGB stem of up to this many outputs (YOLO's 3 -> 16 3x3 stride 2)
/// takes the narrow kernel, all of a pixel's outputs in one invocation:
/// a GEMM tile leaves 48 of its 64 columns idle over a 27-long reduction,
/// and YOLOv8n's stem took 1.05 ms of its 11.9 at batch 32 in float16 on
/// an H200 there. Past 16 (ResNet's 3 -> 64 7x7, ESRGAN's 3 -> 64 3x3)
/// the GEMM kernels keep it: the narrow kernel in runs of 8 outputs took
/// 0.77 ms against 0.24 on ESRGAN-slim's 3 -> 64 at 960x540 (H100). On
/// the narrow kernel YOLOv8n's stem took 0.52 ms at batch 32, and the
/// model 10.26 against 10.78 (H200, the call above).
pub(super) const STEM_MAX_OUTPUTS: usize = 16;
/// Input channels of a group up to which a convolution is a stem.
pub(super) const STEM_MAX_CHANNELS: usize = 4;
/// Workgroups a float16 convolution fills in its default tensor-core tile
/// (a run of 64 or 32 pixels by 64 or 32 channels, up to 16 sums a
/// subgroup) below which it takes the small tile, [`SHORT_RUN`] pixels by
/// [`SMALL_TILE_CHANNELS`] (4 sums a subgroup): each workgroup is one
/// subgroup walking the whole reduction, so on small maps a few of them
/// ran the convolution one after another's latency. YOLOv8n's 1x1
/// 40x40x64 -> 128 took 15-27 us in 80 workgroups and its 3x3 stride-2
/// 40x40x128 -> 20x20x256 69 us in 80 (H200, float16, batch 1).
/// One H200 call (20:41 UTC, 2026-11-29), float16 batch 1, with the
/// small tile below 132, 264, 528 and 1056 default workgroups: YOLOv8n
/// 1.709, 1.618, 1.586 and 1.582 ms against 2.010 with none; YOLO11n
/// 2.131, 2.043, 1.998 and 2.004 against 2.457; batch 32 alike.
pub(super) const TC_SMALL_TILE_BELOW: usize = 528;
/// Reduction steps (one tap's 16 input channels: 4 to 16 products) a
/// tensor-core subgroup walks one after another at most, on a map whose
/// default tile fills fewer than [`TC_FULL_WORKGROUPS`]; past them the
/// split-reduction GEMM takes the convolution. Each step took 0.3-0.4 us
/// on the staged and blocked kernels (the input staged in workgroup
/// memory) and 0.6-1.2 us on the direct one (A read from memory, strided)
/// with a subgroup or two a multiprocessor, against 25-35 us for the split
/// GEMM and its sums on the same shapes (the call above, per kernel):
/// ResNet-50's 3x3 512 -> 512 on 7x7 (288 steps) took 93 us staged
/// against 40; its 1x1 1024 -> 256 on 14x14 (64 steps) 60 us direct
/// against 25; YOLOv8n's 3x3 stride-2 40x40x128 -> 20x20x128 (72 steps)
/// 57 direct against 29; its 3x3 20x20x128 -> 128 (72) 29 staged against
/// 30, and 3x3 40x40x64 -> 64 (36) 19-22 staged against 29.
pub(super) const TC_MAX_STEPS_STAGED: usize = 80;
pub(super) const TC_MAX_STEPS_DIRECT: usize = 40;
/// Steps a split of the direct kernel's reduction walks at most, and the
/// most splits: at 0.6-1.2 us a step, 12 steps cost about what the sums'
/// second pass does (5-7 us on an H200). One H200 call (21:28 UTC,
/// 2026-11-29), float16 batch 1, against the split GEMM for those
/// convolutions: YOLO11n 1.945 ms against 2.003, ResNet-50 1.362 against
/// 1.359 and YOLOv8n 1.567 against 1.560. ResNet-50's 3x3 stride-2
/// 14x14x512 -> 7x7x512 took 50 us in 32 splits of 9 steps (3584
/// workgroups) against 40 on the GEMM and 176 unsplit: a workgroup's fixed
/// cost (zeroed sums, the epilogue through workgroup memory, its partial
/// sums stored a channel apart) now bounds it, not the reduction.
pub(super) const TC_SPLIT_STEPS: usize = 12;
pub(super) const TC_MAX_SPLITS: usize = 32;
/// Subgroups (four a multiprocessor of an H200) that a convolution whose
/// one-row staged workgroups (or the direct kernel's one-subgroup ones) are
/// fewer takes by splitting each row's (tile's) reduction over 2, 4 or 8
/// subgroups of a workgroup ([`Staged::split`], [`direct_subgroups`]: the
/// fewest that reach this): each step of the
/// reduction costs a subgroup 0.3-0.4 us staged whatever the map
/// ([`TC_MAX_STEPS_STAGED`]), so YOLOv8n's 3x3 20x20x128 -> 128 at batch
/// 1, 20 workgroups of 4 rows walking 72 steps each, took 30 us (H200,
/// 2026-11-30 03:00 UTC). One H200 call (03:28 UTC), float16, split
/// against unsplit: batch 1 YOLOv8n 1.380 -> 1.199 ms, YOLO11n 1.825 ->
/// 1.746, ResNet-50 1.346 -> 1.087 (78 -> 68 kernels: its 3x3s on 7x7 and
/// 14x14 no longer take the split GEMM); with the threshold at 264, 528,
/// 1056 and 2112 subgroups, YOLOv8n 1.262, 1.199, 1.192 and 1.194 ms at
/// batch 1 but 3.478, 3.375, 3.536 and 3.537 at batch 8 (YOLO11n and
/// ResNet-50 alike: 1056 gained up to 2% at batch 1 and lost 3-5% at 8).
/// The direct kernel split likewise (04:37 UTC, against the staged split
/// alone): batch 1 YOLOv8n 1.130 -> 1.024 ms, YOLO11n 1.643 -> 1.456,
/// ResNet-50 1.086 -> 0.858 (its 1x1s on 7x7 to 28x28); batch 8 7-8%
/// faster, batch 32 0-5%.
pub(super) const TC_SPLIT_SUBGROUPS: usize = 4 * super::params::LARGE_GPU_MULTIPROCESSORS;
/// Default-tile workgroups (two a multiprocessor of an H200) from which a
/// convolution keeps the tensor cores whatever its reduction.
pub(super) const TC_FULL_WORKGROUPS: usize = 2 * super::params::LARGE_GPU_MULTIPROCESSORS;
/// The most of a padded output row's run (as a fraction) that the im2col
/// kernel takes rows filling whatever their reduction, and the most it
/// takes them filling over at most [`IM2COL_HALF_FILL_MAX_STEPS`] steps.
/// One H200 call (2026-11-30 00:33 UTC), ResNet-50 float16 at batch 32, in
/// runs of 32 pixels of one output row against over the copy's rows (copy
/// included): 7-pixel rows (7 of 32) 3x3 stride-2 14x14x512 -> 7x7x512
/// 511 -> 134 us, 3x3 7x7x512 -> 512 272 -> 135, 1x1 stride-2
/// 14x14x1024 -> 7x7x2048 424 -> 106; 14-pixel rows (14 of 32) 1x1
/// stride-2 28x28x512 -> 14x14x1024 (32 steps) 220 -> 152, but 3x3
/// 14x14x256 -> 256 (144 steps) 146-150 staged -> 282-287 and 3x3
/// stride-2 28x28x256 -> 14x14x256 283 -> 287: 392 one-subgroup
/// workgroups walked 144 steps each.
pub(super) const IM2COL_ROW_FILL: (usize, usize) = (1, 4);
pub(super) const IM2COL_HALF_FILL: (usize, usize) = (1, 2);
pub(super) const IM2COL_HALF_FILL_MAX_STEPS: usize = 64;
/// Output channels of the small tile (2 blocks of 16).
const SMALL_TILE_CHANNELS: usize = 32;

/// Whether a float16 convolution of `images` output maps of `oh` x `ow`
/// and `groups` groups of `ocg` outputs fills [`TC_MIN_WORKGROUPS`]
/// tensor-core workgroups in the smallest tile they would take it in: the
/// tensor cores' part of [`choose`], which the layout pass (`ml/layout`)
/// asks too before it runs a region in NHWC.
pub(crate) fn tensor_cores_fill(
    images: usize,
    [oh, ow]: [usize; 2],
    ocg: usize,
    groups: usize,
) -> bool {
    let workgroups =
        images * oh * ow.div_ceil(SHORT_RUN) * ocg.div_ceil(SMALL_TILE_CHANNELS) * groups;
    workgroups >= TC_MIN_WORKGROUPS
}

/// Workgroups of a tensor-core tile of `run` pixels by `channels`.
fn tc_workgroups(s: &ConvShape, run: usize, channels: usize) -> usize {
    s.images * s.oh * s.ow.div_ceil(run) * s.ocg.div_ceil(channels) * s.groups
}

/// A convolution as the choice reads it: plain numbers and flags, per
/// group where it says so, with any fused upsample applied to the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ConvShape {
    /// The input (and output) NHWC, channels adjacent; else NCHW.
    pub nhwc: bool,
    /// Input channels one element apart (NHWC, or NCHW with 1x1 maps).
    pub channels_adjacent: bool,
    /// Input and filter float16 (else float32, or integers).
    pub input_f16: bool,
    pub filter_f16: bool,
    /// Input and filter both float32 or both float16, the output either
    /// (a fused cast, which leaves no residual): what the vector kernels
    /// need.
    pub floats: bool,
    pub groups: usize,
    /// Input and output channels of a group, and all output channels.
    pub icg: usize,
    pub ocg: usize,
    pub oc: usize,
    pub kh: usize,
    pub kw: usize,
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// Top, bottom, left, right.
    pub padding: [usize; 4],
    pub oh: usize,
    pub ow: usize,
    pub images: usize,
    pub has_bias: bool,
    /// A fused input-channel scale.
    pub has_scale: bool,
    /// A residual, added before the activations or after them (every
    /// kernel's `finish` takes either).
    pub has_residual: bool,
    /// A fused nearest upsample of the input (rows, columns).
    pub upsample: Option<[usize; 2]>,
    /// The filter is a constant (every imported model): the kernels that
    /// rearrange it at build can take it.
    pub constant_filter: bool,
    /// A quantized conv2d (`Op::QuantConv2d`): int8 products.
    pub quantized: bool,
}

impl ConvShape {
    fn pixels(&self) -> usize {
        self.images * self.oh * self.ow
    }

    /// Output channel tiles of a 64-channel GEMM tile.
    fn channel_tiles(&self) -> usize {
        self.ocg.div_ceil(super::params::GEMM_TILE_CHANNELS)
    }
}

/// What the device offers the choice: tensor cores, and the limits the
/// lowering checks (a recording lowering has none: the largest values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub f16_tensor_cores: bool,
    /// Bytes one storage binding holds.
    pub max_binding: u64,
    /// Invocations of a workgroup, and along its x.
    pub max_invocations: u32,
    pub max_workgroup_x: u32,
    /// Workgroup memory of a workgroup.
    pub max_workgroup_bytes: u32,
}

impl Target {
    fn can_bind(&self, bytes: u64) -> bool {
        bytes <= self.max_binding
    }

    fn fits_workgroup(&self, invocations: u32, bytes: u32) -> bool {
        invocations <= self.max_invocations
            && invocations <= self.max_workgroup_x
            && bytes <= self.max_workgroup_bytes
    }
}

/// The tensor-core tile: 16-channel blocks of B, and whether the group's
/// outputs come in pairs (ocg even: each lane writes two adjacent channels
/// as one vec2, a subgroup's store one whole 128-byte line of a 64-channel
/// pixel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CoopTile {
    pub blocks: u32,
    pub pairs: bool,
    /// Runs of [`SHORT_RUN`] pixels whatever the row (the small tile).
    pub short: bool,
}

impl CoopTile {
    /// Output pixels a workgroup takes along a row of `ow` (or along all
    /// pixels, for a flat 1x1).
    pub fn run(self, ow: usize) -> usize {
        match self.short {
            true => SHORT_RUN,
            false => run_for(ow),
        }
    }
}

/// The kernel of a conv2d, with what its lowering needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConvKernel {
    /// `conv2d.wgsl`: one output per `lanes` invocations.
    Direct { lanes: u32 },
    /// `conv2d_depthwise.wgsl`, its taps compiled in.
    Depthwise { kh: u32, kw: u32 },
    /// `conv2d_narrow.wgsl`: one output pixel's channels an invocation.
    Narrow,
    /// `conv2d_upsampled.wgsl`: one small convolution per output phase.
    Upsampled(Upsampled),
    /// `conv2d_pointwise.wgsl`: a 1x1 over few inputs, an output vec4 an
    /// invocation; `vec4_input`: the input read as vec4s.
    Pointwise { vec4_input: bool },
    /// `conv2d_split.wgsl`: a pixel's input channels split over lanes.
    Split(Split),
    /// `conv2d_winograd.wgsl`: Winograd F(2x2, 3x3).
    Winograd(Winograd),
    /// `conv2d_gemm.wgsl` with its reduction split over workgroups.
    SplitGemm { splits: usize },
    /// `conv2d_gemm_vec.wgsl`: vec4 loads, the filter pre-transposed.
    VecGemm(VecTile),
    /// `conv2d_gemm.wgsl`: 64 x 64 tiles, 4 x 4 an invocation.
    Gemm64,
    /// `conv2d_gemm_wide.wgsl`: 128 x 64 tiles; `along_k`: the loaders of
    /// x run along the reduction (NHWC).
    GemmWide { along_k: bool },
    /// `conv2d_coop_block.wgsl` then `conv2d_coop_blocked.wgsl`.
    CoopBlocked(Blocked, CoopTile),
    /// `conv2d_coop_tile.wgsl`: the input staged through workgroup memory.
    CoopStaged(Staged, CoopTile),
    /// `conv2d_coop_direct.wgsl`: A blocks read straight from x; `flat`:
    /// a 1x1 over every image's pixels as one row ([`flat_pixels`]); its
    /// input channels split over subgroups of a workgroup, which add up
    /// their sums in its epilogue, and over workgroups, whose partial sums
    /// `conv2d_gemm_sum.wgsl` adds up.
    CoopDirect(CoopTile, bool, Splits),
    /// `conv2d_coop_im2col.wgsl` (each output pixel's patch copied into a
    /// row) then `conv2d_coop_direct.wgsl` over those rows as a 1x1.
    CoopIm2col(CoopTile),
    /// `conv2d_int8.wgsl`: int8 products, `outputs` channels an invocation.
    Int8 { outputs: u32 },
}

/// Why no kernel takes a convolution (fusion should not have made it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// An upsampled input needs the narrow or direct kernel.
    Upsample,
}

/// conv2d's kernel: the first of these that takes the convolution, in this
/// order (each says why it goes before the ones after it).
pub(super) fn choose(s: &ConvShape, t: &Target) -> Result<ConvKernel, Refused> {
    // A quantized conv2d computes in int8, which only its kernel does
    // (fusion gives it no residual, input scale or upsample).
    if s.quantized {
        let outputs = s.ocg.min(INT8_BLOCK_OUTPUTS) as u32;
        return Ok(ConvKernel::Int8 { outputs });
    }
    // Fusion leaves an upsample only on convolutions the upsampled, narrow
    // and direct kernels take.
    if let Some(up) = s.upsample {
        return upsampled(s, up);
    }
    // Few outputs over a long reduction (ESRGAN's 64 -> 4 and 32 -> 12 3x3),
    // NHWC with channels in runs of 4 and a constant filter, in either
    // float type: the reduction split over lanes (split.rs has the
    // estimates against the narrow kernel, the vec4 GEMM and, in float16,
    // the tensor cores, which pad 4 or 12 outputs to 64 columns) ...
    let split = Split::choose(s.groups, s.icg, s.ocg, s.kh, s.kw)
        .filter(|_| s.floats && s.nhwc)
        .map(|sp| sp.rows(s.kw, s.strides[1], s.dilations[1], s.ow));
    // ... except on tensor cores in float16, where the staged kernel with a
    // 16-channel tile takes those of more than SPLIT_TC_MAX_OUTPUTS.
    let tensor_cores = s.input_f16
        && s.filter_f16
        && t.f16_tensor_cores
        && !s.has_scale
        && s.nhwc
        && (tensor_cores_fill(s.images, [s.oh, s.ow], s.ocg, s.groups) || split_fills(s));
    let few_staged = tensor_cores
        && split.is_some()
        && s.ocg > SPLIT_TC_MAX_OUTPUTS
        && !s.has_residual
        && s.icg % TC_CHANNELS == 0
        && Staged::choose(s.kh, s.kw, s.strides, s.dilations, run_for(s.ow)).is_some()
        && s.constant_filter;
    let split = split.filter(|_| !few_staged);
    // A 1x1 over a few input channels (ESRGAN-slim's 4 -> 64 pieces of a
    // split concat) moves bytes: one invocation per output vec4.
    let pointwise = pointwise::takes((s.kh, s.kw), s.padding, s.groups, s.icg, s.oc, s.nhwc);
    if pointwise && s.floats && s.constant_filter {
        return Ok(ConvKernel::Pointwise {
            vec4_input: s.nhwc && s.icg % 4 == 0,
        });
    }
    if let (Some(split), true) = (split, s.constant_filter) {
        return Ok(ConvKernel::Split(split));
    }
    // A small map with a short reduction: one invocation per output element
    // spreads over thousands what a few 64 x 64 tiles would run. Counted
    // per image, so that a batch takes the kernels its images take alone
    // (batched streams then match unbatched ones bit for bit).
    // In float16 on tensor cores the batch counts, as it does for
    // TC_MIN_WORKGROUPS: YOLOv8n's 1x1 128 -> 256 on its 20x20 maps at
    // batch 32 took 0.44 ms each on the direct kernel on an H200.
    let gemm_tiles = (s.oh * s.ow).div_ceil(GEMM_TILE_PIXELS) * s.channel_tiles() * s.groups;
    if gemm_tiles < SMALL_MAX_TILES && s.icg * s.kh * s.kw <= SMALL_MAX_REDUCTION && !tensor_cores {
        return Ok(pixel(s));
    }
    if tensor_cores {
        if let Some(kernel) = tensor_core_kernel(s, t, few_staged) {
            return Ok(kernel);
        }
    }
    if pixel_by_pixel(s.groups, s.ocg) || stem(s) {
        return Ok(pixel(s));
    }
    Ok(gemm(s, t, gemm_tiles))
}

/// An RGB stem (a group of up to [`STEM_MAX_CHANNELS`] inputs and
/// [`STEM_MAX_OUTPUTS`] outputs, a constant filter): the narrow kernel.
fn stem(s: &ConvShape) -> bool {
    s.groups == 1 && s.icg <= STEM_MAX_CHANNELS && s.ocg <= STEM_MAX_OUTPUTS && s.constant_filter
}

/// The narrow kernel for one group of up to [`NARROW_MAX_OUTPUTS`]
/// outputs and a constant filter, else the depthwise or direct one, which
/// take any convolution.
fn pixel(s: &ConvShape) -> ConvKernel {
    let narrow = s.ocg <= NARROW_MAX_OUTPUTS || stem(s);
    if s.oc == s.ocg && narrow && s.constant_filter {
        return ConvKernel::Narrow;
    }
    let (kh, kw) = (s.kh as u32, s.kw as u32);
    let plain = s.upsample.is_none_or(|up| up == [1, 1]);
    if s.icg == 1 && s.ocg == 1 && plain && kh * kw <= DEPTHWISE_MAX_TAPS {
        return ConvKernel::Depthwise { kh, kw };
    }
    // Outputs over many input channels (no fused upsample): each sum over
    // LANES invocations.
    let lanes = match s.icg >= LANES_MIN_CHANNELS && plain {
        true => LANES,
        false => 1,
    };
    ConvKernel::Direct { lanes }
}

/// An input read through a fused nearest upsample: one small convolution
/// of the input per output phase, where the filter is constant and
/// channels come in runs of 4, else the narrow or direct kernel.
fn upsampled(s: &ConvShape, up: [usize; 2]) -> Result<ConvKernel, Refused> {
    if !pixel_by_pixel(s.groups, s.ocg) {
        return Err(Refused::Upsample);
    }
    let geometry = (s.strides, s.dilations, s.groups);
    let phases = Upsampled::choose(geometry, s.padding, up, [s.kh, s.kw], s.icg, s.ocg, s.nhwc)
        .filter(|_| s.floats && s.constant_filter);
    Ok(phases.map_or_else(|| pixel(s), ConvKernel::Upsampled))
}

/// Tensor cores for float16 NHWC convolutions with a constant filter (in
/// 16 x 16 blocks) and no input scale (A goes from memory to the tensor
/// cores untouched), or None where none of their kernels takes it. Stride 1
/// with several taps stages each workgroup's input patch through workgroup
/// memory once for all taps, or copies the input into a blocked scratch
/// layout whose A blocks are contiguous; the rest (strides, dilations, 1x1)
/// read A blocks straight from x, which needs input channels in runs of 16.
fn tensor_core_kernel(s: &ConvShape, t: &Target, few_staged: bool) -> Option<ConvKernel> {
    // 16-channel tiles only on the staged kernel (few_staged): the blocked
    // and direct kernels load two B blocks.
    let blocks = if few_staged {
        1
    } else if s.ocg <= TC_X32_MAX_OUTPUTS {
        2
    } else {
        4
    };
    let default_workgroups = tc_workgroups(s, run_for(s.ow), 16 * blocks as usize);
    let short = default_workgroups < TC_SMALL_TILE_BELOW;
    let tile = CoopTile {
        blocks: if short { blocks.min(2) } else { blocks },
        pairs: s.ocg % 2 == 0,
        short,
    };
    let run = tile.run(s.ow);
    // The staged and blocked kernels pad input channels to 16 as they
    // stage or copy them, so they take any count (ESRGAN's RGB head).
    let staged = Staged::choose(s.kh, s.kw, s.strides, s.dilations, run);
    // A blocked copy past what one binding holds (a huge frame) leaves
    // the convolution to the other kernels.
    let blocked = Blocked::choose(
        (s.kh, s.kw),
        s.strides,
        s.dilations,
        (s.oh, s.ow, run),
        s.groups,
        s.icg,
    )
    .filter(|b| t.can_bind(b.bytes(s.images)));
    let padded = blocked.is_some() && s.groups == 1 && s.ocg >= TC_CHANNELS;
    if !s.constant_filter || !(padded || s.icg % TC_CHANNELS == 0) {
        return None;
    }
    // Blocked where a residual is fused on a map that takes the default
    // tile (ESRGAN-slim's GFF_2, 3x3 64 -> 64 at 960x540: 0.52 ms with
    // the copy, 0.71-0.78 staged) or a group has fewer than 16 input
    // channels (its RGB head: 0.16 against 0.19-0.21), and where the
    // staged patch does not fit; staged otherwise (the plain 3x3 64 -> 64:
    // 0.43 against 0.47 blocked with its copy), all on an H100. On a map
    // small enough for the small tile, a residual stays staged: the copy
    // is a kernel of its own (5-6 us) and the blocked kernel in runs of 32
    // was slower than staged (YOLOv8n's bottleneck 3x3 16 -> 16 at
    // 160x160 with its residual 19.4 us + 6.3 for the copy, the same conv
    // without 12.7). H200, 2026-11-29 23:56 UTC, float16 batch 1:
    // YOLOv8n 1.541 -> 1.507 ms (130 -> 125 kernels), YOLO11n 1.917 ->
    // 1.921, ResNet-50 and the bundled models unchanged.
    let residual_blocked = s.has_residual && !short;
    let blocked = blocked.filter(|_| residual_blocked || s.icg < TC_CHANNELS || staged.is_none());
    // A long reduction over a map too small to fill the GPU: the direct
    // kernel splits it over workgroups; the others leave it to the
    // split-reduction GEMM.
    let steps = s.kh * s.kw * s.icg.div_ceil(TC_CHANNELS);
    let small_map = default_workgroups < TC_FULL_WORKGROUPS;
    if !few_staged && im2col_pays(s, t, tile) {
        return Some(ConvKernel::CoopIm2col(tile));
    }
    if let Some(split) = split_staged(s, tile) {
        return Some(ConvKernel::CoopStaged(split, tile));
    }
    Some(match (blocked, staged) {
        _ if small_map && steps > TC_MAX_STEPS_STAGED && (blocked, staged) != (None, None) => {
            return None
        }
        (Some(b), _) => ConvKernel::CoopBlocked(b, tile),
        (None, Some(st)) => ConvKernel::CoopStaged(st, tile),
        (None, None) => {
            let flat = flat_pixels(s, tile);
            let subgroups = direct_subgroups(s, tile, flat);
            let each = steps / subgroups;
            let workgroups = match small_map && each > TC_MAX_STEPS_DIRECT {
                true => direct_splits(s, t, each, subgroups)?,
                false => 1,
            };
            let splits = Splits {
                workgroups,
                subgroups,
            };
            ConvKernel::CoopDirect(tile, flat, splits)
        }
    })
}

/// Whether a convolution runs on the tensor cores over an im2col copy of
/// its input (`coop_im2col.rs`): where its output rows fill at most
/// [`IM2COL_ROW_FILL`] of the runs the other kernels pad them to (or
/// [`IM2COL_HALF_FILL`] over a short reduction), while its
/// pixels as one row still fill [`TC_FULL_WORKGROUPS`] in `tile`, and the
/// copy fits a binding. One group whose channels come in runs of 16; a
/// 1x1 at stride 1 already runs its pixels as one row (`flat_pixels`).
fn im2col_pays(s: &ConvShape, t: &Target, tile: CoopTile) -> bool {
    let one_by_one = (s.kh, s.kw) == (1, 1) && s.strides == [1, 1] && s.padding == [0; 4];
    if one_by_one || s.groups != 1 || s.icg % TC_CHANNELS != 0 || !s.constant_filter {
        return false;
    }
    let run = tile.run(s.ow);
    let slots = s.ow.div_ceil(run) * run;
    let fills = |(num, den): (usize, usize)| s.ow * den <= slots * num;
    let steps = s.kh * s.kw * s.icg / TC_CHANNELS;
    let short = fills(IM2COL_HALF_FILL) && steps <= IM2COL_HALF_FILL_MAX_STEPS;
    if !(fills(IM2COL_ROW_FILL) || short) {
        return false;
    }
    let pixels = s.pixels();
    let workgroups = pixels.div_ceil(tile.run(pixels)) * s.ocg.div_ceil(16 * tile.blocks as usize);
    let k = s.kh * s.kw * s.icg;
    workgroups >= TC_FULL_WORKGROUPS && t.can_bind(super::coop_im2col::bytes(pixels, k))
}

/// Whether a convolution on a map too small for [`tensor_cores_fill`]
/// fills [`TC_MIN_WORKGROUPS`] subgroups in the small tile split as far
/// as [`split_staged`] can (8, 4 or 2 subgroups a row): YOLOv8n's head on
/// its 20x20 map at batch 1 (3x3 256 -> 64 and -> 80, 64 -> 64). The
/// layout pass still counts only [`tensor_cores_fill`].
fn split_fills(s: &ConvShape) -> bool {
    let rows = s.images * s.oh * s.ow.div_ceil(SHORT_RUN);
    let subgroups = rows * s.ocg.div_ceil(SMALL_TILE_CHANNELS) * s.groups;
    let blocks = s.icg / TC_CHANNELS;
    let splits = [8, 4, 2].into_iter().find(|&n| {
        s.icg % TC_CHANNELS == 0
            && blocks % n == 0
            && Staged::split((s.kh, s.kw), s.strides, s.dilations, SHORT_RUN, n).is_some()
    });
    splits.is_some_and(|n| subgroups * n >= TC_MIN_WORKGROUPS)
}

/// The staged kernel in one-row workgroups with each row's reduction split
/// over subgroups, where those workgroups unsplit number fewer than
/// [`TC_SPLIT_SUBGROUPS`]: the fewest splits (2, 4 or 8) that reach it,
/// else the most the group's 16-channel blocks and workgroup memory allow;
/// None where no split of 2 or more does.
fn split_staged(s: &ConvShape, tile: CoopTile) -> Option<Staged> {
    if s.icg % TC_CHANNELS != 0 {
        return None;
    }
    let run = tile.run(s.ow);
    let rows = s.images * s.oh * s.ow.div_ceil(run);
    let workgroups = rows * s.ocg.div_ceil(16 * tile.blocks as usize) * s.groups;
    let kernel = |n| Staged::split((s.kh, s.kw), s.strides, s.dilations, run, n);
    let splits = subgroup_splits(workgroups, s.icg / TC_CHANNELS, |n| kernel(n).is_some());
    kernel(splits).filter(|_| splits > 1)
}

/// Subgroups of a workgroup the direct tensor-core kernel splits each
/// tile's reduction over, as [`split_staged`] splits the staged kernel's
/// rows (1: none).
fn direct_subgroups(s: &ConvShape, tile: CoopTile, flat: bool) -> usize {
    let tiles = s.ocg.div_ceil(16 * tile.blocks as usize) * s.groups;
    let runs = match flat {
        true => s.pixels().div_ceil(tile.run(s.pixels())),
        false => s.images * s.oh * s.ow.div_ceil(tile.run(s.ow)),
    };
    subgroup_splits(runs * tiles, s.icg / TC_CHANNELS, |_| true)
}

/// The subgroups each of `workgroups` one-subgroup workgroups splits its
/// reduction of `blocks` 16-channel blocks over, where they number fewer
/// than [`TC_SPLIT_SUBGROUPS`]: the fewest of 2, 4 and 8 that divide
/// `blocks`, that the kernel `fits`, and reach it, else the most of those
/// (1: none).
fn subgroup_splits(workgroups: usize, blocks: usize, fits: impl Fn(usize) -> bool) -> usize {
    if workgroups >= TC_SPLIT_SUBGROUPS {
        return 1;
    }
    let mut chosen = 1;
    for n in [2, 4, 8].into_iter().filter(|n| blocks % n == 0) {
        if !fits(n) {
            break;
        }
        chosen = n;
        if workgroups * n >= TC_SPLIT_SUBGROUPS {
            break;
        }
    }
    chosen
}

/// Workgroups the direct tensor-core kernel splits a reduction of `steps`
/// (each of its `subgroups` subgroups' share) over: the fewest that divide
/// the group's 16-channel blocks a subgroup and leave each at most
/// [`TC_SPLIT_STEPS`], up to [`TC_MAX_SPLITS`] (None where their partial
/// sums pass what one binding holds).
fn direct_splits(s: &ConvShape, t: &Target, steps: usize, subgroups: usize) -> Option<usize> {
    let blocks = s.icg / TC_CHANNELS / subgroups;
    let divisors = (2..=TC_MAX_SPLITS.min(blocks)).filter(|d| blocks % d == 0);
    let splits = divisors
        .clone()
        .find(|d| steps / d <= TC_SPLIT_STEPS)
        .or_else(|| divisors.clone().next_back())?;
    let total = s.pixels() * s.oc;
    t.can_bind(gemm_split::scratch_bytes(splits, total))
        .then_some(splits)
}

/// Whether the direct tensor-core kernel runs a 1x1 stride-1 NHWC
/// convolution over all its images' pixels as one output row (they lie end
/// to end in x and y, so that a run crosses rows and images and only the
/// last run is short), in `tile`: where that still fills
/// [`FLAT_MIN_WORKGROUPS`] and pads less than rows.
fn flat_pixels(s: &ConvShape, tile: CoopTile) -> bool {
    let one_by_one = (s.kh, s.kw) == (1, 1)
        && s.strides == [1, 1]
        && s.padding == [0; 4]
        && s.nhwc
        && s.upsample.is_none();
    if !one_by_one {
        return false;
    }
    let tiles = s.ocg.div_ceil(16 * tile.blocks as usize) * s.groups;
    let pixels = s.pixels();
    let flat_run = tile.run(pixels);
    let row_run = tile.run(s.ow);
    let flat_slots = pixels.div_ceil(flat_run) * flat_run;
    let row_slots = s.images * s.oh * s.ow.div_ceil(row_run) * row_run;
    let workgroups = pixels.div_ceil(flat_run) * tiles;
    flat_slots < row_slots && workgroups >= FLAT_MIN_WORKGROUPS
}

/// The GEMM-shaped kernels, for groups of more outputs than the narrow
/// kernel holds (tensor cores took what they could).
fn gemm(s: &ConvShape, t: &Target, gemm_tiles: usize) -> ConvKernel {
    // A 3x3 at stride 1 with a constant filter and enough channels and
    // workgroups, in either layout: Winograd F(2x2, 3x3), 2.25x fewer
    // multiply-adds. Counted per image, as above.
    let geometry = (s.strides, s.dilations, s.groups);
    let winograd = Winograd::choose(geometry, [s.kh, s.kw], s.icg, s.ocg, [s.oh, s.ow])
        .filter(|_| s.floats && s.constant_filter)
        .filter(|w| t.fits_workgroup(w.workgroup_size(), w.workgroup_bytes()))
        .filter(|_| t.can_bind(Winograd::table_bytes(s.groups, s.icg, s.ocg)));
    if let Some(w) = winograd {
        return ConvKernel::Winograd(w);
    }
    // Few 64 x 64 tiles an image over a long reduction (ResNet's 3x3 on
    // 7x7 and 14x14 maps), in either layout: the reduction split over
    // workgroups, whichever tile a batch would take, so that a batch adds
    // up each output as its image alone does. The vec4 GEMM keeps each
    // tile's reduction in one workgroup: on an H100 a 7x7 512 -> 512 3x3
    // in NHWC took 0.411 ms there, 0.043 split.
    let splits = gemm_split::splits(gemm_tiles, s.icg * s.kh * s.kw);
    let total = s.pixels() * s.oc;
    if splits > 1 && t.can_bind(gemm_split::scratch_bytes(splits, total)) {
        return ConvKernel::SplitGemm { splits };
    }
    // Wider outputs over a short reduction (an RGB stem; in NCHW, a
    // 4-channel piece of a split concat, which in NHWC took the pointwise
    // kernel) stay on the GEMM kernels: the narrow kernel in runs of 8
    // channels measured 3x slower on an H100 (ESRGAN-slim's 3 -> 64 3x3 at
    // 960x540: 0.77 against 0.24 ms; its 4 -> 64 1x1 pieces 1.8 ms each).
    let vec4s = s.icg % 4 == 0 && s.ocg % 4 == 0;
    if s.constant_filter && s.floats && vec4s && s.nhwc {
        return ConvKernel::VecGemm(VecTile::choose(s.pixels(), s.ocg, s.groups));
    }
    // Wide tiles from WIDE_MIN_TILES of them on.
    let wide_tiles = s.pixels().div_ceil(WIDE_TILE_PIXELS) * s.channel_tiles() * s.groups;
    match wide_tiles >= WIDE_MIN_TILES {
        true => ConvKernel::GemmWide {
            along_k: s.channels_adjacent,
        },
        false => ConvKernel::Gemm64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One group of `icg` -> `ocg` with a `k` x `k` filter (padded to keep
    /// the size) onto a `size` x `size` map: float32 NHWC, a constant
    /// filter and a bias.
    fn conv(icg: usize, ocg: usize, k: usize, size: usize) -> ConvShape {
        ConvShape {
            nhwc: true,
            channels_adjacent: true,
            input_f16: false,
            filter_f16: false,
            floats: true,
            groups: 1,
            icg,
            ocg,
            oc: ocg,
            kh: k,
            kw: k,
            strides: [1, 1],
            dilations: [1, 1],
            padding: [k / 2; 4],
            oh: size,
            ow: size,
            images: 1,
            has_bias: true,
            has_scale: false,
            has_residual: false,
            upsample: None,
            constant_filter: true,
            quantized: false,
        }
    }

    fn f16(s: ConvShape) -> ConvShape {
        ConvShape {
            input_f16: true,
            filter_f16: true,
            ..s
        }
    }

    fn nchw(s: ConvShape) -> ConvShape {
        ConvShape {
            nhwc: false,
            channels_adjacent: false,
            ..s
        }
    }

    fn grouped(s: ConvShape, groups: usize) -> ConvShape {
        ConvShape {
            groups,
            oc: s.ocg * groups,
            ..s
        }
    }

    const TC: Target = Target {
        f16_tensor_cores: true,
        max_binding: u64::MAX,
        max_invocations: u32::MAX,
        max_workgroup_x: u32::MAX,
        max_workgroup_bytes: u32::MAX,
    };
    const NO_TC: Target = Target {
        f16_tensor_cores: false,
        ..TC
    };

    fn chosen(s: ConvShape, t: Target) -> ConvKernel {
        choose(&s, &t).unwrap()
    }

    #[test]
    fn a_quantized_conv_takes_the_int8_kernel_with_up_to_8_outputs_an_invocation() {
        let q = |s: ConvShape| ConvShape {
            quantized: true,
            ..s
        };
        let int8 = |outputs| ConvKernel::Int8 { outputs };
        // Wide layers, on tensor cores in float16 too, block 8 outputs.
        assert_eq!(chosen(q(conv(64, 64, 3, 80)), NO_TC), int8(8));
        assert_eq!(chosen(q(f16(conv(64, 64, 3, 80))), TC), int8(8));
        // Narrower groups one block of all of theirs; depthwise one.
        assert_eq!(chosen(q(conv(16, 7, 3, 32)), TC), int8(7));
        assert_eq!(chosen(q(grouped(conv(1, 1, 3, 32), 16)), TC), int8(1));
        // The same shapes unquantized take the float kernels.
        assert_ne!(chosen(conv(64, 64, 3, 80), NO_TC), int8(8));
    }

    #[test]
    fn a_1x1_runs_its_pixels_as_one_row_where_that_pads_less_and_fills_the_gpu() {
        let batch = |s: ConvShape, images| ConvShape { images, ..s };
        let kernel = |s| chosen(f16(s), TC);
        let flat = |s| matches!(kernel(s), ConvKernel::CoopDirect(_, true, _));
        // ResNet-50's 1x1 2048 -> 512 on 7x7 at batch 32: 7 of 32 pixels a
        // run as rows, 1568 end to end in 25 runs x 8 tiles = 200 workgroups.
        assert!(flat(batch(conv(2048, 512, 1, 7), 32)));
        // YOLOv8n's 1x1 on 80x80 (rows pad 80 to 96) at batch 1: 100 runs
        // of 64 pixels x 2 tiles of 64 channels.
        assert!(flat(conv(128, 128, 1, 80)));
        // Too few workgroups end to end: the rows' extra ones hide latency
        // (7x7 at batch 1: 1 run x 8 tiles).
        assert!(!flat(conv(2048, 512, 1, 7)));
        // Rows of whole runs pad nothing: no gain (64x64).
        assert!(!flat(batch(conv(256, 256, 1, 64), 8)));
        // Only a 1x1 at stride 1 without padding: a 3x3, a strided or a
        // padded 1x1 keeps its rows.
        assert!(!flat(batch(conv(128, 128, 3, 80), 8)));
        let strided = ConvShape {
            strides: [2, 2],
            ..batch(conv(256, 512, 1, 28), 32)
        };
        assert!(!flat(strided));
        let padded = ConvShape {
            padding: [1; 4],
            ..batch(conv(2048, 512, 1, 7), 32)
        };
        assert!(!flat(padded));
    }

    #[test]
    fn an_rgb_stem_of_up_to_16_outputs_takes_the_narrow_kernel() {
        let s2 = |s: ConvShape| ConvShape {
            strides: [2, 2],
            images: 32,
            ..s
        };
        // YOLO's 3 -> 16 3x3 stride 2, either float type and layout.
        for s in [
            conv(3, 16, 3, 320),
            f16(conv(3, 16, 3, 320)),
            nchw(conv(3, 16, 3, 320)),
        ] {
            assert_eq!(chosen(s2(s), TC), ConvKernel::Narrow);
            assert_eq!(chosen(s2(s), NO_TC), ConvKernel::Narrow);
        }
        // ResNet's 3 -> 64 7x7 and 5 -> 16 (not a stem) stay on a GEMM;
        // a stride-1 float16 RGB head of 16 takes the tensor cores first.
        assert!(matches!(
            chosen(s2(conv(3, 64, 7, 112)), TC),
            ConvKernel::GemmWide { .. }
        ));
        assert!(matches!(
            chosen(s2(conv(5, 16, 3, 320)), TC),
            ConvKernel::GemmWide { .. }
        ));
        assert!(matches!(
            chosen(f16(conv(3, 16, 3, 320)), TC),
            ConvKernel::CoopBlocked(..)
        ));
    }

    #[test]
    fn tensor_core_rows_take_the_run_that_pads_them_least() {
        use super::super::params::run_for;
        // Short runs where the row pads less: YOLO's 20 and 80, ResNet's
        // 7, 14 and 28; long ones where both pad alike (40, 56, 64, 320).
        for (ow, run) in [
            (7, 32),
            (14, 32),
            (20, 32),
            (28, 32),
            (80, 32),
            (40, 64),
            (56, 64),
            (64, 64),
            (320, 64),
        ] {
            assert_eq!(run_for(ow), run, "{ow}");
        }
    }

    #[test]
    fn an_upsampled_input_takes_the_upsampled_or_narrow_kernel_or_is_refused() {
        let up = |s: ConvShape| ConvShape {
            upsample: Some([2, 2]),
            ..s
        };
        assert!(matches!(
            chosen(up(conv(12, 3, 3, 32)), TC),
            ConvKernel::Upsampled(_)
        ));
        // NCHW: the narrow kernel reads through the upsample.
        assert_eq!(chosen(up(nchw(conv(12, 3, 3, 32))), TC), ConvKernel::Narrow);
        // Past the narrow kernel's outputs (one group): refused.
        let wide = up(conv(12, 16, 3, 32));
        assert_eq!(choose(&wide, &TC), Err(Refused::Upsample));
    }

    #[test]
    fn a_1x1_over_few_nhwc_inputs_takes_the_pointwise_kernel() {
        assert_eq!(
            chosen(conv(8, 64, 1, 64), TC),
            ConvKernel::Pointwise { vec4_input: true }
        );
        assert_eq!(
            chosen(conv(6, 64, 1, 64), TC),
            ConvKernel::Pointwise { vec4_input: false }
        );
        // Past pointwise::MAX_INPUTS: the vec4 GEMM.
        assert!(matches!(
            chosen(conv(20, 64, 1, 64), TC),
            ConvKernel::VecGemm(_)
        ));
    }

    #[test]
    fn few_outputs_over_a_long_nhwc_reduction_split_it_over_lanes() {
        assert!(matches!(
            chosen(conv(64, 4, 3, 32), TC),
            ConvKernel::Split(_)
        ));
        // NCHW: the narrow kernel.
        assert_eq!(chosen(nchw(conv(64, 4, 3, 32)), TC), ConvKernel::Narrow);
    }

    #[test]
    fn on_tensor_cores_more_than_four_few_outputs_take_the_16_channel_staged_tile() {
        let tile = |blocks| CoopTile {
            blocks,
            pairs: true,
            short: false,
        };
        assert!(matches!(
            chosen(f16(conv(32, 12, 3, 184)), TC),
            ConvKernel::CoopStaged(_, t) if t == tile(1)
        ));
        // SPLIT_TC_MAX_OUTPUTS outputs stay split; no tensor cores: split.
        assert!(matches!(
            chosen(f16(conv(64, SPLIT_TC_MAX_OUTPUTS, 3, 184)), TC),
            ConvKernel::Split(_)
        ));
        assert!(matches!(
            chosen(f16(conv(32, 12, 3, 184)), NO_TC),
            ConvKernel::Split(_)
        ));
    }

    #[test]
    fn small_maps_with_short_reductions_take_the_direct_kernel() {
        // 4 tiles of 64 x 64, 128 products an output.
        assert_eq!(
            chosen(conv(128, 32, 1, 16), TC),
            ConvKernel::Direct { lanes: LANES }
        );
        assert_eq!(
            chosen(conv(16, 24, 3, 16), TC),
            ConvKernel::Direct { lanes: 1 }
        );
        // SMALL_MAX_TILES tiles (64x64 pixels, 32 channels): the GEMM.
        assert!(matches!(
            chosen(conv(128, 32, 1, 64), TC),
            ConvKernel::VecGemm(_)
        ));
        // SMALL_MAX_REDUCTION + 32 products: the split reduction.
        assert_eq!(
            chosen(conv(32, 32, 3, 16), TC),
            ConvKernel::SplitGemm { splits: 4 }
        );
        // In float16, a batch that fills the tensor cores takes them (a
        // 20x20 1x1 128 -> 256 at batch 32); in float32 a batch takes what
        // one image takes.
        let batch = |s: ConvShape| ConvShape { images: 32, ..s };
        assert!(matches!(
            chosen(batch(f16(conv(128, 256, 1, 20))), TC),
            ConvKernel::CoopDirect(..)
        ));
        assert_eq!(
            chosen(batch(conv(128, 256, 1, 20)), TC),
            ConvKernel::Direct { lanes: LANES }
        );
        // One image of a 1x1 128 -> 128 on a 12x12 map fills 48
        // small tensor-core tiles, short of TC_MIN_WORKGROUPS (on 20x20:
        // 80, the tensor cores).
        assert_eq!(
            chosen(f16(conv(128, 128, 1, 12)), TC),
            ConvKernel::Direct { lanes: LANES }
        );
        assert!(matches!(
            chosen(f16(conv(128, 128, 1, 20)), TC),
            ConvKernel::CoopDirect(..)
        ));
    }

    #[test]
    fn tensor_cores_take_float16_nhwc_with_a_constant_filter() {
        let tile = CoopTile {
            blocks: 4,
            pairs: true,
            short: false,
        };
        let body = f16(conv(64, 64, 3, 320));
        assert!(matches!(chosen(body, TC), ConvKernel::CoopStaged(_, t) if t == tile));
        // TC_MIN_WORKGROUPS, in small tiles: 32 rows of one 32-pixel run
        // and two 32-channel tiles fill 64; 31 rows leave the tensor cores
        // to the GEMM kernels, where no split of the rows' reductions
        // fills them either (48 input channels: 3 blocks of 16).
        let short = CoopTile {
            blocks: 2,
            short: true,
            ..tile
        };
        assert!(matches!(
            chosen(f16(conv(48, 64, 3, 32)), TC),
            ConvKernel::CoopStaged(_, t) if t == short
        ));
        assert!(!matches!(
            chosen(f16(conv(48, 64, 3, 31)), TC),
            ConvKernel::CoopStaged(..) | ConvKernel::CoopBlocked(..) | ConvKernel::CoopDirect(..)
        ));
        // ... counted over the batch: two images of 31 rows fill 124.
        let two = ConvShape {
            images: 2,
            ..f16(conv(48, 64, 3, 31))
        };
        assert!(matches!(chosen(two, TC), ConvKernel::CoopStaged(..)));
        // A fused residual: the blocked copy's kernel.
        let residual = ConvShape {
            has_residual: true,
            ..body
        };
        assert!(matches!(chosen(residual, TC), ConvKernel::CoopBlocked(_, t) if t == tile));
        // ... but staged on a map in the small tile (its copy costs a
        // kernel there).
        let small_residual = ConvShape {
            has_residual: true,
            ..f16(conv(64, 64, 3, 32))
        };
        assert!(matches!(
            chosen(small_residual, TC),
            ConvKernel::CoopStaged(_, t) if t == short
        ));
        // ... unless its copy passes what a binding holds.
        let small = Target {
            max_binding: 1 << 18,
            ..TC
        };
        assert!(matches!(
            chosen(residual, small),
            ConvKernel::CoopStaged(..)
        ));
        // An RGB head: blocked, on the 32-channel tile.
        assert!(matches!(
            chosen(f16(conv(3, 32, 3, 96)), TC),
            ConvKernel::CoopBlocked(_, CoopTile { blocks: 2, .. })
        ));
        // Stride 2: A read straight from x.
        let strided = ConvShape {
            strides: [2, 2],
            ..body
        };
        assert_eq!(
            chosen(strided, TC),
            ConvKernel::CoopDirect(tile, false, Splits::NONE)
        );
        // Not taken: an input scale, NCHW, no tensor cores, a filter that
        // is not a constant, or narrow groups of 8 input channels.
        let scaled = ConvShape {
            has_scale: true,
            ..body
        };
        let filter_input = ConvShape {
            constant_filter: false,
            ..body
        };
        for (s, t) in [
            (scaled, TC),
            (nchw(body), TC),
            (body, NO_TC),
            (filter_input, TC),
            (grouped(f16(conv(8, 32, 3, 64)), 2), TC),
        ] {
            let k = chosen(s, t);
            assert!(
                !matches!(
                    k,
                    ConvKernel::CoopBlocked(..)
                        | ConvKernel::CoopStaged(..)
                        | ConvKernel::CoopDirect(..)
                ),
                "{s:?}: {k:?}"
            );
        }
    }

    #[test]
    fn depthwise_and_narrow_groups_take_the_pixel_kernels() {
        let depthwise = grouped(conv(1, 1, 3, 64), 32);
        assert_eq!(
            chosen(depthwise, TC),
            ConvKernel::Depthwise { kh: 3, kw: 3 }
        );
        // Past DEPTHWISE_MAX_TAPS taps: the direct kernel.
        let large = grouped(conv(1, 1, 9, 64), 32);
        assert_eq!(chosen(large, TC), ConvKernel::Direct { lanes: 1 });
        // Groups of 2 outputs from 32 inputs: LANES a sum; of 16 inputs: one.
        assert_eq!(
            chosen(grouped(conv(32, 2, 3, 64), 16), TC),
            ConvKernel::Direct { lanes: LANES }
        );
        assert_eq!(
            chosen(grouped(conv(16, 2, 3, 64), 16), TC),
            ConvKernel::Direct { lanes: 1 }
        );
    }

    #[test]
    fn one_group_of_few_outputs_takes_the_narrow_kernel_with_a_constant_filter() {
        assert_eq!(chosen(conv(12, 3, 3, 32), TC), ConvKernel::Narrow);
        let filter_input = ConvShape {
            constant_filter: false,
            ..conv(12, 3, 3, 32)
        };
        assert_eq!(chosen(filter_input, TC), ConvKernel::Direct { lanes: 1 });
    }

    #[test]
    fn a_3x3_with_enough_workgroups_takes_winograd_where_it_fits() {
        let body = conv(64, 64, 3, 184);
        assert_eq!(chosen(body, TC), ConvKernel::Winograd(Winograd));
        assert_eq!(chosen(f16(body), NO_TC), ConvKernel::Winograd(Winograd));
        // A device whose workgroups hold less, or whose bindings do not
        // hold the table: the vec4 GEMM.
        let small = Target {
            max_invocations: 256,
            ..TC
        };
        assert!(matches!(chosen(body, small), ConvKernel::VecGemm(_)));
        let small = Target {
            max_binding: 1024,
            ..TC
        };
        assert!(matches!(chosen(body, small), ConvKernel::VecGemm(_)));
    }

    #[test]
    fn few_tiles_over_a_long_reduction_split_it_where_the_scratch_binds() {
        let deep = nchw(conv(512, 512, 3, 7));
        assert_eq!(chosen(deep, TC), ConvKernel::SplitGemm { splits: 33 });
        let small = Target {
            max_binding: 1024,
            ..TC
        };
        assert_eq!(chosen(deep, small), ConvKernel::Gemm64);
    }

    #[test]
    fn the_plain_gemms_take_the_rest_wide_from_wide_min_tiles() {
        // NHWC with a constant filter in runs of 4: the vec4 GEMM.
        assert_eq!(
            chosen(conv(64, 64, 1, 128), TC),
            ConvKernel::VecGemm(VecTile::choose(128 * 128, 64, 1))
        );
        // NCHW: 128 wide tiles, then 264 (WIDE_MIN_TILES).
        assert_eq!(chosen(nchw(conv(64, 64, 1, 128)), TC), ConvKernel::Gemm64);
        let wide = ConvShape {
            oh: 264,
            ow: 128,
            ..nchw(conv(64, 64, 1, 128))
        };
        assert_eq!(chosen(wide, TC), ConvKernel::GemmWide { along_k: false });
        let filter_input = ConvShape {
            constant_filter: false,
            oh: 264,
            ..conv(64, 64, 1, 128)
        };
        assert_eq!(
            chosen(filter_input, TC),
            ConvKernel::GemmWide { along_k: true }
        );
        let narrower = ConvShape {
            oh: 263,
            ..filter_input
        };
        assert_eq!(chosen(narrower, TC), ConvKernel::Gemm64);
    }

    #[test]
    fn small_maps_split_each_rows_reduction_over_the_staged_kernels_subgroups() {
        let splits = |s| match chosen(s, TC) {
            ConvKernel::CoopStaged(staged, _) => staged.splits(),
            other => panic!("{other:?}"),
        };
        let strided = |s: ConvShape| ConvShape {
            strides: [2, 2],
            ..s
        };
        // YOLOv8n at batch 1: 3x3 128 -> 128 on 20x20, 80 one-row
        // workgroups of 32 channels: 8 splits (640 subgroups, past
        // TC_SPLIT_SUBGROUPS); 64 -> 64 on 40x40 (160): 4; 32 -> 32 on
        // 80x80 (240): 2, all its 16-channel blocks; its 3x3 stride-2
        // 128 -> 256 onto 20x20 (160): 4.
        assert_eq!(splits(f16(conv(128, 128, 3, 20))), 8);
        assert_eq!(splits(f16(conv(64, 64, 3, 40))), 4);
        assert_eq!(splits(f16(conv(32, 32, 3, 80))), 2);
        assert_eq!(splits(strided(f16(conv(128, 256, 3, 20)))), 4);
        // ResNet-50's 3x3 512 -> 512 on 7x7: 112 workgroups, 8 splits;
        // at stride 2 the patches of 65 columns hold 4 in workgroup memory.
        assert_eq!(splits(f16(conv(512, 512, 3, 7))), 8);
        assert_eq!(splits(strided(f16(conv(512, 512, 3, 7)))), 4);
        // Its head's 3x3 256 -> 64 on 20x20 fills too few workgroups for
        // the tensor cores unsplit (40), 8 times that split; 80 -> 80 (5
        // blocks of 16, which no split divides) keeps the other kernels.
        assert_eq!(splits(f16(conv(256, 64, 3, 20))), 8);
        assert!(!matches!(
            chosen(f16(conv(80, 80, 3, 20)), TC),
            ConvKernel::CoopStaged(..)
        ));
        // Enough one-row workgroups (80x80 64 -> 80, 720), or a batch:
        // not split.
        assert_eq!(splits(f16(conv(64, 80, 3, 80))), 1);
        let batch = ConvShape {
            images: 8,
            ..f16(conv(128, 128, 3, 20))
        };
        assert_eq!(splits(batch), 1);
        // 16-channel blocks that 2 does not divide (48 channels: 3), and
        // dilations, are not split.
        assert_eq!(splits(f16(conv(48, 64, 3, 40))), 1);
        let dilated = ConvShape {
            dilations: [2, 2],
            ..f16(conv(64, 64, 3, 40))
        };
        assert!(!matches!(chosen(dilated, TC), ConvKernel::CoopStaged(..)));
    }

    #[test]
    fn tensor_cores_leave_long_reductions_on_small_maps_to_the_split_gemm() {
        // A 3x3 144 -> 512 on 7x7: 81 steps over 56 default workgroups,
        // in 9 blocks of 16 channels that no split divides: the split GEMM.
        assert!(matches!(
            chosen(f16(conv(144, 512, 3, 7)), TC),
            ConvKernel::SplitGemm { .. }
        ));
        // ResNet-50's 1x1 1024 -> 256 on 14x14: 112 one-subgroup
        // workgroups, each tile's 64 steps split over 8 subgroups (to
        // TC_SPLIT_SUBGROUPS), 8 steps each: no workgroup split; alike
        // its 512 -> 128 on 28x28 (112 workgroups, 32 steps).
        let direct = |workgroups, subgroups| Splits {
            workgroups,
            subgroups,
        };
        assert!(matches!(
            chosen(f16(conv(1024, 256, 1, 14)), TC),
            ConvKernel::CoopDirect(_, false, d) if d == direct(1, 8)
        ));
        assert!(matches!(
            chosen(f16(conv(512, 128, 1, 28)), TC),
            ConvKernel::CoopDirect(_, true, d) if d == direct(1, 8)
        ));
        // 8192 -> 32 on 40x40: 80 workgroups, 8 subgroups, whose 64
        // steps each pass TC_MAX_STEPS_DIRECT: 8 workgroup splits too.
        assert!(matches!(
            chosen(f16(conv(8192, 32, 1, 40)), TC),
            ConvKernel::CoopDirect(_, false, d) if d == direct(8, 8)
        ));
        // At batch 32 the 14x14 one takes the default tile as one row, 392
        // workgroups: 2 subgroups; batch 64 fills the GPU unsplit.
        let batch = |images| ConvShape {
            images,
            ..f16(conv(1024, 256, 1, 14))
        };
        assert!(matches!(
            chosen(batch(32), TC),
            ConvKernel::CoopDirect(_, true, d) if d == direct(1, 2)
        ));
        assert!(matches!(
            chosen(batch(64), TC),
            ConvKernel::CoopDirect(_, true, Splits::NONE)
        ));
        // A dilated 3x3 2048 -> 512 on 7x7 (which the staged kernel does
        // not take): 1152 steps, 144 a subgroup of 8, past
        // TC_MAX_STEPS_DIRECT: 16 workgroup splits of 9 steps.
        let strided = ConvShape {
            dilations: [2, 2],
            ..f16(conv(2048, 512, 3, 7))
        };
        assert!(matches!(
            chosen(strided, TC),
            ConvKernel::CoopDirect(_, false, d) if d == direct(16, 8)
        ));
        // ... unless the partial sums pass what a binding holds.
        let small = Target {
            max_binding: 1 << 16,
            ..TC
        };
        assert!(!matches!(
            chosen(strided, small),
            ConvKernel::CoopDirect(..)
        ));
        // 72 staged steps (3x3 128 -> 128 on 20x20) keep the staged
        // kernel, in the small tile.
        assert!(matches!(
            chosen(f16(conv(128, 128, 3, 20)), TC),
            ConvKernel::CoopStaged(_, CoopTile { short: true, .. })
        ));
        // A map that fills TC_FULL_WORKGROUPS keeps them whatever its
        // reduction.
        assert!(matches!(
            chosen(f16(conv(512, 512, 3, 128)), TC),
            ConvKernel::CoopStaged(_, CoopTile { short: false, .. })
        ));
    }

    #[test]
    fn short_rows_over_a_batch_that_fills_the_gpu_take_an_im2col_copy() {
        let batch = |s: ConvShape, images| ConvShape { images, ..s };
        let strided = |s: ConvShape| ConvShape {
            strides: [2, 2],
            ..s
        };
        // ResNet-50 at batch 32: 3x3 stride 2 onto 7x7 and 3x3 on 7x7 (7
        // of a run's 32 pixels), the 1x1 stride-2 shortcuts onto 7x7 and
        // onto 14x14 (14 of 32, over 32 steps), but not its 3x3 on 14x14
        // (14 of 32 over 144 steps).
        let im2col = |s| matches!(chosen(s, TC), ConvKernel::CoopIm2col(_));
        assert!(im2col(batch(strided(f16(conv(512, 512, 3, 7))), 32)));
        assert!(im2col(batch(f16(conv(512, 512, 3, 7)), 32)));
        let shortcut = |icg, ocg, size| ConvShape {
            padding: [0; 4],
            ..batch(strided(f16(conv(icg, ocg, 1, size))), 32)
        };
        assert!(im2col(shortcut(1024, 2048, 7)));
        assert!(im2col(shortcut(512, 1024, 14)));
        assert!(!im2col(batch(f16(conv(256, 256, 3, 14)), 32)));
        // Rows of 20 fill 20 of 32, past IM2COL_ROW_FILL (YOLO's 20x20).
        assert!(!im2col(batch(f16(conv(128, 128, 3, 20)), 32)));
        // One image's 7x7: its pixels as one row fill too few workgroups.
        assert!(!im2col(strided(f16(conv(512, 512, 3, 7)))));
        // A 1x1 at stride 1 runs its pixels as one row already.
        assert!(!im2col(batch(f16(conv(1024, 256, 1, 7)), 32)));
        // Not without tensor cores, nor over groups, nor past a binding.
        let resnet = batch(f16(conv(512, 512, 3, 7)), 32);
        assert!(!matches!(chosen(resnet, NO_TC), ConvKernel::CoopIm2col(_)));
        assert!(!im2col(grouped(resnet, 2)));
        let small = Target {
            max_binding: 1568 * 4608 * 2 - 1,
            ..TC
        };
        assert!(!matches!(chosen(resnet, small), ConvKernel::CoopIm2col(_)));
    }
}
