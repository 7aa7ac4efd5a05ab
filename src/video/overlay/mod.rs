//! Drawing results on frames on the GPU: boxes (upright or rotated), labels,
//! keypoints and skeletons, segmentation masks, lines and filled polygons
//! over the frame, written as RGBA in one compute pass (see overlay.wgsl).
//!
//! The frame is read through the video module's reader snippets (any
//! [`VideoFormat`](super::VideoFormat); YUV by [`Overlay::set_color`]'s
//! matrix and range), so drawing on it costs no conversion pass and no
//! copy. What is drawn travels as one draw list per frame: a storage
//! buffer of quads (box edges, label backgrounds, glyphs, keypoint discs,
//! thick segments, polygons, masks), written with one counted upload of
//! 16 + 48 bytes per quad (a box with a ten-character label is about 15
//! quads, 720 bytes), and one of shapes (polygons' corners, 8 bytes each;
//! masks' bits over the part of their region on the frame, one bit a
//! pixel), skipped when empty. Glyphs read an R8 atlas of printable ASCII
//! rasterised once, when the overlay is made, from the bundled DejaVu Sans
//! (assets/fonts). Nothing is read back.

mod atlas;
mod layout;
mod shapes;

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Checks, Gpu};

use super::frame::GpuFrame;
use super::frame_read::{frame_bind_group, yuv_buffer, ColorSpec, Reader};
use super::pool::TexturePool;

pub use atlas::{MAX_FONT_SIZE, MIN_FONT_SIZE};
use layout::{Layout, ListHeader, Quad};
pub use shapes::{OverlayMask, OverlayPath, COCO_SKELETON};

/// Widest box outline and largest keypoint radius, pixels.
pub const MAX_LINE_WIDTH: f32 = 100.0;
pub const MAX_KEYPOINT_RADIUS: f32 = 100.0;

/// Pixels per side of the square tile one workgroup draws (overlay.wgsl's
/// `TILE`).
const TILE: u32 = 16;

/// How items are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverlayStyle {
    /// Box outline thickness in pixels, drawn inside the box (rounded to
    /// whole pixels; 0 draws no outline).
    pub line_width: f32,
    /// Label text size, pixels per em ([`MIN_FONT_SIZE`]..[`MAX_FONT_SIZE`]).
    pub font_size: f32,
    /// Radius of the disc drawn at each keypoint, pixels (0: none).
    pub keypoint_radius: f32,
    /// Opacity of masks' fills, 0..1 (0: masks are not drawn).
    pub mask_opacity: f32,
    /// Keypoints whose score is below this (0..1) are not drawn, nor the
    /// skeleton's segments that end at them.
    pub keypoint_threshold: f32,
}

impl Default for OverlayStyle {
    fn default() -> Self {
        OverlayStyle {
            line_width: 2.0,
            font_size: 14.0,
            keypoint_radius: 3.0,
            mask_opacity: 0.45,
            keypoint_threshold: 0.5,
        }
    }
}

impl OverlayStyle {
    fn check(&self) -> Result<()> {
        let in_range = |v: f32, max: f32| v.is_finite() && (0.0..=max).contains(&v);
        if !in_range(self.line_width, MAX_LINE_WIDTH) {
            return Err(Error::invalid(format!(
                "overlay: line width {} is outside 0..{MAX_LINE_WIDTH} pixels",
                self.line_width
            )));
        }
        if !in_range(self.keypoint_radius, MAX_KEYPOINT_RADIUS) {
            return Err(Error::invalid(format!(
                "overlay: keypoint radius {} is outside 0..{MAX_KEYPOINT_RADIUS} pixels",
                self.keypoint_radius
            )));
        }
        for (v, what) in [
            (self.mask_opacity, "mask opacity"),
            (self.keypoint_threshold, "keypoint threshold"),
        ] {
            if !in_range(v, 1.0) {
                return Err(Error::invalid(format!(
                    "overlay: {what} {v} is outside 0..1"
                )));
            }
        }
        // The font size is checked by the atlas.
        Ok(())
    }
}

