use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;
use gst_video::subclass::prelude::*;
use winit::dpi::PhysicalSize;
use winit::window::Window;

use super::present::Presenter;
use super::window::{self, WindowSpec};
use super::window_target::WindowTarget;
use crate::gpu::Gpu;
use crate::gst::device::DeviceSlot;
use crate::gst::frames::Intake;
use crate::gst::stats::Stats;
use crate::gst::{caps, frames};
use crate::video::{ColorSpec, GpuFrame, TexturePool};

crate::gst::element_category!("wgnnsink", "wgnn video sink element");

const DEFAULT_TITLE: &str = "wgnn";
/// The offscreen target's format, and the snapshot's.
const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

#[derive(Clone, Debug)]
struct Settings {
    offscreen: bool,
    fullscreen: bool,
    title: String,
    /// Target size; 0 = the frame's display size.
    width: u32,
    height: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            offscreen: false,
            fullscreen: false,
            title: DEFAULT_TITLE.into(),
            width: 0,
            height: 0,
        }
    }
}

/// What the caps say about the frames to come.
struct Negotiated {
    input: Intake,
    color: ColorSpec,
    /// Display aspect ratio (width / height), pixel aspect ratio included.
    aspect: f64,
}

fn display_size(info: &gst_video::VideoInfo) -> (u32, u32) {
    let par = info.par();
    let (w, h) = (info.width(), info.height());
    if par.numer() <= 0 || par.denom() <= 0 || par.numer() == par.denom() {
        return (w, h);
    }
    let w = (f64::from(w) * f64::from(par.numer()) / f64::from(par.denom())).round();
    ((w as u32).max(1), h)
}

/// The frame on screen, kept for redraws and snapshots.
pub(super) struct Shown {
    pub frame: Arc<GpuFrame>,
    pub color: ColorSpec,
    pub aspect: f64,
    pub pts: Option<gst::ClockTime>,
}

/// What became of a frame, for the per-frame debug line.
pub(super) enum Drawn {
    Offscreen(u32, u32),
    Window(u32, u32),
    Skipped(&'static str),
}

impl std::fmt::Display for Drawn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drawn::Offscreen(w, h) => write!(f, "drawn offscreen at {w}x{h}"),
            Drawn::Window(w, h) => write!(f, "presented in a {w}x{h} window"),
            Drawn::Skipped(why) => write!(f, "not drawn ({why})"),
        }
    }
}

struct State {
    gpu: Gpu,
    /// Textures for frames that arrive in system memory.
    pool: TexturePool,
    presenter: Presenter,
    negotiated: Option<Negotiated>,
    window: Option<WindowTarget>,
    offscreen: Option<crate::gpu::live::Texture>,
    last: Option<Shown>,
    /// The buffer `last` came from, held so that its address cannot be
    /// reused while we compare against it.
    last_buffer: Option<gst::Buffer>,
}

impl State {
    fn offscreen_texture(
        &mut self,
        width: u32,
        height: u32,
    ) -> Result<crate::gpu::live::Texture, String> {
        if let Some(t) = &self.offscreen {
            if (t.width(), t.height()) == (width, height) {
                return Ok(t.clone());
            }
        }
        let texture = render_texture(&self.gpu, width, height, "wgnnsink offscreen target")?;
        self.offscreen = Some(texture.clone());
        Ok(texture)
    }

    /// Draws the last frame to wherever this sink shows it.
    fn draw(&mut self, settings: &Settings) -> Result<Drawn, String> {
        let Some(shown) = &self.last else {
            return Ok(Drawn::Skipped("no frame yet"));
        };
        if settings.offscreen {
            let f = &shown.frame;
            let width = nonzero_or(settings.width, f.width());
            let height = nonzero_or(settings.height, f.height());
            let (frame, color, aspect) = (f.clone(), shown.color, shown.aspect);
            let texture = self.offscreen_texture(width, height)?;
            let view = texture.create_view(&Default::default());
            self.presenter
                .draw(
                    &self.gpu,
                    &frame,
                    color,
                    aspect,
                    &view,
                    OFFSCREEN_FORMAT,
                    (width, height),
                )
                .map_err(|e| e.to_string())?;
            return Ok(Drawn::Offscreen(width, height));
        }
        match &mut self.window {
            Some(w) => w.present(&self.gpu, &mut self.presenter, shown),
            None => Ok(Drawn::Skipped("no window")),
        }
    }
}

