//! Frames in system memory, and their pixels read the way the shaders'
//! frame readers (`read_*.wgsl`, `yuv.wgsl`) read them.

use crate::error::{Error, Result};
use crate::video::{ColorSpec, FrameLayout, VideoFormat, YuvRange};

#[derive(Clone, Copy, Debug, Default)]
struct Plane<'a> {
    data: &'a [u8],
    stride: usize,
}

/// A frame's planes in system memory, checked against its format and size
/// once, so that reading any pixel afterwards stays in bounds.
#[derive(Clone, Copy, Debug)]
pub struct CpuFrame<'a> {
    format: VideoFormat,
    width: u32,
    height: u32,
    planes: [Plane<'a>; 3],
}

/// Largest width or height: keeps every row length (4 bytes a pixel at most)
/// and the `u32` plane sizes of [`VideoFormat::plane_size`] from overflowing.
const MAX_SIDE: u32 = u32::MAX / 4;

impl<'a> CpuFrame<'a> {
    /// A frame from one slice and stride per plane, in format order (Y, UV
    /// for NV12; Y, U, V for I420), each slice starting at the plane's first
    /// row (what `gst_video::VideoFrameRef::plane_data` hands out). The last
    /// row needs no padding after its pixels.
    pub fn new(
        format: VideoFormat,
        width: u32,
        height: u32,
        planes: &[(&'a [u8], usize)],
    ) -> Result<CpuFrame<'a>> {
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!(
                "zero-size frame ({width}x{height}): width and height must be at least 1"
            )));
        }
        if width > MAX_SIDE || height > MAX_SIDE {
            return Err(Error::invalid(format!(
                "{format} frame {width}x{height} is too large: at most {MAX_SIDE} pixels a side"
            )));
        }
        if planes.len() != format.plane_count() {
            return Err(Error::invalid(format!(
                "{format} frames have {} plane(s), got {}",
                format.plane_count(),
                planes.len()
            )));
        }
        let mut checked = [Plane::default(); 3];
        for (p, &(data, stride)) in planes.iter().enumerate() {
            let row = format.row_bytes(p, width);
            if stride < row {
                return Err(Error::invalid(format!(
                    "{format} plane {p}: stride {stride} is shorter than a row of {width} pixels \
                     ({row} bytes)"
                )));
            }
            let rows = format.plane_size(p, width, height).1 as usize;
            let needed = (rows - 1)
                .checked_mul(stride)
                .and_then(|n| n.checked_add(row));
            match needed {
                Some(n) if data.len() >= n => {}
                _ => {
                    return Err(Error::invalid(format!(
                        "{format} {width}x{height} frame: plane {p} has {} bytes, {rows} rows of \
                         stride {stride} need {}",
                        data.len(),
                        needed.map_or("more than memory holds".into(), |n| n.to_string())
                    )))
                }
            }
            checked[p] = Plane { data, stride };
        }
        Ok(CpuFrame {
            format,
            width,
            height,
            planes: checked,
        })
    }

    /// A frame laid out in one byte slice as `layout` says (as for
    /// [`upload_frame`](crate::video::upload_frame)).
    pub fn from_layout(layout: &FrameLayout, bytes: &'a [u8]) -> Result<CpuFrame<'a>> {
        let f = layout.format;
        let planes = layout
            .planes
            .iter()
            .enumerate()
            .map(|(p, plane)| {
                let data = bytes.get(plane.offset..).ok_or_else(|| {
                    Error::invalid(format!(
                        "{f} plane {p} starts at byte {}, past the end of the {} bytes of data",
                        plane.offset,
                        bytes.len()
                    ))
                })?;
                Ok((data, plane.stride))
            })
            .collect::<Result<Vec<_>>>()?;
        CpuFrame::new(f, layout.width, layout.height, &planes)
    }

    pub fn format(&self) -> VideoFormat {
        self.format
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// The frame's pixels as RGB, YUV converted as `color` says.
    pub(crate) fn reader(&self, color: ColorSpec) -> Reader<'a> {
        Reader {
            frame: *self,
            yuv: Yuv::new(color),
        }
    }
}

/// Y'CbCr -> R'G'B' from the matrix's luma weights: `yuv.wgsl` in f32.
#[derive(Clone, Copy, Debug)]
struct Yuv {
    kr: f32,
    kb: f32,
    full_range: bool,
}

impl Yuv {
    fn new(color: ColorSpec) -> Yuv {
        // The shader gets the weights as f32 pipeline constants.
        let (kr, kb) = color.matrix.kr_kb();
        Yuv {
            kr: kr as f32,
            kb: kb as f32,
            full_range: color.range == YuvRange::Full,
        }
    }

    #[inline]
    fn rgb(&self, y: u8, u: u8, v: u8) -> [f32; 3] {
        let (y, u, v) = (f32::from(y), f32::from(u), f32::from(v));
        let (luma, cb, cr) = if self.full_range {
            (y / 255.0, (u - 128.0) / 255.0, (v - 128.0) / 255.0)
        } else {
            ((y - 16.0) / 219.0, (u - 128.0) / 224.0, (v - 128.0) / 224.0)
        };
        let kg = 1.0 - self.kr - self.kb;
        let r = luma + 2.0 * (1.0 - self.kr) * cr;
        let b = luma + 2.0 * (1.0 - self.kb) * cb;
        let g = (luma - self.kr * r - self.kb * b) / kg;
        [r, g, b].map(|c| c.clamp(0.0, 1.0) * 255.0)
    }
}

/// Reads a [`CpuFrame`]'s pixels as RGB in 0..255, the shaders' `frame_rgb`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    frame: CpuFrame<'a>,
    yuv: Yuv,
}

impl Reader<'_> {
    pub(crate) fn width(&self) -> usize {
        self.frame.width as usize
    }

    pub(crate) fn height(&self) -> usize {
        self.frame.height as usize
    }

    /// The colour of pixel (`x`, `y`), which must lie inside the frame.
    #[inline]
    pub(crate) fn rgb(&self, x: usize, y: usize) -> [f32; 3] {
        let plane = |p: usize| {
            let plane = &self.frame.planes[p];
            let row = if p == 0 { y } else { y / 2 };
            &plane.data[row * plane.stride..]
        };
        let rgb = |px: &[u8], order: [usize; 3]| order.map(|c| f32::from(px[c]));
        match self.frame.format {
            VideoFormat::Rgba | VideoFormat::Rgbx => rgb(&plane(0)[x * 4..], [0, 1, 2]),
            VideoFormat::Bgra | VideoFormat::Bgrx => rgb(&plane(0)[x * 4..], [2, 1, 0]),
            VideoFormat::Rgb => rgb(&plane(0)[x * 3..], [0, 1, 2]),
            // Chroma from the sample covering the pixel, as `read_nv12.wgsl`.
            VideoFormat::Nv12 => {
                let uv = &plane(1)[x / 2 * 2..];
                self.yuv.rgb(plane(0)[x], uv[0], uv[1])
            }
            VideoFormat::I420 => self.yuv.rgb(plane(0)[x], plane(1)[x / 2], plane(2)[x / 2]),
        }
    }

    /// Row `y` into `out` (the frame's width long).
    pub(crate) fn row(&self, y: usize, out: &mut [[f32; 3]]) {
        for (x, px) in out.iter_mut().enumerate() {
            *px = self.rgb(x, y);
        }
    }
}