/// One thing to draw: a box with a label, keypoints and a mask, or a path
/// (a line or a polygon) with a label. Painted in this order: mask, path,
/// box outline, skeleton, keypoints, label.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OverlayItem {
    /// x, y, w, h in frame pixels, rounded to whole pixels when drawn. An
    /// empty rectangle draws no outline, but its label and keypoints (the
    /// label's top-left corner at x, y).
    pub rect: [f32; 4],
    /// Outline, label background, keypoint and mask colour.
    pub color: [u8; 3],
    /// The label (may be empty: no label). Printable ASCII is drawn as
    /// itself, anything else as '?'.
    pub text: String,
    /// Frame pixels.
    pub keypoints: Vec<[f32; 2]>,
    /// One per keypoint where the model gives them (else empty: all drawn).
    pub keypoint_scores: Vec<f32>,
    /// Radians from +x towards +y: the box is drawn turned by this about
    /// its centre (its outline centred on the turned edges), its label at
    /// its topmost corner.
    pub angle: Option<f32>,
    pub mask: Option<OverlayMask>,
    pub path: Option<OverlayPath>,
}

/// Draws [`OverlayItem`]s on frames. One per stream: it keeps the glyph
/// atlas, the draw list buffer and a pipeline per frame reader.
pub struct Overlay {
    gpu: Gpu,
    style: OverlayStyle,
    atlas: atlas::Atlas,
    atlas_view: wgpu::TextureView,
    yuv: crate::gpu::live::Buffer,
    pipelines: HashMap<Reader, crate::gpu::live::ComputePipeline>,
    /// The draw list buffer and how many quads it holds room for; grows
    /// (doubling) and is rewritten each frame.
    list: Option<(crate::gpu::live::Buffer, u64)>,
    /// The shapes buffer (polygon corners, mask bits) and its room in
    /// words, grown like the draw list.
    shapes: Option<(crate::gpu::live::Buffer, u64)>,
    /// Quads in the last frame's draw list.
    last_quads: usize,
    /// Bytes of shapes in the last frame's upload.
    last_shape_bytes: usize,
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("style", &self.style)
            .finish_non_exhaustive()
    }
}

pub(crate) const OVERLAY_SOURCE: &str = include_str!("overlay.wgsl");

/// The overlay kernel reading frames through `reader`.
pub(crate) fn overlay_source(reader: Reader) -> String {
    format!("{}\n{OVERLAY_SOURCE}", reader.source())
}