fn nonzero_or(v: u32, default: u32) -> u32 {
    if v == 0 {
        default
    } else {
        v
    }
}

fn render_texture(
    gpu: &Gpu,
    width: u32,
    height: u32,
    label: &str,
) -> Result<crate::gpu::live::Texture, String> {
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
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    })
    .map_err(|e| e.to_string())
}

#[derive(Default)]
pub struct WgnnSink {
    settings: Mutex<Settings>,
    device: DeviceSlot,
    state: Mutex<Option<State>>,
    stats: Stats,
    /// Bytes read back by `snapshot`; the only downloads this element makes.
    snapshot_bytes: AtomicU64,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnSink {
    const NAME: &'static str = "GstWgnnSink";
    type Type = super::WgnnSink;
    type ParentType = gst_video::VideoSink;
}

impl WgnnSink {
    /// Draws the last frame again (window exposed or resized while no new
    /// frame comes, e.g. when paused). Called on the UI thread, which must
    /// never wait for a streaming thread: skipped when the state is busy,
    /// since whoever holds it is drawing a newer frame anyway.
    pub(super) fn redraw(&self) {
        let settings = self.settings.lock().unwrap().clone();
        let Ok(mut state) = self.state.try_lock() else {
            return;
        };
        let Some(state) = state.as_mut() else {
            return;
        };
        if state.last.is_none() {
            return;
        }
        match state.draw(&settings) {
            Ok(drawn) => gst::log!(CAT, imp = self, "redraw: {drawn}"),
            Err(e) => gst::warning!(CAT, imp = self, "redraw failed: {e}"),
        }
    }

    /// The picture last drawn, read back as RGBA: the offscreen target as it
    /// is, or the last frame drawn again at the window's size. The one
    /// download this element makes, and only when asked.
    fn snapshot(&self) -> Option<gst::Sample> {
        let settings = self.settings.lock().unwrap().clone();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut()?;
        let shown = state.last.as_ref()?;
        let picture = if settings.offscreen {
            state
                .offscreen
                .clone()
                .ok_or_else(|| "nothing was drawn yet".to_string())
        } else {
            let size = state
                .window
                .as_ref()
                .map(WindowTarget::size)
                .filter(|s| s.width > 0 && s.height > 0)
                .unwrap_or(PhysicalSize::new(shown.frame.width(), shown.frame.height()));
            render_texture(
                &state.gpu,
                size.width,
                size.height,
                "wgnnsink snapshot target",
            )
            .and_then(|t| {
                let view = t.create_view(&Default::default());
                state
                    .presenter
                    .draw(
                        &state.gpu,
                        &shown.frame,
                        shown.color,
                        shown.aspect,
                        &view,
                        OFFSCREEN_FORMAT,
                        (size.width, size.height),
                    )
                    .map_err(|e| e.to_string())?;
                Ok(t)
            })
        };
        let result = picture.and_then(|t| {
            let bytes = crate::video::download_rgba(&state.gpu, &t).map_err(|e| e.to_string())?;
            Ok((t.width(), t.height(), bytes))
        });
        let (width, height, bytes) = match result {
            Ok(r) => r,
            Err(e) => {
                gst::element_imp_warning!(
                    self,
                    gst::ResourceError::Read,
                    ("snapshot failed: {}", e)
                );
                return None;
            }
        };
        self.snapshot_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        gst::debug!(
            CAT,
            imp = self,
            "snapshot: {width}x{height}, downloaded {} bytes",
            bytes.len()
        );
        let mut buffer = gst::Buffer::from_mut_slice(bytes);
        buffer.get_mut().unwrap().set_pts(shown.pts);
        let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, width, height)
            .build()
            .ok()?
            .to_caps()
            .ok()?;
        Some(gst::Sample::builder().buffer(&buffer).caps(&caps).build())
    }

