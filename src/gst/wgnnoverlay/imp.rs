use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;
use gst_video::VideoRegionOfInterestMeta;

use super::analytics;
use super::items::{self, TextOptions, DEFAULT_COLORS};
use crate::gpu::TransferStats;
use crate::gst::device::DeviceSlot;
use crate::gst::element::{fail, gpu_frame_in, gpu_frame_out};
use crate::gst::frame_meter::FrameMeter;
use crate::gst::frames::Intake;
use crate::gst::property::Refusals;
use crate::gst::stats::Stats;
use crate::gst::{caps, frames, roi};
use crate::video::{
    Overlay, OverlayItem, OverlayStyle, TexturePool, MAX_FONT_SIZE, MAX_KEYPOINT_RADIUS,
    MAX_LINE_WIDTH, MIN_FONT_SIZE,
};

crate::gst::element_category!("wgnnoverlay", "wgnn results overlay element");

const DEFAULT_LINE_WIDTH: f64 = 2.0;
const DEFAULT_FONT_SIZE: f64 = 14.0;
const DEFAULT_KEYPOINT_RADIUS: f64 = 3.0;
const DEFAULT_MASK_OPACITY: f64 = 0.45;
/// As Ultralytics' plots.
const DEFAULT_KEYPOINT_THRESHOLD: f64 = 0.5;
const DEFAULT_ANALYTICS: bool = true;

#[derive(Clone, Debug)]
struct Settings {
    line_width: f64,
    font_size: f64,
    keypoint_radius: f64,
    mask_opacity: f64,
    keypoint_threshold: f64,
    analytics: bool,
    colors: Vec<[u8; 3]>,
    show_labels: bool,
    show_confidence: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            line_width: DEFAULT_LINE_WIDTH,
            font_size: DEFAULT_FONT_SIZE,
            keypoint_radius: DEFAULT_KEYPOINT_RADIUS,
            mask_opacity: DEFAULT_MASK_OPACITY,
            keypoint_threshold: DEFAULT_KEYPOINT_THRESHOLD,
            analytics: DEFAULT_ANALYTICS,
            colors: items::parse_colors(DEFAULT_COLORS).expect("the default palette parses"),
            show_labels: true,
            show_confidence: true,
        }
    }
}

impl Settings {
    fn style(&self) -> OverlayStyle {
        OverlayStyle {
            line_width: self.line_width as f32,
            font_size: self.font_size as f32,
            keypoint_radius: self.keypoint_radius as f32,
            mask_opacity: self.mask_opacity as f32,
            keypoint_threshold: self.keypoint_threshold as f32,
        }
    }

    fn text(&self) -> TextOptions {
        TextOptions {
            labels: self.show_labels,
            confidence: self.show_confidence,
        }
    }
}

struct State {
    input: Intake,
    out_info: gst_video::VideoInfo,
    out_texture: bool,
    /// Uploaded input frames and drawn output frames.
    pool: TexturePool,
    overlay: Option<Overlay>,
}

