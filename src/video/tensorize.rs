//! Frame -> model input tensor: colour conversion, resize and normalisation
//! in one compute pass writing straight into the model's input buffer.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu, Specialization};

use super::frame::GpuFrame;
use super::frame_read::{
    frame_bind_group, planes_key, yuv_buffer, ColorSpec, Reader, FRAME_BINDINGS,
};
use super::groups_2d;
use super::tensor_buffer::TensorBuffer;
use crate::gpu::bind_cache::{BindCache, Bound};
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

/// Where an output pixel samples the source, as ONNX's Resize names its
/// `coordinate_transformation_mode`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Sampling {
    /// Pixel centres map to pixel centres: x_src = (x_dst + 0.5) * s - 0.5
    /// (PyTorch's `align_corners=False`, PIL, most resizers).
    #[default]
    HalfPixel,
    /// Pixel i samples the source at i * s (OpenCV's `warpAffine` with a
    /// scale matrix, which MediaPipe's CPU `ImageToTensorCalculator` uses):
    /// models trained on such inputs see the same pixels.
    Asymmetric,
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
    pub sampling: Sampling,
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
            sampling: Sampling::default(),
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

/// The part of a frame a tensor is made from: the whole frame, or a region
/// (one per object a classifier looks at) that the resize modes map into the
/// model input instead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SourceWindow {
    /// Top-left corner and size in frame pixels (continuous coordinates:
    /// pixel `i` covers `i..i + 1`), inside the frame.
    pub origin: [f32; 2],
    pub size: [f32; 2],
    /// The first and last pixel (x, y) the window touches, inclusive:
    /// bilinear taps stay inside them, so that a crop never reads the pixels
    /// around it.
    pub first: [i32; 2],
    pub last: [i32; 2],
}

impl SourceWindow {
    /// The whole `width` x `height` frame.
    pub(crate) fn whole(width: u32, height: u32) -> SourceWindow {
        SourceWindow {
            origin: [0.0; 2],
            size: [width as f32, height as f32],
            first: [0; 2],
            last: [width as i32 - 1, height as i32 - 1],
        }
    }

    /// `region` (x, y, w, h in frame pixels) of a `width` x `height` frame,
    /// clamped to the frame. A region with no area inside the frame (or a
    /// value that is not finite) is an error naming it.
    pub(crate) fn of_region(region: [f32; 4], width: u32, height: u32) -> Result<SourceWindow> {
        let [x, y, w, h] = region;
        let (fw, fh) = (width as f32, height as f32);
        let empty = || {
            Error::invalid(format!(
                "tensorize: region (x {x}, y {y}, w {w}, h {h}) has no area inside the \
                 {width}x{height} frame"
            ))
        };
        if region.iter().any(|v| !v.is_finite()) || width == 0 || height == 0 {
            return Err(empty());
        }
        let (x0, y0) = (x.max(0.0), y.max(0.0));
        let (x1, y1) = ((x + w).min(fw), (y + h).min(fh));
        if !(x1 > x0 && y1 > y0) {
            return Err(empty());
        }
        let last = |end: f32, start: i32, limit: u32| {
            ((end.ceil() as i32) - 1).clamp(start, limit as i32 - 1)
        };
        let first = [x0.floor() as i32, y0.floor() as i32];
        Ok(SourceWindow {
            origin: [x0, y0],
            size: [x1 - x0, y1 - y0],
            first,
            last: [last(x1, first[0], width), last(y1, first[1], height)],
        })
    }
}

/// `Params` of tensorize.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct TensorizeParams {
    pub scale: [f32; 4],
    pub offset: [f32; 4],
    pub pad_color: [f32; 4],
    /// x, y, w, h of the source window (`whole_frame` 0).
    pub region: [f32; 4],
    /// First x, y and last x, y pixel of the window (`whole_frame` 0).
    pub region_pixels: [i32; 4],
    pub out_w: u32,
    pub out_h: u32,
    /// 1: the whole frame, whatever its size (the shader asks the frame), so
    /// that one uniform serves every frame; 0: `region`.
    pub whole_frame: u32,
    /// 1: [`Sampling::Asymmetric`], 0: half-pixel.
    pub asymmetric: u32,
    /// Element index of the item's first value in the bound range (see
    /// [`SlotBinding`]).
    pub dst_offset: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
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
            region: [0.0; 4],
            region_pixels: [0; 4],
            out_w: o.width,
            out_h: o.height,
            whole_frame: 1,
            asymmetric: u32::from(o.sampling == Sampling::Asymmetric),
            dst_offset: 0,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }

    /// The same parameters writing at element `dst_offset` of the binding.
    fn at(mut self, dst_offset: u32) -> Self {
        self.dst_offset = dst_offset;
        self
    }

    /// The same parameters sampling `window` only.
    fn with_window(mut self, window: &SourceWindow) -> Self {
        let w = window;
        self.region = [w.origin[0], w.origin[1], w.size[0], w.size[1]];
        self.region_pixels = [w.first[0], w.first[1], w.last[0], w.last[1]];
        self.whole_frame = 0;
        self
    }
}

