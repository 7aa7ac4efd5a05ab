//! Frame -> model input tensor: colour conversion, resize and normalisation
//! in one compute pass writing straight into the model's input buffer.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu, Specialization};

use super::frame::GpuFrame;
use super::frame_read::{frame_bind_group, yuv_buffer, ColorSpec, Reader};
use super::groups_2d;
use super::tensor_buffer::TensorBuffer;
use crate::ml::DataType;

/// Element order of the output tensor (batch 1, 3 channels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorLayout {
    #[default]
    Nhwc,
    Nchw,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputDtype {
    #[default]
    F32,
    /// Needs the device feature SHADER_F16.
    F16,
}

impl OutputDtype {
    pub fn size(self) -> u64 {
        match self {
            OutputDtype::F32 => 4,
            OutputDtype::F16 => 2,
        }
    }

    /// The tensor data type these values are stored as.
    pub fn data_type(self) -> DataType {
        match self {
            OutputDtype::F32 => DataType::Float32,
            OutputDtype::F16 => DataType::Float16,
        }
    }
}

/// How the frame is fitted to the model's input size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Resize {
    /// Scale each axis independently (aspect ratio not kept).
    #[default]
    Stretch,
    /// Scale to fit inside, keep aspect, fill the borders with `pad` (RGB,
    /// 0..255, normalised like pixels).
    Letterbox { pad: [u8; 3] },
    /// Scale to cover, keep aspect, cut the overhang evenly on both sides.
    CenterCrop,
}

/// Per output channel: value = x * scale + offset, where x is the 8-bit
/// colour value (0..255).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalize {
    pub scale: [f32; 3],
    pub offset: [f32; 3],
}

impl Normalize {
    /// 0..1
    pub const ZERO_ONE: Normalize = Normalize {
        scale: [1.0 / 255.0; 3],
        offset: [0.0; 3],
    };
    /// -1..1
    pub const MINUS_ONE_ONE: Normalize = Normalize {
        scale: [2.0 / 255.0; 3],
        offset: [-1.0; 3],
    };
    /// 0..255, unchanged.
    pub const RAW: Normalize = Normalize {
        scale: [1.0; 3],
        offset: [0.0; 3],
    };

    /// (x/255 - mean) / std, the torchvision convention (ImageNet:
    /// mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225]).
    pub fn mean_std(mean: [f32; 3], std: [f32; 3]) -> Normalize {
        Normalize {
            scale: std.map(|s| 1.0 / (255.0 * s)),
            offset: [0, 1, 2].map(|c| -mean[c] / std[c]),
        }
    }
}

impl Default for Normalize {
    fn default() -> Self {
        Normalize::ZERO_ONE
    }
}

/// Channel order of the output tensor (and of `Normalize`'s arrays).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChannelOrder {
    #[default]
    Rgb,
    Bgr,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorizeOptions {
    /// Model input width and height.
    pub width: u32,
    pub height: u32,
    pub layout: TensorLayout,
    pub dtype: OutputDtype,
    pub resize: Resize,
    pub normalize: Normalize,
    pub color: ColorSpec,
    pub channels: ChannelOrder,
}

impl TensorizeOptions {
    /// NHWC f32 RGB in 0..1, stretched, BT.601 limited range for YUV.
    pub fn new(width: u32, height: u32) -> Self {
        TensorizeOptions {
            width,
            height,
            layout: TensorLayout::default(),
            dtype: OutputDtype::default(),
            resize: Resize::default(),
            normalize: Normalize::default(),
            color: ColorSpec::default(),
            channels: ChannelOrder::default(),
        }
    }
}

/// The checks that hold whatever runs the options (GPU shader or `video::cpu`).
pub(crate) fn check_options(o: &TensorizeOptions) -> Result<()> {
    if o.width == 0 || o.height == 0 {
        return Err(Error::invalid(format!(
            "tensorize: output size {}x{} must be at least 1x1",
            o.width, o.height
        )));
    }
    let values = o.normalize.scale.iter().chain(&o.normalize.offset);
    if values.clone().any(|v| !v.is_finite()) {
        return Err(Error::invalid(format!(
            "tensorize: normalisation {:?} has a value that is not finite (std of 0?)",
            o.normalize
        )));
    }
    Ok(())
}