    fn open_window(&self, state: &mut State, negotiated: &Negotiated) -> Result<(), String> {
        let settings = self.settings.lock().unwrap().clone();
        let (w, h) = display_size(&negotiated.input.info);
        let spec = WindowSpec {
            title: settings.title,
            size: PhysicalSize::new(
                nonzero_or(settings.width, w),
                nonzero_or(settings.height, h),
            ),
            fullscreen: settings.fullscreen,
        };
        let target = WindowTarget::open(&state.gpu, spec, &self.obj())?;
        let size = target.size();
        gst::info!(
            CAT,
            imp = self,
            "opened a {}x{} window",
            size.width,
            size.height
        );
        state.window = Some(target);
        Ok(())
    }
}

impl ObjectImpl for WgnnSink {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecBoolean::builder("offscreen")
                    .nick("Offscreen")
                    .blurb(
                        "Draw into an offscreen texture instead of a window (no display \
                         needed); read it with the snapshot action signal",
                    )
                    .default_value(false)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("fullscreen")
                    .nick("Fullscreen")
                    .blurb("Show the window borderless and fullscreen")
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecString::builder("window-title")
                    .nick("Window title")
                    .blurb("Title of the window")
                    .default_value(Some(DEFAULT_TITLE))
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("width")
                    .nick("Width")
                    .blurb(
                        "Width of the offscreen target, or of the window when it opens; \
                         0 = the frame's display width",
                    )
                    .maximum(16384)
                    .default_value(0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("height")
                    .nick("Height")
                    .blurb(
                        "Height of the offscreen target, or of the window when it opens; \
                         0 = the frame's height",
                    )
                    .maximum(16384)
                    .default_value(0)
                    .mutable_ready()
                    .build(),
            ];
            props.extend(Stats::properties());
            props.extend(DeviceSlot::properties());
            props
        });
        PROPS.as_ref()
    }

    fn signals() -> &'static [glib::subclass::Signal] {
        static SIGNALS: LazyLock<Vec<glib::subclass::Signal>> = LazyLock::new(|| {
            vec![glib::subclass::Signal::builder("snapshot")
                .action()
                .return_type::<gst::Sample>()
                .class_handler(|args| {
                    let sink = args[0].get::<super::WgnnSink>().ok()?;
                    Some(sink.imp().snapshot().to_value())
                })
                .build()]
        });
        SIGNALS.as_ref()
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
            "offscreen" => settings.offscreen = value.get().unwrap(),
            "width" => settings.width = value.get().unwrap(),
            "height" => settings.height = value.get().unwrap(),
            "fullscreen" => {
                settings.fullscreen = value.get().unwrap();
                let on = settings.fullscreen;
                drop(settings);
                if let Some(w) = self.current_window() {
                    w.set_fullscreen(window::fullscreen_mode(on));
                }
            }
            "window-title" => {
                settings.title = value
                    .get::<Option<String>>()
                    .unwrap()
                    .unwrap_or_else(|| DEFAULT_TITLE.into());
                let title = settings.title.clone();
                drop(settings);
                if let Some(w) = self.current_window() {
                    w.set_title(&title);
                }
            }
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if pspec.name() == "bytes-downloaded" {
            let counted = self
                .stats
                .property("bytes-downloaded")
                .and_then(|v| v.get::<u64>().ok())
                .unwrap_or(0);
            return (counted + self.snapshot_bytes.load(Ordering::Relaxed)).to_value();
        }
        if let Some(v) = self.stats.property(pspec.name()) {
            return v;
        }
        if let Some(v) = self.device.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "offscreen" => settings.offscreen.to_value(),
            "fullscreen" => settings.fullscreen.to_value(),
            "window-title" => settings.title.to_value(),
            "width" => settings.width.to_value(),
            "height" => settings.height.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl WgnnSink {
    fn current_window(&self) -> Option<Arc<Window>> {
        let state = self.state.lock().unwrap();
        state.as_ref()?.window.as_ref()?.window().cloned()
    }
}

impl GstObjectImpl for WgnnSink {}

