//! Lowering a graph to GPU work: buffers for every operand (intermediates
//! reused by liveness), pipelines compiled once, and the list of steps a
//! dispatch encodes. Each kernel's parameters travel as the bytes of its
//! `Params` struct in a uniform buffer; its WGSL is specialised (types,
//! switches, generated helpers) with [`Specialization`] lines only, never
//! with sizes, so a new input size reuses every pipeline. Tests lower with
//! no GPU at all (`Lowering::record`) to check every kernel variant.

use std::fmt::Write;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu, Specialization};
use crate::ml::graph_ir::{GraphIr, OperandId};
use crate::ml::ops::{Activation, GELU_TANH_CUBE, GELU_TANH_SCALE};
use crate::ml::types::DataType;

/// A range of a buffer holding one operand.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub buffer: crate::gpu::live::Buffer,
    pub size: u64,
}

impl Slot {
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: 0,
            size: wgpu::BufferSize::new(self.size),
        })
    }
}

pub(crate) enum Step {
    Kernel {
        label: String,
        /// For profiles: the node it runs and its workgroups.
        detail: String,
        pipeline: crate::gpu::live::ComputePipeline,
        bind_group: wgpu::BindGroup,
        workgroups: [u32; 3],
    },
    Copy {
        src: Slot,
        dst: Slot,
    },
}

/// Axes the rank-N kernels (broadcasting element-wise ops, prelu, strided
/// views, pad, reductions, matmul's batch) take in their `Params`: each axis
/// is one `vec4<u32>` of a uniform array. Size-1 axes are dropped and runs of
/// axes contiguous in every operand merged first ([`axes`]), so only tensors
/// that cannot be folded to 8 axes are refused.
pub(crate) const MAX_RANK: usize = 8;

/// A kernel's `Params`: a `#[repr(C)]` `Pod` struct mirroring, field by
/// field, the WGSL `struct Params` its shader declares and reads as
/// `params` (binding 0, a uniform). Declare one with `kernel_params!`.
pub(crate) trait KernelParams: bytemuck::Pod {
    /// Every field (padding too), for the test that checks the WGSL struct
    /// against the Rust one.
    #[cfg(test)]
    const FIELDS: &'static [ParamField];
}

/// One field of a [`KernelParams`] struct as Rust lays it out.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParamField {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    /// The Rust type as written (`u32`, `[u32; 4]`, `[[u32; 4]; MAX_RANK]`).
    pub ty: &'static str,
}

/// Declares a kernel's `Params` struct (written out with its `#[repr(C)]`
/// and `Pod` derives) and its [`KernelParams`] field list. Fields whose name
/// starts with `_` are padding that WGSL inserts implicitly (before a
/// `vec4`, at the end of a struct whose size rounds up to 16 bytes).
macro_rules! kernel_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }

        impl $crate::ml::gpu::lower::KernelParams for $name {
            #[cfg(test)]
            const FIELDS: &'static [$crate::ml::gpu::lower::ParamField] = &[$(
                $crate::ml::gpu::lower::ParamField {
                    name: stringify!($field),
                    offset: std::mem::offset_of!($name, $field),
                    size: std::mem::size_of::<$ty>(),
                    ty: stringify!($ty),
                },
            )*];
        }
    };
}
pub(crate) use kernel_params;

/// A kernel's `Params` as the bytes of its uniform buffer.
pub(crate) struct ParamBytes {
    bytes: Vec<u8>,
    #[cfg(test)]
    fields: &'static [ParamField],
}

