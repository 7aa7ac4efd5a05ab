//! Lowering a graph to GPU work: buffers for every operand (intermediates
//! reused by liveness), pipelines compiled once, and the list of steps a
//! dispatch encodes.

use std::fmt::Write;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu};
use crate::ml::graph_ir::{GraphIr, OperandId};
use crate::ml::ops::Activation;
use crate::ml::types::DataType;

/// A range of a buffer holding one operand.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub buffer: wgpu::Buffer,
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
        pipeline: wgpu::ComputePipeline,
        bind_group: wgpu::BindGroup,
        workgroups: [u32; 3],
    },
    Copy {
        src: Slot,
        dst: Slot,
    },
}

/// One compute dispatch, as an op's lowering describes it.
///
/// The shader source is the kernel body; the lowering prepends a prelude with
/// `alias T` (the output element type), `alias TI` (the first input's type),
/// `const WG: u32` (the workgroup size, 64 unless `workgroup_size` says
/// otherwise), `params: array<u32>` at binding 0, `fn act(f32) -> f32` (the
/// fused activations) and `fn flat_id(gid, nwg) -> u32`. Inputs are bound
/// read-only at bindings 1.., outputs read-write after them; every binding
/// must be used by the shader.
pub(crate) struct Kernel<'a> {
    pub label: String,
    pub source: &'a str,
    pub output_type: DataType,
    pub input_type: DataType,
    pub activations: &'a [Activation],
    pub params: Vec<u32>,
    pub inputs: Vec<OperandId>,
    pub outputs: Vec<OperandId>,
    pub workgroups: [u32; 3],
    pub workgroup_size: u32,
}

pub(crate) struct Lowering<'a> {
    pub gpu: &'a Gpu,
    pub ir: &'a GraphIr,
    slots: Vec<Option<Slot>>,
    free: Vec<wgpu::Buffer>,
    pub buffers: Vec<wgpu::Buffer>,
    pub steps: Vec<Step>,
}