#[derive(Default)]
pub struct WgnnOverlay {
    settings: Mutex<Settings>,
    /// Set when the style changes; the next frame makes a new overlay (and
    /// glyph atlas).
    style_changed: AtomicBool,
    device: DeviceSlot,
    meter: FrameMeter,
    refusals: Refusals,
    state: Mutex<Option<State>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnOverlay {
    const NAME: &'static str = "GstWgnnOverlay";
    type Type = super::WgnnOverlay;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnOverlay {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecDouble::builder("line-width")
                    .nick("Line width")
                    .blurb("Box outline thickness in pixels, drawn inside the box (0: no outline)")
                    .minimum(0.0)
                    .maximum(f64::from(MAX_LINE_WIDTH))
                    .default_value(DEFAULT_LINE_WIDTH)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("font-size")
                    .nick("Font size")
                    .blurb("Label text size in pixels per em (DejaVu Sans)")
                    .minimum(f64::from(MIN_FONT_SIZE))
                    .maximum(f64::from(MAX_FONT_SIZE))
                    .default_value(DEFAULT_FONT_SIZE)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("keypoint-radius")
                    .nick("Keypoint radius")
                    .blurb("Radius in pixels of the disc drawn at each keypoint (0: none)")
                    .minimum(0.0)
                    .maximum(f64::from(MAX_KEYPOINT_RADIUS))
                    .default_value(DEFAULT_KEYPOINT_RADIUS)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("mask-opacity")
                    .nick("Mask opacity")
                    .blurb(
                        "Opacity of segmentation masks' fills in their box's colour, 0..1 \
                         (0: masks are not drawn)",
                    )
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(DEFAULT_MASK_OPACITY)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("keypoint-threshold")
                    .nick("Keypoint threshold")
                    .blurb(
                        "Keypoints scored below this are not drawn, nor the skeleton's \
                         segments that end at them",
                    )
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(DEFAULT_KEYPOINT_THRESHOLD)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecBoolean::builder("analytics")
                    .nick("Analytics")
                    .blurb(
                        "Draw wgnnanalytics' lines and zones with their names and counts, \
                         where its meta is on the buffer",
                    )
                    .default_value(DEFAULT_ANALYTICS)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecString::builder("colors")
                    .nick("Colours")
                    .blurb(
                        "Comma-separated hex colours 'RRGGBB'; an object takes the one at its \
                         label id, cycling through the list",
                    )
                    .default_value(Some(DEFAULT_COLORS))
                    .mutable_playing()
                    .build(),
                glib::ParamSpecBoolean::builder("show-labels")
                    .nick("Show labels")
                    .blurb("Write each object's label and top class above its box")
                    .default_value(true)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecBoolean::builder("show-confidence")
                    .nick("Show confidence")
                    .blurb("Write each detection's confidence (e.g. 0.87) in its label")
                    .default_value(true)
                    .mutable_playing()
                    .build(),
            ];
            props.extend(Stats::properties());
            props.extend(DeviceSlot::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self
            .device
            .set_property(self.obj().upcast_ref(), pspec, value)
        {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "line-width" => settings.line_width = value.get().unwrap(),
            "font-size" => settings.font_size = value.get().unwrap(),
            "keypoint-radius" => settings.keypoint_radius = value.get().unwrap(),
            "mask-opacity" => settings.mask_opacity = value.get().unwrap(),
            "keypoint-threshold" => settings.keypoint_threshold = value.get().unwrap(),
            "analytics" => settings.analytics = value.get().unwrap(),
            "colors" => {
                let parse =
                    |given: Option<&str>| items::parse_colors(given.unwrap_or(DEFAULT_COLORS));
                match self
                    .refusals
                    .parse(&*self.obj(), pspec, value, items::COLORS_ACCEPTED, parse)
                {
                    Some(colors) => settings.colors = colors,
                    None => return,
                }
            }
            "show-labels" => settings.show_labels = value.get().unwrap(),
            "show-confidence" => settings.show_confidence = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
        if matches!(
            pspec.name(),
            "line-width" | "font-size" | "keypoint-radius" | "mask-opacity" | "keypoint-threshold"
        ) {
            self.style_changed.store(true, Ordering::Release);
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        if let Some(v) = self.device.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "line-width" => settings.line_width.to_value(),
            "font-size" => settings.font_size.to_value(),
            "keypoint-radius" => settings.keypoint_radius.to_value(),
            "mask-opacity" => settings.mask_opacity.to_value(),
            "keypoint-threshold" => settings.keypoint_threshold.to_value(),
            "analytics" => settings.analytics.to_value(),
            "colors" => items::format_colors(&settings.colors).to_value(),
            "show-labels" => settings.show_labels.to_value(),
            "show-confidence" => settings.show_confidence.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnOverlay {}

impl ElementImpl for WgnnOverlay {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn results overlay",
                "Filter/Effect/Video",
                "Draws the regions of interest on the buffer (boxes, rotated boxes, labels \
                 with confidence and class, keypoints and skeletons, masks) and \
                 wgnnanalytics' lines and zones into the frame on the GPU; outputs RGBA",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(caps::rgba_templates);
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnOverlay {
    /// The overlay items of `inbuf` on a `width` x `height` frame: its
    /// analytics (under the objects), then its ROIs.
    fn items(&self, inbuf: &gst::BufferRef, width: u32, height: u32) -> Vec<OverlayItem> {
        let settings = self.settings.lock().unwrap();
        let detected: Vec<bool> = inbuf
            .iter_meta::<VideoRegionOfInterestMeta>()
            .map(|m| items::is_detection(&m))
            .collect();
        let mut all = if settings.analytics {
            analytics::items(inbuf, &settings.colors)
        } else {
            Vec::new()
        };
        all.extend(
            roi::read(inbuf, width, height)
                .iter()
                .zip(detected)
                .map(|(r, d)| items::item_for(r, d, &settings.colors, settings.text())),
        );
        all
    }
}

impl BaseTransformImpl for WgnnOverlay {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        self.meter.reset();
        self.device.ensure(self.obj().upcast_ref(), *CAT)?;
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        let out = caps::processing_transform(direction, caps, false, |_, _| true);
        let out = match direction {
            gst::PadDirection::Sink => caps::readable_by_peer(self.obj().upcast_ref(), out),
            _ => out,
        };
        let out = caps::filtered(out, filter);
        gst::trace!(CAT, imp = self, "{direction:?} {caps} -> {out}");
        Some(out)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("drawn on", incaps, outcaps, false)
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "drawing on {incaps} into {outcaps}");
        let mut state = self.state.lock().unwrap();
        // A new resolution keeps the overlay (its glyph atlas) but not the
        // frames' textures; the colour matrix may have changed.
        let mut overlay = state.take().and_then(|s| s.overlay);
        if let Some(o) = overlay.as_mut() {
            o.set_color(caps::color_spec(&n.in_info))
                .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        }
        *state = Some(State {
            input: Intake::negotiated(*CAT, &n),
            out_info: n.out_info,
            out_texture: n.out_texture,
            pool: TexturePool::new(),
            overlay,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.meter.query(&self.device, direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
    }

    fn prepare_output_buffer(
        &self,
        inbuf: InputBuffer,
    ) -> Result<PrepareOutputBufferSuccess, gst::FlowError> {
        let inbuf: &gst::BufferRef = match &inbuf {
            InputBuffer::Writable(b) => b,
            InputBuffer::Readable(b) => b,
        };
        let began = Instant::now();
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        if self.style_changed.swap(false, Ordering::AcqRel) || state.overlay.is_none() {
            state.overlay = None;
            let style = self.settings.lock().unwrap().style();
            let mut overlay = Overlay::new(&gpu, style)
                .map_err(|e| fail(element, "cannot set up the overlay", e))?;
            overlay
                .set_color(caps::color_spec(&state.input.info))
                .map_err(|e| fail(element, "cannot set up the overlay", e))?;
            state.overlay = Some(overlay);
        }
        let overlay = state.overlay.as_mut().expect("made just now");
        let (w, h) = (state.input.info.width(), state.input.info.height());
        let items = self.items(inbuf, w, h);
        let mut moved = TransferStats::default();
        let frame = gpu_frame_in(element, &gpu, &state.pool, &state.input, inbuf, &mut moved)?;
        let drawn = overlay
            .draw(&frame, &items, &state.pool)
            .map_err(|e| fail(element, "drawing the overlay failed", e))?;
        gst::log!(
            CAT,
            imp = self,
            "{} items drawn as {} quads and {} bytes of shapes",
            items.len(),
            overlay.last_quads(),
            overlay.last_shape_bytes()
        );
        let mut out = gpu_frame_out(
            element,
            &gpu,
            drawn,
            &state.out_info,
            state.out_texture,
            &mut moved,
        )?;
        items::copy_rois(inbuf, out.make_mut());
        frames::copy_timing(inbuf, &mut out)?;
        frames::hold_imported(inbuf, &mut out, &moved);
        self.meter
            .frame_done(*CAT, element, inbuf.pts(), &moved, began);
        Ok(PrepareOutputBufferSuccess::Buffer(out))
    }

    fn transform(
        &self,
        _inbuf: &gst::Buffer,
        _outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // The work happened while preparing the output buffer.
        Ok(gst::FlowSuccess::Ok)
    }
}