impl Overlay {
    /// Checks `style`, rasterises the glyph atlas for its font size and
    /// uploads it (once, counted on `gpu`).
    pub fn new(gpu: &Gpu, style: OverlayStyle) -> Result<Overlay> {
        style.check()?;
        let atlas = atlas::Atlas::new(style.font_size)?;
        let max = gpu.limits().max_texture_dimension_2d;
        if atlas.width > max || atlas.height > max {
            return Err(Error::invalid(format!(
                "overlay: the glyph atlas for font size {} is {}x{}, over the device limit \
                 max_texture_dimension_2d = {max}",
                style.font_size, atlas.width, atlas.height
            )));
        }
        let texture = gpu.create_texture(&wgpu::TextureDescriptor {
            label: Some("wgnn overlay glyphs"),
            size: wgpu::Extent3d {
                width: atlas.width,
                height: atlas.height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::R8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        })?;
        gpu.upload_texture(
            &texture,
            TextureRegion::whole(&texture),
            &atlas.pixels,
            atlas.width,
            atlas.height,
        )?;
        Ok(Overlay {
            gpu: gpu.clone(),
            style,
            atlas_view: texture.create_view(&Default::default()),
            atlas,
            yuv: yuv_buffer(gpu, ColorSpec::default())?,
            pipelines: HashMap::new(),
            list: None,
            shapes: None,
            last_quads: 0,
            last_shape_bytes: 0,
        })
    }

    pub fn style(&self) -> OverlayStyle {
        self.style
    }

    /// How YUV frames convert to RGB (default: BT.601, limited range).
    pub fn set_color(&mut self, color: ColorSpec) -> Result<()> {
        self.yuv = yuv_buffer(&self.gpu, color)?;
        Ok(())
    }

    /// Quads in the last frame's draw list (after leaving out those off the
    /// frame); its upload was 16 + 48 bytes per quad.
    pub fn last_quads(&self) -> usize {
        self.last_quads
    }

    /// Bytes of polygon corners and mask bits the last frame uploaded.
    pub fn last_shape_bytes(&self) -> usize {
        self.last_shape_bytes
    }

    fn pipeline(&mut self, reader: Reader) -> Result<crate::gpu::live::ComputePipeline> {
        if let Some(p) = self.pipelines.get(&reader) {
            return Ok(p.clone());
        }
        let p = self
            .gpu
            .compute_pipeline("wgnn overlay", &overlay_source(reader), Checks::All)?;
        self.pipelines.insert(reader, p.clone());
        Ok(p)
    }

    /// Writes this frame's draw list: one upload of the header and quads
    /// into a buffer that grows when the list outgrows it.
    fn write_list(&mut self, quads: &[Quad]) -> Result<crate::gpu::live::Buffer> {
        let head = ListHeader {
            count: quads.len() as u32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let mut bytes = Vec::with_capacity(64 + std::mem::size_of_val(quads));
        bytes.extend_from_slice(bytemuck::bytes_of(&head));
        bytes.extend_from_slice(bytemuck::cast_slice(quads));
        let buffer = grown(&self.gpu, &mut self.list, "draw list", bytes.len() as u64)?;
        self.gpu.upload_buffer(&buffer, 0, &bytes)?;
        Ok(buffer)
    }

    /// Writes this frame's shapes (nothing when there are none: the
    /// buffer keeps its room and the kernel reads none of it).
    fn write_shapes(&mut self, words: &[u32]) -> Result<crate::gpu::live::Buffer> {
        let bytes: &[u8] = bytemuck::cast_slice(words);
        let buffer = grown(&self.gpu, &mut self.shapes, "shapes", bytes.len() as u64)?;
        self.gpu.upload_buffer(&buffer, 0, bytes)?;
        self.last_shape_bytes = bytes.len();
        Ok(buffer)
    }

    /// The frame as RGBA with every item drawn over it, later items over
    /// earlier ones, in a texture from `pool`. Parts of items outside the
    /// frame are clipped. No CPU transfer of pixels: the only uploads are
    /// the draw list and the shapes (polygon corners, mask bits).
    pub fn draw(
        &mut self,
        frame: &GpuFrame,
        items: &[OverlayItem],
        pool: &TexturePool,
    ) -> Result<GpuFrame> {
        let gpu = self.gpu.clone();
        let (w, h) = (frame.width(), frame.height());
        let out = GpuFrame::rgba_target(&gpu, pool, w, h)?;
        let (quads, shapes) = Layout {
            atlas: &self.atlas,
            style: self.style,
            width: w,
            height: h,
            shape_words: shape_words(&gpu),
        }
        .draw_list(items);
        let list = self.write_list(&quads)?;
        let shapes = self.write_shapes(&shapes)?;
        self.last_quads = quads.len();
        let pipeline = self.pipeline(Reader::of(frame.format()))?;
        let planes = frame_bind_group(
            &gpu,
            &pipeline.get_bind_group_layout(0),
            frame,
            Some(&self.yuv),
        )?;
        let out_texture = out.plane(0).expect("an RGBA frame has one plane");
        let out_view = out_texture.create_view(&Default::default());
        let own = gpu.scoped("overlay bindings", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn overlay"),
                layout: &pipeline.get_bind_group_layout(1),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(&out_view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: list.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::TextureView(&self.atlas_view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: shapes.as_entire_binding(),
                    },
                ],
            })
        })?;
        let (gx, gy) = (w.div_ceil(TILE), h.div_ceil(TILE));
        let mut encoder = gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgnn overlay"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn overlay"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &planes, &[]);
            pass.set_bind_group(1, &own, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        // wgpu 30 validates the pass as the encoder finishes: one scope
        // holds both.
        gpu.submit("overlay pass", [encoder.finish()])?;
        Ok(out)
    }
}

/// Most words of shapes one frame may upload: the device's storage
/// binding limit, and at most 64 MiB (a thousand full-frame 720p masks).
/// Masks past it are not drawn.
fn shape_words(gpu: &Gpu) -> usize {
    let max = gpu.limits().max_storage_buffer_binding_size.min(64 << 20);
    (max / 4) as usize
}