impl ElementImpl for WgnnSink {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn video sink",
                "Sink/Video",
                "Shows video frames (memory:WgpuTexture or system memory) in a window through \
                 a wgpu surface, with no readback, or draws them offscreen",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            // Texture memory first: it is what the sink is for.
            let caps = caps::any_memory_caps();
            vec![gst::PadTemplate::new(
                "sink",
                gst::PadDirection::Sink,
                gst::PadPresence::Always,
                &caps,
            )
            .unwrap()]
        });
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl BaseSinkImpl for WgnnSink {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.stats.reset();
        self.snapshot_bytes.store(0, Ordering::Relaxed);
        let offscreen = self.settings.lock().unwrap().offscreen;
        if !offscreen {
            if !window::display_available() {
                return Err(gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    ("no display to open a window on: set DISPLAY or WAYLAND_DISPLAY, or use \
                         offscreen=true")
                ));
            }
            window::ensure_started()
                .map_err(|e| gst::error_msg!(gst::ResourceError::OpenWrite, ("{}", e)))?;
        }
        let gpu = self.device.ensure(self.obj().upcast_ref(), *CAT)?;
        *self.state.lock().unwrap() = Some(State {
            gpu,
            pool: TexturePool::new(),
            presenter: Presenter::default(),
            negotiated: None,
            window: None,
            offscreen: None,
            last: None,
            last_buffer: None,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        // Dropping the state closes the window.
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let input = caps::input(caps).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let info = input.info.clone();
        caps::video_format(&info).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        if info.width() == 0 || info.height() == 0 {
            return Err(gst::loggable_error!(CAT, "zero-size frames in {caps}"));
        }
        let (w, h) = display_size(&info);
        let negotiated = Negotiated {
            color: caps::color_spec(&info),
            aspect: f64::from(w) / f64::from(h),
            input: Intake::new(*CAT, input),
        };
        let offscreen = self.settings.lock().unwrap().offscreen;
        let mut state = self.state.lock().unwrap();
        let state = state
            .as_mut()
            .ok_or_else(|| gst::loggable_error!(CAT, "caps before start"))?;
        if !offscreen && state.window.is_none() {
            if let Err(e) = self.open_window(state, &negotiated) {
                gst::element_imp_error!(self, gst::ResourceError::OpenWrite, ("{}", e));
                return Err(gst::loggable_error!(CAT, "{e}"));
            }
        }
        gst::debug!(CAT, imp = self, "showing {caps}");
        state.negotiated = Some(negotiated);
        Ok(())
    }

    fn query(&self, query: &mut gst::QueryRef) -> bool {
        self.device.answer(query) || BaseSinkImplExt::parent_query(self, query)
    }

    fn propose_allocation(
        &self,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        // Strided and offset planes upload as they are: no repacking needed.
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
        self.parent_propose_allocation(query)
    }
}

impl VideoSinkImpl for WgnnSink {
    fn show_frame(&self, buffer: &gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let settings = self.settings.lock().unwrap().clone();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::Flushing)?;
        if state.window.as_ref().is_some_and(WindowTarget::closed) {
            // The UI thread posted the error when the user closed it.
            return Err(gst::FlowError::Error);
        }
        if state
            .last_buffer
            .as_ref()
            .is_some_and(|b| b.as_ptr() == buffer.as_ptr())
        {
            // The video sink base shows the preroll buffer again when
            // playing starts; it is on screen already.
            gst::log!(CAT, imp = self, "buffer already shown at preroll");
            return Ok(gst::FlowSuccess::Ok);
        }
        let negotiated = state
            .negotiated
            .as_ref()
            .ok_or(gst::FlowError::NotNegotiated)?;
        let obj = self.obj();
        let (frame, moved) = frames::frame_in(
            obj.upcast_ref(),
            &state.gpu,
            &state.pool,
            &negotiated.input,
            buffer,
        )
        .map_err(|e| {
            gst::element_imp_error!(
                self,
                gst::StreamError::Failed,
                ("cannot take the frame: {}", e)
            );
            gst::FlowError::Error
        })?;
        let (width, height, format) = (frame.width(), frame.height(), frame.format());
        state.last = Some(Shown {
            frame,
            color: negotiated.color,
            aspect: negotiated.aspect,
            pts: buffer.pts(),
        });
        state.last_buffer = Some(buffer.clone());
        let drawn = state.draw(&settings).map_err(|e| {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
            gst::FlowError::Error
        })?;
        let n = self.stats.frame(&moved);
        gst::debug!(
            CAT,
            imp = self,
            "frame {n}: {width}x{height} {format} {drawn}, uploaded {} bytes, downloaded 0 \
             bytes, imported {} bytes",
            moved.upload_bytes,
            moved.bytes_imported
        );
        Ok(gst::FlowSuccess::Ok)
    }
}
