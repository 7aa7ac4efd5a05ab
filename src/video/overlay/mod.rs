//! Drawing results on frames on the GPU: boxes, labels and keypoints over
//! the frame, written as RGBA in one compute pass (see overlay.wgsl).
//!
//! The frame is read through the video module's reader snippets (any
//! [`VideoFormat`](super::VideoFormat); YUV by [`Overlay::set_color`]'s
//! matrix and range), so drawing on it costs no conversion pass and no
//! copy. What is drawn travels as one draw list per frame: a storage
//! buffer of quads (box edges, label backgrounds, glyphs, keypoint discs),
//! written with one counted upload of 16 + 48 bytes per quad (a box with a
//! ten-character label is about 15 quads, 720 bytes). Glyphs read an R8
//! atlas of printable ASCII rasterised once, when the overlay is made, from
//! the bundled DejaVu Sans (assets/fonts). Nothing is read back.

mod atlas;
mod layout;

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Checks, Gpu};

use super::frame::GpuFrame;
use super::frame_read::{frame_bind_group, yuv_buffer, ColorSpec, Reader};
use super::pool::TexturePool;

pub use atlas::{MAX_FONT_SIZE, MIN_FONT_SIZE};
use layout::{Layout, ListHeader, Quad};

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
}

impl Default for OverlayStyle {
    fn default() -> Self {
        OverlayStyle {
            line_width: 2.0,
            font_size: 14.0,
            keypoint_radius: 3.0,
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
        // The font size is checked by the atlas.
        Ok(())
    }
}

/// One thing to draw: a box with a label and keypoints.
#[derive(Clone, Debug, PartialEq)]
pub struct OverlayItem {
    /// x, y, w, h in frame pixels, rounded to whole pixels when drawn. An
    /// empty rectangle draws no outline, but its label and keypoints.
    pub rect: [f32; 4],
    /// Outline, label background and keypoint colour.
    pub color: [u8; 3],
    /// The label (may be empty: no label). Printable ASCII is drawn as
    /// itself, anything else as '?'.
    pub text: String,
    /// Frame pixels.
    pub keypoints: Vec<[f32; 2]>,
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
    /// Quads in the last frame's draw list.
    last_quads: usize,
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
            last_quads: 0,
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
        let gpu = self.gpu.clone();
        let header = std::mem::size_of::<ListHeader>() as u64;
        let quad = std::mem::size_of::<Quad>() as u64;
        let max = gpu.limits().max_storage_buffer_binding_size;
        let needed = (quads.len() as u64).max(1);
        if header + needed * quad > max {
            return Err(Error::invalid(format!(
                "overlay: {} quads need {} bytes of draw list, over the device limit \
                 max_storage_buffer_binding_size = {max}",
                quads.len(),
                header + needed * quad
            )));
        }
        let buffer = match &self.list {
            Some((b, room)) if *room >= needed => b.clone(),
            _ => {
                let room = needed
                    .next_power_of_two()
                    .max(64)
                    .min((max - header) / quad);
                let b = gpu.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgnn overlay draw list"),
                    size: header + room * quad,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })?;
                self.list = Some((b.clone(), room));
                b
            }
        };
        let head = ListHeader {
            count: quads.len() as u32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let mut bytes = Vec::with_capacity((header + quads.len() as u64 * quad) as usize);
        bytes.extend_from_slice(bytemuck::bytes_of(&head));
        bytes.extend_from_slice(bytemuck::cast_slice(quads));
        gpu.upload_buffer(&buffer, 0, &bytes)?;
        Ok(buffer)
    }

    /// The frame as RGBA with every item drawn over it, later items over
    /// earlier ones, in a texture from `pool`. Parts of items outside the
    /// frame are clipped. No CPU transfer of pixels: the only upload is the
    /// draw list.
    pub fn draw(
        &mut self,
        frame: &GpuFrame,
        items: &[OverlayItem],
        pool: &TexturePool,
    ) -> Result<GpuFrame> {
        let gpu = self.gpu.clone();
        let (w, h) = (frame.width(), frame.height());
        let out = GpuFrame::rgba_target(&gpu, pool, w, h)?;
        let quads = Layout {
            atlas: &self.atlas,
            style: self.style,
            width: w,
            height: h,
        }
        .quads(items);
        let list = self.write_list(&quads)?;
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
                ],
            })
        })?;
        let (gx, gy) = (w.div_ceil(TILE), h.div_ceil(TILE));
        gpu.scoped("overlay pass", || {
            let mut encoder =
                gpu.device()
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
            gpu.queue().submit([encoder.finish()]);
        })?;
        Ok(out)
    }
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
            &offsets!(Quad: bounds, extra, color, kind, _pad0, _pad1),
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
        assert!(src.contains(&format!("const KIND_FILL: u32 = {}u;", layout::KIND_FILL)));
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
        ] {
            let e = style.check().unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
        OverlayStyle::default().check().unwrap();
    }
}