/// `slot`'s buffer if it holds `needed` bytes, else a new one of the next
/// power of two (at least 4 KiB, at most the device's storage binding
/// limit) that takes its place.
fn grown(
    gpu: &Gpu,
    slot: &mut Option<(crate::gpu::live::Buffer, u64)>,
    what: &str,
    needed: u64,
) -> Result<crate::gpu::live::Buffer> {
    let max = gpu.limits().max_storage_buffer_binding_size;
    if needed > max {
        return Err(Error::invalid(format!(
            "overlay: the {what} needs {needed} bytes, over the device limit \
             max_storage_buffer_binding_size = {max}"
        )));
    }
    if let Some((b, room)) = slot {
        if *room >= needed {
            return Ok(b.clone());
        }
    }
    let room = needed.next_power_of_two().max(4096).min(max);
    let b = gpu.create_buffer(&wgpu::BufferDescriptor {
        label: Some(&format!("wgnn overlay {what}")),
        size: room,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })?;
    *slot = Some((b.clone(), room));
    Ok(b)
}

#[cfg(test)]
mod gpu_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::testing::{assert_same_layout, offsets, validate};

    #[test]
    fn overlay_kernel_validates_for_every_reader() {
        for reader in Reader::ALL {
            validate(&format!("overlay {reader:?}"), &overlay_source(reader));
        }
    }

    #[test]
    fn draw_list_structs_match_the_kernel() {
        let src = overlay_source(Reader::Packed);
        assert_same_layout(
            &src,
            "Quad",
            std::mem::size_of::<Quad>(),
            &offsets!(Quad: bounds, extra, color, kind, width, data),
        );
        // The header is DrawList's members before the quads.
        let module = validate("overlay", &src);
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("DrawList"))
            .expect("DrawList");
        let wgpu::naga::TypeInner::Struct { members, .. } = &ty.inner else {
            panic!("DrawList is not a struct");
        };
        let fields = offsets!(ListHeader: count, _pad0, _pad1, _pad2);
        assert_eq!(members.len(), fields.len() + 1);
        for (m, (name, offset)) in members.iter().zip(fields) {
            assert_eq!((m.name.as_deref(), m.offset as usize), (Some(name), offset));
        }
        let quads = members.last().unwrap();
        assert_eq!(
            (quads.name.as_deref(), quads.offset as usize),
            (Some("quads"), std::mem::size_of::<ListHeader>())
        );
        assert!(src.contains(&format!("const TILE: u32 = {TILE}u;")));
        assert!(src.contains(&format!("const KIND_GLYPH: u32 = {}u;", layout::KIND_GLYPH)));
        assert!(src.contains(&format!("const KIND_DISC: u32 = {}u;", layout::KIND_DISC)));
        for (name, kind) in [
            ("KIND_FILL", layout::KIND_FILL),
            ("KIND_SEGMENT", layout::KIND_SEGMENT),
            ("KIND_POLYGON", layout::KIND_POLYGON),
            ("KIND_MASK", layout::KIND_MASK),
        ] {
            assert!(
                src.contains(&format!("const {name}: u32 = {kind}u;")),
                "{name}"
            );
        }
    }

    #[test]
    fn styles_out_of_range_are_refused() {
        for (style, what) in [
            (
                OverlayStyle {
                    line_width: -1.0,
                    ..Default::default()
                },
                "line width",
            ),
            (
                OverlayStyle {
                    line_width: f32::NAN,
                    ..Default::default()
                },
                "line width",
            ),
            (
                OverlayStyle {
                    keypoint_radius: 1e9,
                    ..Default::default()
                },
                "keypoint radius",
            ),
            (
                OverlayStyle {
                    mask_opacity: 1.5,
                    ..Default::default()
                },
                "mask opacity",
            ),
            (
                OverlayStyle {
                    keypoint_threshold: -0.1,
                    ..Default::default()
                },
                "keypoint threshold",
            ),
        ] {
            let e = style.check().unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
        OverlayStyle::default().check().unwrap();
    }
}