/// One compute dispatch, as an op's lowering describes it.
///
/// The shader source is the kernel body, which declares `struct Params`;
/// the lowering puts a prelude before it (a [`Specialization`]): `alias T`
/// (the output element type), `alias TI` (the first input's type), `const
/// WG: u32` (the workgroup size), `const MAX_RANK: u32`, `params: Params` as
/// a uniform at binding 0, `fn act(f32) -> f32` (the fused activations),
/// `fn flat_id(gid, nwg) -> u32`, then the kernel's own `spec` lines
/// (switches and generated helpers). Inputs are bound read-only at bindings
/// 1.., outputs read-write after them, then `table` if any; every binding
/// must be used by the shader.
pub(crate) struct Kernel<'a> {
    pub label: String,
    pub source: &'a str,
    pub spec: Specialization,
    pub output_type: DataType,
    pub input_type: DataType,
    pub activations: &'a [Activation],
    pub params: ParamBytes,
    /// Data the lowering computed for this kernel alone, too large for a
    /// uniform: a storage buffer bound after the outputs, made once with
    /// these contents. Read-only tables (resample2d's taps), or a kernel's
    /// own read-write scratch that it leaves as it found it at the end of
    /// each dispatch (squeeze_excite's per-workgroup sums and counts).
    pub table: Option<Vec<u32>>,
    pub inputs: Vec<OperandId>,
    pub outputs: Vec<OperandId>,
    pub workgroups: [u32; 3],
    pub workgroup_size: u32,
}

impl Kernel<'_> {
    /// `p` as its uniform buffer's bytes.
    pub fn params<P: KernelParams>(p: &P) -> ParamBytes {
        ParamBytes {
            bytes: bytemuck::bytes_of(p).to_vec(),
            #[cfg(test)]
            fields: P::FIELDS,
        }
    }
}

/// A scratch buffer of the lowering ([`Lowering::scratch`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScratchId(usize);

/// Where a kernel's scratch buffer is bound.
#[derive(Clone, Copy, Debug)]
enum ScratchAt {
    /// Binding 1, before the inputs.
    First,
    /// After the outputs, before any table.
    AfterOutputs,
}

/// What the device offers that the lowering's choices depend on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    pub shader_f16: bool,
    /// 16x16x16 f16 -> f32 cooperative matrices (conv2d's tensor-core kernel).
    pub f16_tensor_cores: bool,
}

/// A kernel as a recording lowering saw it (tests).
#[cfg(test)]
pub(crate) struct Recorded {
    pub label: String,
    pub source: String,
    pub params: Vec<u8>,
    pub fields: &'static [ParamField],
    /// Storage buffers bound after the params: inputs, outputs, table.
    pub storage_bindings: usize,
}

pub(crate) struct Lowering<'a> {
    /// None when recording (tests): kernels are described, nothing is
    /// allocated or compiled.
    gpu: Option<&'a Gpu>,
    pub ir: &'a GraphIr,
    pub target: Target,
    slots: Vec<Option<Slot>>,
    free: Vec<crate::gpu::live::Buffer>,
    pub buffers: Vec<crate::gpu::live::Buffer>,
    pub steps: Vec<Step>,
    /// Buffers a node's kernels share for its own use, by [`ScratchId`]
    /// (none while recording).
    scratches: Vec<Option<Slot>>,
    /// What the node being lowered computes ([`GraphIr::describe`]), for
    /// the profile lines of its kernels.
    pub node_detail: String,
    /// Where the node being lowered stores its result within a concat's
    /// output (`concat_writes.rs`), if it does.
    pub placement: Option<super::concat_writes::Placement>,
    /// For a concat node: which operands their writers already stored.
    pub written: Vec<bool>,
    /// For a binary node: the slices its operands are read through
    /// (`slice_reads.rs`).
    pub views: [Option<super::slice_reads::SliceView>; 2],
    /// Operands whose slot is another's buffer (a writer's result in its
    /// concat's output): releasing them frees nothing.
    aliased: Vec<bool>,
    #[cfg(test)]
    pub recorded: Vec<Recorded>,
}

/// The whole WGSL of a kernel: its directives, the shared prelude (element
/// types, params, fused activations, `flat_id`), its own specialisation,
/// then its body.
fn kernel_source(k: &Kernel<'_>) -> String {
    let f16 = k.output_type == DataType::Float16 || k.input_type == DataType::Float16;
    let spec = activations(
        Specialization::new()
            .alias("T", wgsl_type(k.output_type))
            .alias("TI", wgsl_type(k.input_type))
            .u32("WG", k.workgroup_size)
            .u32("MAX_RANK", MAX_RANK as u32)
            .code("@group(0) @binding(0) var<uniform> params: Params;"),
        k.activations,
    )
    .code(
        "fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 { return gid.x + gid.y * nwg.x * WG; }",
    )
    .code(k.spec.text());
    spec.module(if f16 { &["f16"] } else { &[] }, k.source)
}