/// What shapes the tensorize kernel's code: each combination is its own
/// pipeline (see `video`'s rule: switches are specialised, values are
/// [`TensorizeParams`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TensorizeSwitches {
    pub reader: Reader,
    pub layout: TensorLayout,
    pub channels: ChannelOrder,
    /// 0 stretch, 1 letterbox, 2 center crop.
    pub resize_mode: u32,
    pub dtype: OutputDtype,
}

impl TensorizeSwitches {
    fn of(o: &TensorizeOptions, reader: Reader) -> Self {
        TensorizeSwitches {
            reader,
            layout: o.layout,
            channels: o.channels,
            resize_mode: match o.resize {
                Resize::Stretch => 0,
                Resize::Letterbox { .. } => 1,
                Resize::CenterCrop => 2,
            },
            dtype: o.dtype,
        }
    }

    /// The kernel's WGSL.
    pub(crate) fn source(&self) -> String {
        let (ty, enables): (&str, &[&str]) = match self.dtype {
            OutputDtype::F32 => ("f32", &[]),
            OutputDtype::F16 => ("f16", &["f16"]),
        };
        Specialization::new()
            .alias("out_t", ty)
            .u32("RESIZE_MODE", self.resize_mode)
            .bool("NCHW", self.layout == TensorLayout::Nchw)
            .bool("BGR", self.channels == ChannelOrder::Bgr)
            .module(
                enables,
                &format!(
                    "{}\n{}",
                    self.reader.source(),
                    include_str!("tensorize.wgsl")
                ),
            )
    }

    /// Every combination, for the shader tests.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<TensorizeSwitches> {
        let mut all = Vec::new();
        for reader in Reader::ALL {
            for layout in [TensorLayout::Nhwc, TensorLayout::Nchw] {
                for channels in [ChannelOrder::Rgb, ChannelOrder::Bgr] {
                    for resize_mode in 0..3 {
                        for dtype in [OutputDtype::F32, OutputDtype::F16] {
                            all.push(TensorizeSwitches {
                                reader,
                                layout,
                                channels,
                                resize_mode,
                                dtype,
                            });
                        }
                    }
                }
            }
        }
        all
    }
}

/// `Params` of tensorize.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct TensorizeParams {
    pub scale: [f32; 4],
    pub offset: [f32; 4],
    pub pad_color: [f32; 4],
    pub out_w: u32,
    pub out_h: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

impl TensorizeParams {
    fn of(o: &TensorizeOptions) -> Self {
        let pad = match o.resize {
            Resize::Letterbox { pad } => pad.map(f32::from),
            Resize::Stretch | Resize::CenterCrop => [0.0; 3],
        };
        let n = &o.normalize;
        let four = |v: [f32; 3]| [v[0], v[1], v[2], 0.0];
        TensorizeParams {
            scale: four(n.scale),
            offset: four(n.offset),
            pad_color: four(pad),
            out_w: o.width,
            out_h: o.height,
            _pad0: 0,
            _pad1: 0,
        }
    }
}

/// Turns frames into tensors of one configuration. Cheap per frame: the
/// pipeline for each frame format comes from the device's cache (compiled
/// once per device for every tensorizer with the same switches) and the
/// parameters are uploaded once, here.
pub struct Tensorizer {
    gpu: Gpu,
    options: TensorizeOptions,
    /// This tensorizer's pipelines by reader, so that a frame costs a map
    /// look-up rather than building and hashing the kernel's source.
    pipelines: Mutex<HashMap<Reader, wgpu::ComputePipeline>>,
    params: wgpu::Buffer,
    yuv: wgpu::Buffer,
}