/// The whole WGSL of a kernel: its directives, the shared header (element
/// types, params, fused activations, `flat_id`), then its body.
pub(super) fn kernel_source(k: &Kernel<'_>) -> String {
    let mut src = String::new();
    if k.output_type == DataType::Float16 || k.input_type == DataType::Float16 {
        src.push_str("enable f16;\n");
    }
    // WGSL wants directives before any declaration, so a kernel's own
    // (`enable wgpu_cooperative_matrix;`) go before the shared header.
    let mut body = k.source;
    while let Some(rest) = body.strip_prefix("enable ") {
        let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        src.push_str("enable ");
        src.push_str(&rest[..end]);
        body = &rest[end..];
    }
    let _ = write!(
        src,
        "alias T = {};\nalias TI = {};\nconst WG: u32 = {}u;\n\
         @group(0) @binding(0) var<storage, read> params: array<u32>;\n\
         fn act(v: f32) -> f32 {{\n    var y = v;\n{}    return y;\n}}\n\
         fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {{ return gid.x + gid.y * nwg.x * WG; }}\n",
        wgsl_type(k.output_type),
        wgsl_type(k.input_type),
        k.workgroup_size,
        epilogue(k.activations)
    );
    src.push_str(body);
    src
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

/// The fused activations as WGSL statements on `y`.
fn epilogue(acts: &[Activation]) -> String {
    let mut s = String::new();
    for a in acts {
        let line = match *a {
            Activation::Relu => "y = max(y, 0.0);".to_string(),
            Activation::Clamp { min, max } => format!("y = clamp(y, {min:?}, {max:?});"),
            Activation::Sigmoid => "y = 1.0 / (1.0 + exp(-y));".to_string(),
            Activation::Tanh => "y = tanh(clamp(y, -15.0, 15.0));".to_string(),
            Activation::LeakyRelu { alpha } => format!("y = select({alpha:?} * y, y, y >= 0.0);"),
            Activation::HardSwish => "y = y * clamp(y + 3.0, 0.0, 6.0) / 6.0;".to_string(),
            Activation::HardSigmoid { alpha, beta } => {
                format!("y = clamp({alpha:?} * y + {beta:?}, 0.0, 1.0);")
            }
            Activation::Linear { alpha, beta } => format!("y = y * {alpha:?} + {beta:?};"),
        };
        let _ = writeln!(s, "    {line}");
    }
    s
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
        Lowering {
            gpu,
            ir,
            slots: vec![None; ir.operands.len()],
            free: Vec::new(),
            buffers: Vec::new(),
            steps: Vec::new(),
        }
    }

    pub fn slot(&self, id: OperandId) -> &Slot {
        self.slots[id]
            .as_ref()
            .expect("operand has a buffer before use")
    }

    fn size_of(&self, id: OperandId) -> u64 {
        (self.ir.desc(id).byte_length() as u64).div_ceil(4).max(1) * 4
    }

    fn new_buffer(&mut self, size: u64, label: &str) -> Result<wgpu::Buffer> {
        let max = self.gpu.limits().max_storage_buffer_binding_size;
        if size > max {
            return Err(Error::invalid(format!(
                "{label} needs {size} bytes, more than this GPU's max_storage_buffer_binding_size ({max})"
            )));
        }
        let buffer = self.gpu.scoped(label, || {
            self.gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
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
        let buffer = self.gpu.create_buffer_with_data(
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
        let best = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size() >= size)
            .min_by_key(|(_, b)| b.size())
            .map(|(i, _)| i);
        let buffer = match best {
            Some(i) => self.free.swap_remove(i),
            None => self.new_buffer(size, "wgnn intermediate")?,
        };
        self.slots[id] = Some(Slot { buffer, size });
        Ok(())
    }

    /// Returns an intermediate's buffer to the free list after its last use.
    pub fn release(&mut self, id: OperandId) {
        if let Some(slot) = self.slots[id].take() {
            self.free.push(slot.buffer);
        }
    }

    pub fn copy(&mut self, src: OperandId, dst: OperandId) {
        let (src, dst) = (self.slot(src).clone(), self.slot(dst).clone());
        self.steps.push(Step::Copy { src, dst });
    }

    pub fn kernel(&mut self, k: Kernel<'_>) -> Result<()> {
        let uses_f16 = k.output_type == DataType::Float16 || k.input_type == DataType::Float16;
        if uses_f16 && !self.gpu.has(wgpu::Features::SHADER_F16) {
            return Err(Error::invalid(format!(
                "{}: float16 needs the SHADER_F16 feature, which this GPU ({}) lacks",
                k.label,
                self.gpu.info().name
            )));
        }
        let src = kernel_source(&k);
        let pipeline = self.gpu.compute_pipeline(&k.label, &src, Checks::Trusted)?;

        let mut params = k.params.clone();
        if params.is_empty() {
            params.push(0);
        }
        let param_buffer = self.gpu.create_buffer_with_data(
            &format!("{} params", k.label),
            bytemuck::cast_slice(&params),
            wgpu::BufferUsages::STORAGE,
        )?;
        self.buffers.push(param_buffer.clone());
        let slots: Vec<Slot> = k
            .inputs
            .iter()
            .chain(&k.outputs)
            .map(|&id| self.slot(id).clone())
            .collect();
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
        let bind_group = self
            .gpu
            .scoped(&format!("binding the {} kernel", k.label), || {
                self.gpu
                    .device()
                    .create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some(&k.label),
                        layout: &pipeline.get_bind_group_layout(0),
                        entries: &entries,
                    })
            })?;
        let max = self.gpu.limits().max_compute_workgroups_per_dimension;
        if k.workgroups.iter().any(|&w| w > max) {
            return Err(Error::invalid(format!(
                "{}: {:?} workgroups exceed this GPU's limit of {max} per dimension",
                k.label, k.workgroups
            )));
        }
        self.steps.push(Step::Kernel {
            label: k.label,
            pipeline,
            bind_group,
            workgroups: k.workgroups,
        });
        Ok(())
    }
}