fn wgsl_type(dt: DataType) -> &'static str {
    match dt {
        DataType::Float32 => "f32",
        DataType::Float16 => "f16",
        DataType::Int32 => "i32",
        // uint8 tensors are packed four to a u32 word.
        DataType::Uint8 => "u32",
    }
}

/// `fn act(v: f32) -> f32`: the fused activations in order, their
/// constants as `ACT<i>_<NAME>` lines.
fn activations(spec: Specialization, acts: &[Activation]) -> Specialization {
    activation_fn(activation_helpers(spec, acts, &[]), "act", "ACT", acts)
}

/// The helpers `acts` call that `present` (whose helpers the module already
/// has) do not.
pub(crate) fn activation_helpers(
    mut spec: Specialization,
    acts: &[Activation],
    present: &[Activation],
) -> Specialization {
    let needs = |f: fn(&Activation) -> bool| acts.iter().any(f) && !present.iter().any(f);
    if needs(|a| matches!(a, Activation::Log | Activation::Sqrt)) {
        spec = spec.code(SPECIAL_VALUES);
    }
    if needs(|a| matches!(a, Activation::Erf | Activation::Gelu)) {
        spec = spec.code(ERF);
    }
    if needs(|a| matches!(a, Activation::Softplus | Activation::Mish)) {
        spec = spec.code(LOG1P);
    }
    spec
}

/// `fn <name>(v: f32) -> f32` applying `acts` in order, their constants as
/// `<prefix><i>_<NAME>` lines; the helpers they call come from
/// [`activation_helpers`].
pub(crate) fn activation_fn(
    mut spec: Specialization,
    name: &str,
    prefix: &str,
    acts: &[Activation],
) -> Specialization {
    let mut body = String::new();
    for (i, a) in acts.iter().enumerate() {
        let c = |name: &str| format!("{prefix}{i}_{name}");
        let line = match *a {
            Activation::Relu => "y = max(y, 0.0);".to_string(),
            Activation::Clamp { min, max } => {
                spec = spec.f32(&c("MIN"), min).f32(&c("MAX"), max);
                format!("y = clamp(y, {}, {});", c("MIN"), c("MAX"))
            }
            Activation::Sigmoid => "y = 1.0 / (1.0 + exp(-y));".to_string(),
            Activation::Tanh => "y = tanh(clamp(y, -15.0, 15.0));".to_string(),
            Activation::LeakyRelu { alpha } => {
                spec = spec.f32(&c("ALPHA"), alpha);
                format!("y = select({} * y, y, y >= 0.0);", c("ALPHA"))
            }
            Activation::HardSwish => "y = y * clamp(y + 3.0, 0.0, 6.0) / 6.0;".to_string(),
            Activation::HardSigmoid { alpha, beta } => {
                spec = spec.f32(&c("ALPHA"), alpha).f32(&c("BETA"), beta);
                format!("y = clamp({} * y + {}, 0.0, 1.0);", c("ALPHA"), c("BETA"))
            }
            Activation::Linear { alpha, beta } => {
                spec = spec.f32(&c("ALPHA"), alpha).f32(&c("BETA"), beta);
                format!("y = y * {} + {};", c("ALPHA"), c("BETA"))
            }
            Activation::Abs => "y = abs(y);".to_string(),
            Activation::Neg => "y = -y;".to_string(),
            Activation::Exp => "y = exp(y);".to_string(),
            // WGSL's log and sqrt are undefined below 0 (and log at 0): C's
            // results, explicitly.
            Activation::Log => {
                "y = select(select(log(y), -inf_f32(), y == 0.0), nan_f32(), y < 0.0);".to_string()
            }
            Activation::Sqrt => "y = select(sqrt(y), nan_f32(), y < 0.0);".to_string(),
            Activation::Reciprocal => "y = 1.0 / y;".to_string(),
            Activation::Erf => "y = erf_f32(y);".to_string(),
            Activation::Elu { alpha } => {
                spec = spec.f32(&c("ALPHA"), alpha);
                format!("y = select({} * (exp(y) - 1.0), y, y > 0.0);", c("ALPHA"))
            }
            Activation::Softplus => format!("y = {SOFTPLUS};"),
            Activation::Silu => "y = y / (1.0 + exp(-y));".to_string(),
            Activation::Gelu => {
                "y = 0.5 * y * (1.0 + erf_f32(y * 0.70710678118654752));".to_string()
            }
            Activation::GeluTanh => {
                spec = spec
                    .f32(&c("SCALE"), GELU_TANH_SCALE as f32)
                    .f32(&c("CUBE"), GELU_TANH_CUBE as f32);
                format!(
                    "y = 0.5 * y * (1.0 + tanh(clamp({} * (y + {} * y * y * y), -15.0, 15.0)));",
                    c("SCALE"),
                    c("CUBE")
                )
            }
            // softplus is at least 0, and tanh of it 1 from 15 on.
            Activation::Mish => format!("y = y * tanh(min({SOFTPLUS}, 15.0));"),
            Activation::Cos => "y = cos(y);".to_string(),
            Activation::Sin => "y = sin(y);".to_string(),
            Activation::Ceil => "y = ceil(y);".to_string(),
            Activation::Floor => "y = floor(y);".to_string(),
            Activation::FakeQuantize {
                inv_scale,
                scale,
                zero,
                lo,
                hi,
            } => {
                spec = spec
                    .f32(&c("INV"), inv_scale)
                    .f32(&c("SCALE"), scale)
                    .f32(&c("ZERO"), zero)
                    .f32(&c("LO"), lo)
                    .f32(&c("HI"), hi);
                let (inv, z) = (c("INV"), c("ZERO"));
                format!(
                    "y = (clamp(round(y * {inv}) + {z}, {}, {}) - {z}) * {};",
                    c("LO"),
                    c("HI"),
                    c("SCALE")
                )
            }
        };
        let _ = writeln!(body, "    {line}");
    }
    spec.code(&format!(
        "fn {name}(v: f32) -> f32 {{\n    var y = v;\n{body}    return y;\n}}"
    ))
}

