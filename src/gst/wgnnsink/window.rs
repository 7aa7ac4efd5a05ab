//! The one UI thread every `wgnnsink` of the process shares.
//!
//! winit lets a process create an event loop once, ever, and only on the main
//! thread unless told otherwise; GStreamer renders from streaming threads, and
//! a process may run several pipelines and cycle them through NULL and
//! PLAYING. So the first sink that needs a window starts a thread that owns
//! the event loop for the rest of the process; sinks ask it for windows (and
//! give them back) through user events, and it hands each window's events to
//! the sink that owns it. Drawing stays with the sinks: wgpu surfaces can be
//! configured and presented from any thread.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::platform::x11::EventLoopBuilderExtX11;
use winit::window::{Fullscreen, Window, WindowId};

/// How long a sink waits for the UI thread before calling it stuck.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a window's owner hears about it. Called on the UI thread.
pub(super) trait WindowListener: Send + Sync {
    fn resized(&self, size: PhysicalSize<u32>);
    /// The user asked to close the window (the window is hidden already).
    fn close_requested(&self);
    /// The window's contents were lost (exposed, resized): draw them again.
    fn redraw(&self);
}

/// What a sink wants of a new window.
pub(super) struct WindowSpec {
    pub title: String,
    pub size: PhysicalSize<u32>,
    pub fullscreen: bool,
}

pub(super) fn fullscreen_mode(on: bool) -> Option<Fullscreen> {
    on.then_some(Fullscreen::Borderless(None))
}

type Reply = mpsc::SyncSender<Result<Arc<Window>, String>>;

enum Request {
    Open(WindowSpec, Arc<dyn WindowListener>, Reply),
    /// Carries the owner's last handle so that the window is destroyed on
    /// this thread, after its surface.
    Close(Arc<Window>),
}

struct Ui {
    proxy: Mutex<EventLoopProxy<Request>>,
}

static UI: OnceLock<Result<Ui, String>> = OnceLock::new();

/// True when the environment names a display server to open windows on.
pub(super) fn display_available() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()))
}

fn ui() -> Result<&'static Ui, String> {
    UI.get_or_init(start).as_ref().map_err(Clone::clone)
}

/// Starts the UI thread if it is not running. Its failure is final for the
/// process: winit refuses to build a second event loop.
pub(super) fn ensure_started() -> Result<(), String> {
    ui().map(|_| ())
}

fn start() -> Result<Ui, String> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("wgnnsink-ui".into())
        .spawn(move || {
            let built = std::panic::catch_unwind(|| {
                let mut builder = EventLoop::<Request>::with_user_event();
                // The X11 and Wayland builders share this setting.
                builder.with_any_thread(true);
                builder.build()
            });
            let event_loop = match built {
                Ok(Ok(event_loop)) => event_loop,
                Ok(Err(e)) => {
                    let _ = tx.send(Err(format!("cannot connect to the display: {e}")));
                    return;
                }
                Err(_) => {
                    let _ = tx.send(Err(
                        "cannot connect to the display: winit panicked while starting".into(),
                    ));
                    return;
                }
            };
            let _ = tx.send(Ok(event_loop.create_proxy()));
            let mut app = App::default();
            if let Err(e) = event_loop.run_app(&mut app) {
                log::error!("wgnnsink: the window event loop stopped: {e}");
            }
        })
        .map_err(|e| format!("cannot start the window thread: {e}"))?;
    let proxy = rx
        .recv_timeout(REPLY_TIMEOUT)
        .map_err(|_| "the window thread did not start".to_string())??;
    Ok(Ui {
        proxy: Mutex::new(proxy),
    })
}

/// Opens a window on the UI thread and waits for it.
pub(super) fn open(
    spec: WindowSpec,
    listener: Arc<dyn WindowListener>,
) -> Result<Arc<Window>, String> {
    let ui = ui()?;
    let (tx, rx) = mpsc::sync_channel(1);
    ui.proxy
        .lock()
        .unwrap()
        .send_event(Request::Open(spec, listener, tx))
        .map_err(|_| "the window thread has stopped".to_string())?;
    rx.recv_timeout(REPLY_TIMEOUT)
        .map_err(|_| "the window thread did not answer".to_string())?
}

/// Gives a window back; the UI thread destroys it.
pub(super) fn close(window: Arc<Window>) {
    if let Ok(ui) = ui() {
        // If the loop is gone the window is dropped here instead.
        let _ = ui.proxy.lock().unwrap().send_event(Request::Close(window));
    }
}

#[derive(Default)]
struct App {
    windows: HashMap<WindowId, (Arc<Window>, Arc<dyn WindowListener>)>,
}

impl ApplicationHandler<Request> for App {
    fn resumed(&mut self, _event_loop: &ActiveEventLoop) {
        // Windows are made on request, not at start-up.
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, request: Request) {
        match request {
            Request::Open(spec, listener, reply) => {
                let attributes = Window::default_attributes()
                    .with_title(spec.title)
                    .with_inner_size(spec.size)
                    .with_fullscreen(fullscreen_mode(spec.fullscreen));
                let window = event_loop
                    .create_window(attributes)
                    .map(Arc::new)
                    .map_err(|e| format!("cannot create a window: {e}"));
                if let Ok(w) = &window {
                    self.windows.insert(w.id(), (w.clone(), listener));
                }
                let _ = reply.send(window);
            }
            Request::Close(window) => {
                self.windows.remove(&window.id());
                window.set_visible(false);
            }
        }
    }

    fn window_event(&mut self, _event_loop: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        let Some((window, listener)) = self.windows.get(&id) else {
            return;
        };
        match event {
            WindowEvent::Resized(size) => {
                listener.resized(size);
                window.request_redraw();
            }
            WindowEvent::RedrawRequested => listener.redraw(),
            WindowEvent::CloseRequested => {
                window.set_visible(false);
                listener.close_requested();
            }
            _ => {}
        }
    }
}