/// Where item `slot` of a batched tensor is bound: storage bindings must
/// start at a multiple of the device's `min_storage_buffer_offset_alignment`
/// and cover whole 4-byte words, so the range starts at the aligned offset
/// at or before the item and the shader skips `element` values into it.
/// Binding the item's range rather than the whole tensor keeps any batch
/// within `max_storage_buffer_binding_size` as long as one item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotBinding {
    /// Byte offset and size of the bound range.
    offset: u64,
    size: u64,
    /// Element index of the item's first value within the range.
    element: u32,
}

impl SlotBinding {
    /// The range for item `slot` of `item_bytes` bytes, `elem_size` bytes a
    /// value, under binding offset alignment `align` (a power of two, at
    /// least 4, as wgpu guarantees).
    fn of(slot: u64, item_bytes: u64, elem_size: u64, align: u64) -> SlotBinding {
        let start = slot * item_bytes;
        let offset = start - start % align;
        let skipped = start - offset;
        SlotBinding {
            offset,
            size: (skipped + item_bytes).next_multiple_of(4),
            element: (skipped / elem_size) as u32,
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
    pipelines: Mutex<HashMap<Reader, crate::gpu::live::ComputePipeline>>,
    /// Whole-frame parameters by [`SlotBinding::element`], built the first
    /// time a slot needs them and never changed: 0 (every slot where items
    /// are multiples of the offset alignment, e.g. 3 x 256 x 256 f32) is
    /// made with the tensorizer.
    params: Mutex<HashMap<u32, crate::gpu::live::Buffer>>,
    yuv: crate::gpu::live::Buffer,
    /// Bind groups of the frames' planes (the pool's few recycled textures)
    /// and of the outputs (`gpu::bind_cache`).
    frames: BindCache,
    outputs: BindCache,
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
            params: Mutex::new(HashMap::from([(0, params)])),
            frames: BindCache::new(FRAME_BINDINGS),
            outputs: BindCache::new(FRAME_BINDINGS),
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
        self.batched_shape(1)
    }

    /// Shape of a tensor of `batch` items of [`output_shape`]'s
    /// (`[batch, ...]`), which [`encode_slot`](Tensorizer::encode_slot)
    /// writes one item of.
    ///
    /// [`output_shape`]: Tensorizer::output_shape
    pub fn batched_shape(&self, batch: u32) -> [u32; 4] {
        let (w, h) = (self.options.width, self.options.height);
        match self.options.layout {
            TensorLayout::Nhwc => [batch, h, w, 3],
            TensorLayout::Nchw => [batch, 3, h, w],
        }
    }

    /// Pipelines this tensorizer has used so far (one per frame plane
    /// arrangement seen). They are compiled once per device: another
    /// tensorizer with the same switches reuses them.
    pub fn pipelines_built(&self) -> u64 {
        self.pipelines.lock().unwrap().len() as u64
    }

    fn pipeline(&self, reader: Reader) -> Result<crate::gpu::live::ComputePipeline> {
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
        self.expect_single(&dst)?;
        self.encode_slot(encoder, frame, None, dst, 0)
    }

    /// `dst` is exactly the [1, ...] tensor `encode` writes.
    fn expect_single(&self, dst: &TensorBuffer<'_>) -> Result<()> {
        dst.expect(
            "tensorize: the destination",
            self.options.dtype.data_type(),
            &self.output_shape().map(|d| d as usize),
        )
    }

    /// Records the pass that writes item `slot` of `dst`, a batched tensor
    /// of [`batched_shape(N)`](Tensorizer::batched_shape) in the options'
    /// dtype (`slot < N`): exactly the values [`encode`](Tensorizer::encode)
    /// (`region` None) or [`encode_region`](Tensorizer::encode_region)
    /// (`Some`) write into a [1, ...] tensor, leaving the other items'
    /// bytes as they are. So frames of several streams, each with its own
    /// tensorizer (colour spec, resize, ...) of the same output, fill one
    /// batch of a model.
    ///
    /// A whole frame costs nothing per call: its parameters are built once
    /// per slot position (none beyond the first where an item's bytes are a
    /// multiple of the device's storage offset alignment); a region uploads
    /// [`region_upload_bytes`](Tensorizer::region_upload_bytes) as
    /// `encode_region` does.
    pub fn encode_slot<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        region: Option<[f32; 4]>,
        dst: impl Into<TensorBuffer<'a>>,
        slot: usize,
    ) -> Result<()> {
        let dst = dst.into();
        let binding = self.slot_binding(&dst, slot)?;
        let params = match region {
            None => self.whole_frame_params(binding.element)?,
            Some(region) => {
                let window = SourceWindow::of_region(region, frame.width(), frame.height())?;
                let params = TensorizeParams::of(&self.options)
                    .with_window(&window)
                    .at(binding.element);
                self.gpu.create_buffer_with_data(
                    "wgnn tensorize region params",
                    bytemuck::bytes_of(&params),
                    wgpu::BufferUsages::UNIFORM,
                )?
            }
        };
        self.encode_pass(encoder, frame, dst.buffer(), binding, &params)
    }