/// softplus(y): max(y, 0) + ln(1 + e^-|y|) neither overflows nor takes the
/// log of anything below 1; `log1p_f32` keeps e^y for very negative y, where
/// 1 + e^y rounds to 1.
const SOFTPLUS: &str = "select(max(y, 0.0) + log1p_f32(exp(-abs(y))), y, y > 20.0)";

/// NaN and infinity as run-time values: WGSL has no literals for them, and
/// a constant expression that makes one is an error.
pub(crate) const SPECIAL_VALUES: &str = "\
fn nan_f32() -> f32 { var bits = 0x7fc00000u; return bitcast<f32>(bits); }
fn inf_f32() -> f32 { var bits = 0x7f800000u; return bitcast<f32>(bits); }";

/// ln(1 + u) for u >= 0, exact to a few ulp for small u too (Goldberg's
/// correction: the log of the rounded 1 + u, scaled by how u was rounded).
const LOG1P: &str = "\
fn log1p_f32(u: f32) -> f32 {
    let w = 1.0 + u;
    if w == 1.0 {
        return u;
    }
    return log(w) * u / (w - 1.0);
}";

/// erf by Abramowitz & Stegun 7.1.26 (absolute error at most 1.5e-7).
const ERF: &str = "\
fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
        + t * (-1.453152027 + t * 1.061405429))));
    let r = 1.0 - p * exp(-a * a);
    return select(r, -r, x < 0.0);
}";

/// `shape`'s axes as the rank-N kernels take them: per axis `[extent,
/// stride in operand 0, stride in operand 1, ...]` (unused lanes 0), with
/// size-1 axes dropped and each run of axes that is contiguous in every
/// operand merged into one, so that kernels divide as little as possible
/// per element. Refuses what still has more than [`MAX_RANK`] axes.
pub(crate) fn axes(
    what: &str,
    shape: &[usize],
    strides: &[&[usize]],
) -> Result<(u32, [[u32; 4]; MAX_RANK])> {
    debug_assert!(strides.len() < 4);
    let merged = fold_axes(shape, strides);
    let rank = check_rank(what, shape.len(), merged.len())?;
    let mut out = [[0u32; 4]; MAX_RANK];
    for (slot, (extent, s)) in out.iter_mut().zip(&merged) {
        slot[0] = *extent as u32;
        for (lane, &v) in slot[1..].iter_mut().zip(s) {
            *lane = v as u32;
        }
    }
    Ok((rank, out))
}