impl std::fmt::Debug for Tensorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensorizer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Tensorizer {
    pub fn new(gpu: &Gpu, options: TensorizeOptions) -> Result<Tensorizer> {
        let o = &options;
        check_options(o)?;
        if o.dtype == OutputDtype::F16 && !gpu.has(wgpu::Features::SHADER_F16) {
            return Err(Error::invalid(format!(
                "tensorize: f16 output needs the SHADER_F16 feature, which {} lacks; use f32",
                gpu.info().name
            )));
        }
        let limits = gpu.limits();
        let bytes = 3 * u64::from(o.width) * u64::from(o.height) * o.dtype.size();
        if bytes > limits.max_storage_buffer_binding_size {
            return Err(Error::invalid(format!(
                "tensorize: a {}x{}x3 {:?} tensor is {bytes} bytes, over the device limit \
                 max_storage_buffer_binding_size = {}",
                o.width, o.height, o.dtype, limits.max_storage_buffer_binding_size
            )));
        }
        let params = gpu.create_buffer_with_data(
            "wgnn tensorize params",
            bytemuck::bytes_of(&TensorizeParams::of(o)),
            wgpu::BufferUsages::UNIFORM,
        )?;
        Ok(Tensorizer {
            gpu: gpu.clone(),
            yuv: yuv_buffer(gpu, o.color)?,
            options,
            pipelines: Mutex::default(),
            params,
        })
    }

    pub fn options(&self) -> &TensorizeOptions {
        &self.options
    }

    /// Elements written: 1 * 3 * height * width.
    pub fn output_len(&self) -> u64 {
        3 * u64::from(self.options.width) * u64::from(self.options.height)
    }

    pub fn output_bytes(&self) -> u64 {
        self.output_len() * self.options.dtype.size()
    }

    /// Shape of the output tensor in its layout's order.
    pub fn output_shape(&self) -> [u32; 4] {
        let (w, h) = (self.options.width, self.options.height);
        match self.options.layout {
            TensorLayout::Nhwc => [1, h, w, 3],
            TensorLayout::Nchw => [1, 3, h, w],
        }
    }

    /// Pipelines this tensorizer has used so far (one per frame plane
    /// arrangement seen). They are compiled once per device: another
    /// tensorizer with the same switches reuses them.
    pub fn pipelines_built(&self) -> u64 {
        self.pipelines.lock().unwrap().len() as u64
    }

    fn pipeline(&self, reader: Reader) -> Result<wgpu::ComputePipeline> {
        let mut pipelines = self.pipelines.lock().unwrap();
        if let Some(p) = pipelines.get(&reader) {
            return Ok(p.clone());
        }
        let source = TensorizeSwitches::of(&self.options, reader).source();
        let p = self
            .gpu
            .compute_pipeline("wgnn tensorize", &source, Checks::All)?;
        pipelines.insert(reader, p.clone());
        Ok(p)
    }

    /// Records the pass that writes the tensor for `frame` into `dst` (a
    /// STORAGE buffer, e.g. a rented model input), which must be a tensor of
    /// [`output_shape`](Tensorizer::output_shape) in the options' dtype.
    pub fn encode<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        dst: impl Into<TensorBuffer<'a>>,
    ) -> Result<()> {
        let dst = dst.into();
        let shape = self.output_shape().map(|d| d as usize);
        dst.expect(
            "tensorize: the destination",
            self.options.dtype.data_type(),
            &shape,
        )?;
        let dst = dst.buffer();
        if !dst.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::invalid(
                "tensorize: the destination buffer lacks STORAGE usage",
            ));
        }
        if dst.size() < self.output_bytes() {
            return Err(Error::invalid(format!(
                "tensorize: the destination buffer has {} bytes, the {:?} tensor needs {}",
                dst.size(),
                self.output_shape(),
                self.output_bytes()
            )));
        }
        let pipeline = self.pipeline(Reader::of(frame.format()))?;
        let planes = frame_bind_group(
            &self.gpu,
            &pipeline.get_bind_group_layout(0),
            frame,
            Some(&self.yuv),
        )?;
        let gpu = &self.gpu;
        let out = gpu.scoped("tensorize output binding", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn tensorize output"),
                layout: &pipeline.get_bind_group_layout(1),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: dst.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: self.params.as_entire_binding(),
                    },
                ],
            })
        })?;
        let (gx, gy) = groups_2d(self.options.width, self.options.height);
        gpu.scoped("tensorize pass", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn tensorize"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &planes, &[]);
            pass.set_bind_group(1, &out, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        })
    }

    /// [`Tensorizer::encode`] and submit.
    pub fn run<'a>(&self, frame: &GpuFrame, dst: impl Into<TensorBuffer<'a>>) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.encode(&mut encoder, frame, dst)?;
        self.gpu
            .scoped("tensorize submit", || {
                self.gpu.queue().submit([encoder.finish()])
            })
            .map(|_| ())
    }
}
