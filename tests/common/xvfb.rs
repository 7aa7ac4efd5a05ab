//! A private X server for window tests: Xvfb started by the test itself (a
//! test that needs it fails when it cannot start, it never skips), and
//! screenshots of its windows through x11rb. There is no window manager, so
//! top-level windows are the root's children and sit where they ask to.

use std::io::Read;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ChangeWindowAttributesAux, ClientMessageEvent, ConfigureWindowAux,
    ConnectionExt as _, EventMask, ImageFormat, ImageOrder, MapState, Window,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

/// A running Xvfb. A small shell wrapper started with it kills it as soon
/// as our end of its stdin closes: when the guard drops (also when a test
/// fails) or, whatever happens, when the test process exits.
pub struct Xvfb {
    wrapper: Child,
    stdin: Option<ChildStdin>,
    kill_on_drop: bool,
    /// The display name, e.g. ":3".
    pub display: String,
    pub conn: RustConnection,
    pub root: Window,
}

const WRAPPER: &str = r#"
Xvfb -displayfd 1 -screen 0 "$1" -nolisten tcp </dev/null 2>/dev/null &
xvfb=$!
read -r _ || true
kill "$xvfb" 2>/dev/null
wait "$xvfb" 2>/dev/null
"#;

impl Xvfb {
    /// Starts Xvfb with one `width` x `height` x 24 screen on a free display
    /// number (Xvfb picks it and reports it once it accepts connections);
    /// it stops when the guard drops.
    pub fn start(width: u32, height: u32) -> Xvfb {
        let found = Command::new("sh")
            .args(["-c", "command -v Xvfb"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            found,
            "this test needs Xvfb: apt-get install xvfb (bash .ci/setup installs it)"
        );
        let mut wrapper = Command::new("sh")
            .args(["-c", WRAPPER, "xvfb", &format!("{width}x{height}x24")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start Xvfb: {e}"));
        let stdin = wrapper.stdin.take();
        // Read up to the newline, not to EOF: Xvfb keeps stdout open.
        let mut stdout = wrapper.stdout.take().unwrap();
        let mut number = String::new();
        let mut byte = [0u8; 1];
        while let Ok(1) = stdout.read(&mut byte) {
            if byte[0] == b'\n' {
                break;
            }
            number.push(byte[0] as char);
        }
        let mut guard = Xvfb {
            wrapper,
            stdin,
            kill_on_drop: true,
            display: String::new(),
            conn: match number.trim().parse::<u32>() {
                Ok(n) => {
                    let display = format!(":{n}");
                    let (conn, _) = x11rb::connect(Some(&display))
                        .unwrap_or_else(|e| panic!("cannot connect to Xvfb on {display}: {e}"));
                    conn
                }
                Err(_) => panic!("Xvfb did not report a display number (got {number:?})"),
            },
            root: 0,
        };
        guard.display = format!(":{}", number.trim());
        guard.root = guard.conn.setup().roots[0].root;
        guard
    }

    /// For tests that open windows in this process: winit keeps its
    /// connection until the process exits, and Xlib ends a process whose X
    /// server goes away, so the server must outlive the test. The wrapper
    /// still stops it when the process exits, passed or failed.
    pub fn start_for_this_process(width: u32, height: u32) -> Xvfb {
        let mut x = Xvfb::start(width, height);
        x.kill_on_drop = false;
        x
    }

    /// Mapped top-level windows whose WM_NAME is `title`.
    pub fn windows_titled(&self, title: &str) -> Vec<Window> {
        let tree = self.conn.query_tree(self.root).unwrap().reply().unwrap();
        tree.children
            .into_iter()
            .filter(|&w| {
                let mapped = self
                    .conn
                    .get_window_attributes(w)
                    .ok()
                    .and_then(|c| c.reply().ok())
                    .is_some_and(|a| a.map_state == MapState::VIEWABLE);
                let name = self
                    .conn
                    .get_property(false, w, AtomEnum::WM_NAME, AtomEnum::STRING, 0, 1024)
                    .ok()
                    .and_then(|c| c.reply().ok())
                    .map(|p| p.value)
                    .unwrap_or_default();
                mapped && name == title.as_bytes()
            })
            .collect()
    }

    /// Waits for exactly one mapped window titled `title`.
    pub fn wait_window(&self, title: &str, timeout: Duration) -> Window {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self.windows_titled(title);
            if found.len() == 1 {
                return found[0];
            }
            assert!(
                Instant::now() < deadline,
                "no single window titled {title:?} after {timeout:?} (found {})",
                found.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The window's position on the screen and size.
    pub fn geometry(&self, window: Window) -> (i16, i16, u16, u16) {
        let g = self.conn.get_geometry(window).unwrap().reply().unwrap();
        (g.x, g.y, g.width, g.height)
    }

    /// The window's pixels as tightly packed RGBA (alpha 255).
    pub fn screenshot(&self, window: Window) -> (u32, u32, Vec<u8>) {
        let (_, _, w, h) = self.geometry(window);
        let image = self
            .conn
            .get_image(ImageFormat::Z_PIXMAP, window, 0, 0, w, h, !0)
            .unwrap()
            .reply()
            .unwrap();
        let setup = self.conn.setup();
        let bpp = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == image.depth)
            .map(|f| f.bits_per_pixel)
            .unwrap();
        assert_eq!(
            bpp, 32,
            "expected 32 bits per pixel for depth {}",
            image.depth
        );
        assert_eq!(setup.image_byte_order, ImageOrder::LSB_FIRST);
        let visual = setup
            .roots
            .iter()
            .flat_map(|s| &s.allowed_depths)
            .flat_map(|d| &d.visuals)
            .find(|v| v.visual_id == image.visual)
            .unwrap();
        let channel = |px: u32, mask: u32| (px & mask) >> mask.trailing_zeros();
        let rgba = image
            .data
            .chunks_exact(4)
            .flat_map(|p| {
                let px = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                [
                    channel(px, visual.red_mask) as u8,
                    channel(px, visual.green_mask) as u8,
                    channel(px, visual.blue_mask) as u8,
                    255,
                ]
            })
            .collect();
        (u32::from(w), u32::from(h), rgba)
    }

    /// Asks the window to close the way a window manager's close button does.
    pub fn close(&self, window: Window) {
        let protocols = self.atom("WM_PROTOCOLS");
        let delete = self.atom("WM_DELETE_WINDOW");
        let event = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
        self.conn
            .send_event(false, window, EventMask::NO_EVENT, event)
            .unwrap();
        self.conn.flush().unwrap();
    }

    pub fn resize(&self, window: Window, width: u32, height: u32) {
        self.conn
            .configure_window(
                window,
                &ConfigureWindowAux::new().width(width).height(height),
            )
            .unwrap();
        self.conn.flush().unwrap();
    }

    /// Starts hearing what clients ask of the window manager (there is none):
    /// requests sent to the root window, such as `_NET_WM_STATE` changes.
    pub fn watch_wm_requests(&self) {
        self.conn
            .change_window_attributes(
                self.root,
                &ChangeWindowAttributesAux::new().event_mask(EventMask::SUBSTRUCTURE_NOTIFY),
            )
            .unwrap()
            .check()
            .unwrap();
    }

    /// Waits for a `_NET_WM_STATE` request to add (`on`) or remove
    /// fullscreen from some window, and returns that window. Needs
    /// [`Xvfb::watch_wm_requests`] first.
    pub fn wait_fullscreen_request(&self, on: bool, timeout: Duration) -> Window {
        let state = self.atom("_NET_WM_STATE");
        let fullscreen = self.atom("_NET_WM_STATE_FULLSCREEN");
        let deadline = Instant::now() + timeout;
        loop {
            while let Some(event) = self.conn.poll_for_event().unwrap() {
                if let Event::ClientMessage(m) = event {
                    let data = m.data.as_data32();
                    if m.type_ == state && data[0] == u32::from(on) && data[1] == fullscreen {
                        return m.window;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "no request to {} fullscreen within {timeout:?}",
                if on { "enter" } else { "leave" }
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn atom(&self, name: &str) -> u32 {
        self.conn
            .intern_atom(false, name.as_bytes())
            .unwrap()
            .reply()
            .unwrap()
            .atom
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let stdin = self.stdin.take();
        if self.kill_on_drop {
            drop(stdin);
            let _ = self.wrapper.wait();
        } else {
            // Left open: the kernel closes it when the process exits.
            std::mem::forget(stdin);
        }
    }
}

/// Writes a picture where a failing test can point to it.
pub fn save_png(name: &str, width: u32, height: u32, rgba: &[u8]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{name}-{}.png", std::process::id()));
    let _ = image::RgbaImage::from_raw(width, height, rgba.to_vec()).map(|img| img.save(&path));
    path
}