/// `shape`'s axes as `(extent, stride in each operand)`, size-1 axes
/// dropped and each run of axes contiguous in every operand merged.
pub(crate) fn fold_axes(shape: &[usize], strides: &[&[usize]]) -> Vec<(usize, Vec<usize>)> {
    let mut merged: Vec<(usize, Vec<usize>)> = Vec::new();
    for (k, &extent) in shape.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        let s: Vec<usize> = strides.iter().map(|st| st[k]).collect();
        // Row-major: the previous axis continues this one when each
        // operand's stride there is this axis's stride times its extent.
        if let Some((e, prev)) = merged.last_mut() {
            if prev.iter().zip(&s).all(|(&p, &q)| p == q * extent) {
                *e *= extent;
                *prev = s;
                continue;
            }
        }
        merged.push((extent, s));
    }
    merged
}

/// `rank` (of a tensor of `original` axes, once folded) as a `Params` field,
/// if the kernels take that many.
pub(crate) fn check_rank(what: &str, original: usize, rank: usize) -> Result<u32> {
    if rank > MAX_RANK {
        return Err(Error::invalid(format!(
            "{what}: a tensor of {original} axes that folds to no fewer than {rank} is more \
             than the GPU kernels take ({MAX_RANK})"
        )));
    }
    Ok(rank as u32)
}

/// Workgroup counts covering `threads` invocations of `wg` each, folded into
/// two dimensions so that no dimension passes the 65535 limit.
pub(crate) fn grid(threads: usize, wg: u32) -> [u32; 3] {
    let groups = threads.div_ceil(wg as usize).max(1);
    let x = groups.min(65535);
    [x as u32, groups.div_ceil(x) as u32, 1]
}

impl<'a> Lowering<'a> {
    pub fn new(gpu: &'a Gpu, ir: &'a GraphIr) -> Self {
        let target = Target {
            shader_f16: gpu.has(wgpu::Features::SHADER_F16),
            f16_tensor_cores: gpu.has_f16_tensor_cores(),
        };
        Self::with(Some(gpu), ir, target)
    }

    /// A lowering that records each kernel (label, source, params) instead
    /// of compiling it: tests enumerate kernel variants with it, no GPU.
    #[cfg(test)]
    pub fn record(ir: &'a GraphIr, target: Target) -> Self {
        Self::with(None, ir, target)
    }

    fn with(gpu: Option<&'a Gpu>, ir: &'a GraphIr, target: Target) -> Self {
        Lowering {
            gpu,
            ir,
            target,
            slots: vec![None; ir.operands.len()],
            free: Vec::new(),
            buffers: Vec::new(),
            steps: Vec::new(),
            scratches: Vec::new(),
            node_detail: String::new(),
            placement: None,
            written: Vec::new(),
            views: [None, None],
            aliased: vec![false; ir.operands.len()],
            #[cfg(test)]
            recorded: Vec::new(),
        }
    }

    /// The device's limits; a recording lowering has none.
    pub fn limits(&self) -> Option<wgpu::Limits> {
        self.gpu.map(|g| g.limits())
    }

    /// Whether a buffer of `bytes` can be bound as storage on this device
    /// (a recording lowering assumes so).
    pub fn can_bind(&self, bytes: u64) -> bool {
        self.gpu
            .is_none_or(|g| bytes <= g.limits().max_storage_buffer_binding_size)
    }

