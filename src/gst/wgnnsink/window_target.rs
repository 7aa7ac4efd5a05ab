//! A `wgnnsink` window: the winit window (owned by the UI thread, see
//! `window`) with a wgpu surface on it, configured and presented from the
//! streaming thread, and the events the UI thread forwards to its sink.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use winit::dpi::PhysicalSize;
use winit::window::Window;

use super::imp::{Drawn, Shown};
use super::present::Presenter;
use super::window::{self, WindowListener, WindowSpec};
use crate::gpu::Gpu;

/// The window's side of a sink: what the UI thread tells it.
struct WindowEvents {
    size: Mutex<PhysicalSize<u32>>,
    closed: AtomicBool,
    sink: glib::WeakRef<super::WgnnSink>,
}

impl WindowListener for WindowEvents {
    fn resized(&self, size: PhysicalSize<u32>) {
        *self.size.lock().unwrap() = size;
    }

    fn close_requested(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // Posted now rather than at the next frame, so that a paused
        // pipeline hears of it too.
        if let Some(sink) = self.sink.upgrade() {
            gst::element_imp_error!(
                sink.imp(),
                gst::ResourceError::NotFound,
                ("Output window was closed by the user")
            );
        }
    }

    fn redraw(&self) {
        if let Some(sink) = self.sink.upgrade() {
            sink.imp().redraw();
        }
    }
}

/// A window with a wgpu surface on it.
pub(super) struct WindowTarget {
    // Options so that Drop can release the surface before the window.
    window: Option<Arc<Window>>,
    surface: Option<wgpu::Surface<'static>>,
    config: Option<wgpu::SurfaceConfiguration>,
    /// The format the pipeline draws in: the surface's, without sRGB
    /// encoding, since frames hold sRGB-encoded values already.
    view_format: wgpu::TextureFormat,
    events: Arc<WindowEvents>,
}

impl Drop for WindowTarget {
    fn drop(&mut self) {
        self.surface.take();
        if let Some(w) = self.window.take() {
            window::close(w);
        }
    }
}

impl WindowTarget {
    pub fn open(gpu: &Gpu, spec: WindowSpec, sink: &super::WgnnSink) -> Result<Self, String> {
        let events = Arc::new(WindowEvents {
            size: Mutex::new(spec.size),
            closed: AtomicBool::new(false),
            sink: sink.downgrade(),
        });
        let window = window::open(spec, events.clone())?;
        *events.size.lock().unwrap() = window.inner_size();
        let mut target = WindowTarget {
            window: Some(window),
            surface: None,
            config: None,
            view_format: wgpu::TextureFormat::Bgra8Unorm,
            events,
        };
        target.create_surface(gpu)?;
        Ok(target)
    }

    pub fn window(&self) -> Option<&Arc<Window>> {
        self.window.as_ref()
    }

    /// The window's size as the UI thread last reported it.
    pub fn size(&self) -> PhysicalSize<u32> {
        *self.events.size.lock().unwrap()
    }

    /// Whether the user closed the window.
    pub fn closed(&self) -> bool {
        self.events.closed.load(Ordering::Acquire)
    }

    fn create_surface(&mut self, gpu: &Gpu) -> Result<(), String> {
        self.surface = None;
        self.config = None;
        let window = self.window.clone().ok_or("the window is gone")?;
        let surface = gpu
            .instance()
            .create_surface(window)
            .map_err(|e| format!("cannot create a GPU surface on the window: {e}"))?;
        self.surface = Some(surface);
        Ok(())
    }

    fn configure(&mut self, gpu: &Gpu, size: PhysicalSize<u32>) -> Result<(), String> {
        let surface = self.surface.as_ref().ok_or("the window has no surface")?;
        let caps = surface.get_capabilities(gpu.adapter());
        let Some(&first) = caps.formats.first() else {
            return Err(format!(
                "the GPU adapter ({}) cannot present to this window",
                gpu.info().name
            ));
        };
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| !f.is_srgb())
            .unwrap_or(first);
        // The GStreamer clock paces frames; the present must not wait for a
        // vertical blank on top of that, so mailbox when there is one.
        let present_mode = if caps.present_modes.contains(&wgpu::PresentMode::Mailbox) {
            wgpu::PresentMode::Mailbox
        } else {
            wgpu::PresentMode::Fifo
        };
        let alpha_mode = if caps.alpha_modes.contains(&wgpu::CompositeAlphaMode::Opaque) {
            wgpu::CompositeAlphaMode::Opaque
        } else {
            caps.alpha_modes[0]
        };
        let view_format = format.remove_srgb_suffix();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: size.width,
            height: size.height,
            present_mode,
            desired_maximum_frame_latency: 1,
            alpha_mode,
            view_formats: if view_format == format {
                vec![]
            } else {
                vec![view_format]
            },
        };
        gpu.scoped("wgnnsink: configuring the window surface", || {
            surface.configure(gpu.device(), &config)
        })
        .map_err(|e| e.to_string())?;
        self.config = Some(config);
        self.view_format = view_format;
        Ok(())
    }

    /// Draws `shown` into the window, reconfiguring or recreating the
    /// surface when it says it is outdated or lost.
    pub fn present(
        &mut self,
        gpu: &Gpu,
        presenter: &mut Presenter,
        shown: &Shown,
    ) -> Result<Drawn, String> {
        let size = *self.events.size.lock().unwrap();
        if size.width == 0 || size.height == 0 {
            return Ok(Drawn::Skipped("the window has no area"));
        }
        if self
            .config
            .as_ref()
            .is_none_or(|c| (c.width, c.height) != (size.width, size.height))
        {
            self.configure(gpu, size)?;
        }
        let mut recreated = false;
        for _ in 0..3 {
            let surface = self.surface.as_ref().ok_or("the window has no surface")?;
            let (texture, suboptimal) = match surface.get_current_texture() {
                wgpu::CurrentSurfaceTexture::Success(t) => (t, false),
                wgpu::CurrentSurfaceTexture::Suboptimal(t) => (t, true),
                wgpu::CurrentSurfaceTexture::Timeout => {
                    return Ok(Drawn::Skipped("the surface timed out"))
                }
                wgpu::CurrentSurfaceTexture::Occluded => {
                    return Ok(Drawn::Skipped("the window is hidden"))
                }
                wgpu::CurrentSurfaceTexture::Outdated => {
                    self.configure(gpu, size)?;
                    continue;
                }
                wgpu::CurrentSurfaceTexture::Lost => {
                    if recreated {
                        return Err("the window's surface was lost and could not be \
                                    recreated"
                            .into());
                    }
                    recreated = true;
                    self.create_surface(gpu)?;
                    self.configure(gpu, size)?;
                    continue;
                }
                wgpu::CurrentSurfaceTexture::Validation => {
                    return Err("the window's surface raised a validation error".into())
                }
            };
            let view = texture.texture.create_view(&wgpu::TextureViewDescriptor {
                format: Some(self.view_format),
                ..Default::default()
            });
            presenter
                .draw(
                    gpu,
                    &shown.frame,
                    shown.color,
                    shown.aspect,
                    &view,
                    self.view_format,
                    (size.width, size.height),
                )
                .map_err(|e| e.to_string())?;
            drop(view);
            gpu.queue().present(texture);
            if suboptimal {
                // Next frame reconfigures for whatever the window became.
                self.config = None;
            }
            return Ok(Drawn::Window(size.width, size.height));
        }
        // A window being resized can outrun us; the next frame catches up.
        Ok(Drawn::Skipped("the surface stayed outdated"))
    }
}