    /// Checks `dst` is a batched tensor of this tensorizer's items with a
    /// `slot`, in a buffer that holds it, and says where that item is bound.
    fn slot_binding(&self, dst: &TensorBuffer<'_>, slot: usize) -> Result<SlotBinding> {
        let data_type = self.options.dtype.data_type();
        let item = self.output_shape().map(|d| d as usize);
        let shape = dst.shape();
        if dst.data_type() != data_type || shape.len() != item.len() || shape[1..] != item[1..] {
            return Err(Error::invalid(format!(
                "tensorize: the slot tensor is {} {shape:?}; it must be {data_type} [N, {}] \
                 (items of the tensorizer's output {item:?})",
                dst.data_type(),
                item[1..]
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let batch = shape[0];
        if slot >= batch {
            return Err(Error::invalid(format!(
                "tensorize: slot {slot} is outside the {data_type} {shape:?} tensor, which has \
                 {batch} items"
            )));
        }
        let buffer = dst.buffer();
        if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::invalid(
                "tensorize: the destination buffer lacks STORAGE usage",
            ));
        }
        // Storage bindings cover whole 4-byte words (as `ml` sizes its
        // buffers), so the last item's binding may end past its last value.
        let item_bytes = self.output_bytes();
        let needed = (batch as u64).saturating_mul(item_bytes).saturating_add(3) / 4 * 4;
        if buffer.size() < needed {
            return Err(Error::invalid(format!(
                "tensorize: the destination buffer has {} bytes, the {shape:?} tensor needs \
                 {needed}",
                buffer.size()
            )));
        }
        let limits = self.gpu.limits();
        let binding = SlotBinding::of(
            slot as u64,
            item_bytes,
            self.options.dtype.size(),
            u64::from(limits.min_storage_buffer_offset_alignment).max(4),
        );
        if binding.size > limits.max_storage_buffer_binding_size {
            return Err(Error::invalid(format!(
                "tensorize: slot {slot} of the {shape:?} tensor binds {} bytes (its item and \
                 the offset alignment before it), over the device limit \
                 max_storage_buffer_binding_size = {}",
                binding.size, limits.max_storage_buffer_binding_size
            )));
        }
        Ok(binding)
    }

    /// The whole-frame parameters writing at `element` of the binding.
    fn whole_frame_params(&self, element: u32) -> Result<crate::gpu::live::Buffer> {
        let mut cache = self.params.lock().unwrap();
        if let Some(p) = cache.get(&element) {
            return Ok(p.clone());
        }
        let p = self.gpu.create_buffer_with_data(
            "wgnn tensorize params",
            bytemuck::bytes_of(&TensorizeParams::of(&self.options).at(element)),
            wgpu::BufferUsages::UNIFORM,
        )?;
        cache.insert(element, p.clone());
        Ok(p)
    }

    /// Records the pass writing `binding` of `dst` with `params` as its
    /// uniform.
    fn encode_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        dst: &wgpu::Buffer,
        binding: SlotBinding,
        params: &wgpu::Buffer,
    ) -> Result<()> {
        let pipeline = self.pipeline(Reader::of(frame.format()))?;
        let planes = self.frames.get_or_make(planes_key(&pipeline, frame), || {
            frame_bind_group(
                &self.gpu,
                &pipeline.get_bind_group_layout(0),
                frame,
                Some(&self.yuv),
            )
        })?;
        let gpu = &self.gpu;
        let key = vec![
            Bound::Pipeline((*pipeline).clone()),
            Bound::Buffer(dst.clone(), binding.offset, binding.size),
            Bound::buffer(params),
        ];
        let out = self.outputs.get_or_make(key, || {
            gpu.scoped("tensorize output binding", || {
                gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgnn tensorize output"),
                    layout: &pipeline.get_bind_group_layout(1),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: dst,
                                offset: binding.offset,
                                size: wgpu::BufferSize::new(binding.size),
                            }),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: params.as_entire_binding(),
                        },
                    ],
                })
            })
        })?;
        let (gx, gy) = groups_2d(self.options.width, self.options.height);
        // No error scope: wgpu 30 validates a pass as its encoder finishes,
        // and the finishing caller's scope names the error.
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgnn tensorize"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &planes, &[]);
        pass.set_bind_group(1, &out, &[]);
        pass.dispatch_workgroups(gx, gy, 1);
        Ok(())
    }

    /// [`Tensorizer::encode`] and submit.
    pub fn run<'a>(&self, frame: &GpuFrame, dst: impl Into<TensorBuffer<'a>>) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.encode(&mut encoder, frame, dst)?;
        self.submit(encoder)
    }

    /// [`Tensorizer::encode`] of the part `region` (x, y, w, h in frame
    /// pixels) of `frame` only: the resize mode maps the region, clamped to
    /// the frame, into the tensor as it maps a whole frame, and bilinear
    /// taps stay inside the pixels the region touches. A region with no area
    /// inside the frame is an error naming it.
    ///
    /// Each call gets a parameter buffer of its own (one small counted
    /// upload), so that any number of regions can be recorded into one
    /// encoder and each pass still sees its own region: a shared buffer
    /// written with `write_buffer` would hold only the last region by the
    /// time the submit runs.
    pub fn encode_region<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        region: [f32; 4],
        dst: impl Into<TensorBuffer<'a>>,
    ) -> Result<()> {
        let dst = dst.into();
        self.expect_single(&dst)?;
        self.encode_slot(encoder, frame, Some(region), dst, 0)
    }

    /// Bytes each [`Tensorizer::encode_region`] uploads (its parameters),
    /// for callers that count what they move.
    pub fn region_upload_bytes() -> u64 {
        std::mem::size_of::<TensorizeParams>() as u64
    }

    /// [`Tensorizer::encode_region`] and submit.
    pub fn run_region<'a>(
        &self,
        frame: &GpuFrame,
        region: [f32; 4],
        dst: impl Into<TensorBuffer<'a>>,
    ) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.encode_region(&mut encoder, frame, region, dst)?;
        self.submit(encoder)
    }

    fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.gpu
            .submit("tensorize submit", [encoder.finish()])
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::SlotBinding;

    #[test]
    fn a_slot_is_bound_from_the_aligned_offset_before_it_in_whole_words() {
        // f32 items of 3 x 256 x 256: every slot starts aligned.
        let item = 3 * 256 * 256 * 4;
        for slot in [0, 1, 7] {
            let b = SlotBinding::of(slot, item, 4, 256);
            assert_eq!((b.offset, b.size, b.element), (slot * item, item, 0));
        }
        // f16 items of 105 values (210 bytes), alignment 256: slot 1 starts
        // mid-word at element 105 of the range from 0; slot 2 at byte 420,
        // 164 bytes past 256.
        assert_eq!(
            SlotBinding::of(1, 210, 2, 256),
            SlotBinding {
                offset: 0,
                size: 420,
                element: 105
            }
        );
        assert_eq!(
            SlotBinding::of(2, 210, 2, 256),
            SlotBinding {
                offset: 256,
                size: 376,
                element: 82
            }
        );
        // Alignment 32: 3 x 7 x 5 f32 items (420 bytes), slot 3 at 1260.
        assert_eq!(
            SlotBinding::of(3, 420, 4, 32),
            SlotBinding {
                offset: 1248,
                size: 432,
                element: 3
            }
        );
        // Every binding is a whole number of words ending at or past the
        // item and starting within one alignment before it.
        for align in [4, 16, 32, 64, 256] {
            for (item, es) in [(6, 2), (210, 2), (420, 4), (12, 4)] {
                for slot in 0..40 {
                    let b = SlotBinding::of(slot, item, es, align);
                    let start = slot * item;
                    assert_eq!(b.offset % align, 0);
                    assert_eq!(b.size % 4, 0);
                    assert!(start - b.offset < align);
                    assert_eq!(b.offset + u64::from(b.element) * es, start);
                    assert!(b.offset + b.size >= start + item);
                    assert!(b.offset + b.size < start + item + 4);
                }
            }
        }
    }
}