    /// The device; only a recording lowering has none, and it never gets as
    /// far as allocating.
    fn gpu(&self) -> &'a Gpu {
        self.gpu.expect("a recording lowering allocates nothing")
    }

    pub fn slot(&self, id: OperandId) -> &Slot {
        self.slots[id]
            .as_ref()
            .expect("operand has a buffer before use")
    }

    fn size_of(&self, id: OperandId) -> u64 {
        (self.ir.desc(id).byte_length() as u64).div_ceil(4).max(1) * 4
    }

    fn new_buffer(&mut self, size: u64, label: &str) -> Result<crate::gpu::live::Buffer> {
        let gpu = self.gpu();
        let max = gpu.limits().max_storage_buffer_binding_size;
        if size > max {
            return Err(Error::invalid(format!(
                "{label} needs {size} bytes, more than this GPU's max_storage_buffer_binding_size ({max})"
            )));
        }
        let buffer = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })?;
        self.buffers.push(buffer.clone());
        Ok(buffer)
    }

    /// Gives `id` a buffer of its own for the whole graph (inputs, outputs).
    pub fn pin(&mut self, id: OperandId) -> Result<()> {
        let size = self.size_of(id);
        let label = self.ir.label(id).to_string();
        let buffer = self.new_buffer(size, &label)?;
        self.slots[id] = Some(Slot { buffer, size });
        Ok(())
    }

    /// Uploads a constant once.
    pub fn constant(&mut self, id: OperandId, bytes: &[u8]) -> Result<()> {
        let label = self.ir.label(id).to_string();
        let buffer = self.gpu().create_buffer_with_data(
            &label,
            bytes,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        self.buffers.push(buffer.clone());
        self.slots[id] = Some(Slot {
            size: self.size_of(id),
            buffer,
        });
        Ok(())
    }

    /// Gives an intermediate a buffer, reusing the smallest free one that fits.
    pub fn allocate(&mut self, id: OperandId) -> Result<()> {
        if self.slots[id].is_some() {
            return Ok(());
        }
        let size = self.size_of(id);
        let buffer = self.take_free(size, "wgnn intermediate")?;
        self.slots[id] = Some(Slot { buffer, size });
        Ok(())
    }

    /// The smallest free buffer of at least `size` bytes, or a new one.
    fn take_free(&mut self, size: u64, label: &str) -> Result<crate::gpu::live::Buffer> {
        let best = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size() >= size)
            .min_by_key(|(_, b)| b.size())
            .map(|(i, _)| i);
        match best {
            Some(i) => Ok(self.free.swap_remove(i)),
            None => self.new_buffer(size, label),
        }
    }

    /// Gives `id` the buffer of `target` (allocated first).
    pub fn alias(&mut self, id: OperandId, target: OperandId) -> Result<()> {
        self.allocate(target)?;
        self.slots[id] = self.slots[target].clone();
        self.aliased[id] = true;
        Ok(())
    }

    /// Returns an intermediate's buffer to the free list after its last use.
    pub fn release(&mut self, id: OperandId) {
        if let Some(slot) = self.slots[id].take() {
            if !self.aliased[id] {
                self.free.push(slot.buffer);
            }
        }
    }

    pub fn copy(&mut self, src: OperandId, dst: OperandId) {
        if self.gpu.is_none() {
            return;
        }
        let (src, dst) = (self.slot(src).clone(), self.slot(dst).clone());
        self.steps.push(Step::Copy { src, dst });
    }

    /// A buffer of at least `size` bytes that the kernels of one node
    /// share (one writes it, the next reads it), taken from the free
    /// intermediates: its contents are whatever was there, so its writer
    /// writes all of it. Give it back with [`Lowering::release_scratch`]
    /// once the node's last kernel is recorded.
    pub fn scratch(&mut self, size: u64) -> Result<ScratchId> {
        let slot = match self.gpu {
            None => None,
            Some(_) => {
                let size = size.div_ceil(4).max(1) * 4;
                let buffer = self.take_free(size, "wgnn scratch")?;
                Some(Slot { buffer, size })
            }
        };
        self.scratches.push(slot);
        Ok(ScratchId(self.scratches.len() - 1))
    }

    /// Returns a scratch buffer to the free intermediates.
    pub fn release_scratch(&mut self, id: ScratchId) {
        if let Some(slot) = self.scratches[id.0].take() {
            self.free.push(slot.buffer);
        }
    }

    /// [`Lowering::kernel`] with a scratch buffer bound after the outputs
    /// (before any table).
    pub fn kernel_with_scratch(&mut self, k: Kernel<'_>, scratch: ScratchId) -> Result<()> {
        self.kernel_bound(k, Some((scratch, ScratchAt::AfterOutputs)))
    }

    /// [`Lowering::kernel`] with a scratch buffer bound first (binding 1,
    /// before the inputs): a kernel that reads, as its `x`, what the node's
    /// kernel before it wrote there.
    pub fn kernel_reading_scratch(&mut self, k: Kernel<'_>, scratch: ScratchId) -> Result<()> {
        self.kernel_bound(k, Some((scratch, ScratchAt::First)))
    }

    pub fn kernel(&mut self, k: Kernel<'_>) -> Result<()> {
        self.kernel_bound(k, None)
    }

    fn kernel_bound(
        &mut self,
        k: Kernel<'_>,
        scratch: Option<(ScratchId, ScratchAt)>,
    ) -> Result<()> {
        let uses_f16 = k.output_type == DataType::Float16 || k.input_type == DataType::Float16;
        if uses_f16 && !self.target.shader_f16 {
            return Err(Error::invalid(format!(
                "{}: float16 needs the SHADER_F16 feature, which this GPU ({}) lacks",
                k.label,
                self.gpu.map_or_else(String::new, |g| g.info().name.clone())
            )));
        }
        let src = kernel_source(&k);
        let Some(gpu) = self.gpu else {
            #[cfg(test)]
            self.recorded.push(Recorded {
                storage_bindings: k.inputs.len()
                    + k.outputs.len()
                    + scratch.is_some() as usize
                    + k.table.is_some() as usize,
                label: k.label,
                source: src,
                params: k.params.bytes,
                fields: k.params.fields,
            });
            return Ok(());
        };
        let pipeline = gpu.compute_pipeline(&k.label, &src, Checks::Trusted)?;

        let param_buffer = gpu.create_buffer_with_data(
            &format!("{} params", k.label),
            &k.params.bytes,
            wgpu::BufferUsages::UNIFORM,
        )?;
        self.buffers.push(param_buffer.clone());
        let mut slots: Vec<Slot> = k
            .inputs
            .iter()
            .chain(&k.outputs)
            .map(|&id| self.slot(id).clone())
            .collect();
        if let Some((id, at)) = scratch {
            let slot = self.scratches[id.0].clone();
            let slot = slot.expect("a scratch buffer is used before its release");
            match at {
                ScratchAt::First => slots.insert(0, slot),
                ScratchAt::AfterOutputs => slots.push(slot),
            }
        }
        if let Some(table) = &k.table {
            let buffer = gpu.create_buffer_with_data(
                &format!("{} table", k.label),
                bytemuck::cast_slice(table),
                wgpu::BufferUsages::STORAGE,
            )?;
            self.buffers.push(buffer.clone());
            let size = buffer.size();
            slots.push(Slot { buffer, size });
        }
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: param_buffer.as_entire_binding(),
        }];
        for (i, slot) in slots.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: slot.binding(),
            });
        }
        let bind_group = gpu.scoped(&format!("binding the {} kernel", k.label), || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&k.label),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            })
        })?;
        let max = gpu.limits().max_compute_workgroups_per_dimension;
        if k.workgroups.iter().any(|&w| w > max) {
            return Err(Error::invalid(format!(
                "{}: {:?} workgroups exceed this GPU's limit of {max} per dimension",
                k.label, k.workgroups
            )));
        }
        let [x, y, z] = k.workgroups;
        let groups = u64::from(x) * u64::from(y) * u64::from(z);
        let mut detail = self.node_detail.clone();
        // A node lowered to kernels of other names (a global pool run by
        // the reduction kernel keeps its own) says which one this is.
        if !detail.starts_with(&k.label) {
            detail = format!("{}: {detail}", k.label);
        }
        detail += &format!(", {groups} wg of {}", k.workgroup_size);
        self.steps.push(Step::Kernel {
            label: k.label,
            detail,
            pipeline,
            bind_group,
            workgroups: k.workgroups,
        });
        Ok(())
    }
}

// The kernel tests lower real graphs through `lower_node` (mod.rs), so they
// live beside the lowering.
#[cfg(test)]
#[path = "kernel_tests.rs"]
mod kernel_tests;
