//! SIGINT, SIGTERM and SIGHUP for the CLIs. The first signal ends the stream
//! (EOS) so that the muxer finishes the file, which is then moved into place;
//! the exit code is 128 + the signal (130 for Ctrl-C, 143 for `kill`,
//! `timeout` or `docker stop`, 129 for a closed terminal or SSH session). Finalising can take a while (the encoder holds frames
//! back, software Vulkan is slow), and a user who presses Ctrl-C again is
//! told what the job waits for rather than losing the file to impatience: a
//! second signal only says what is going on; a third abandons the job,
//! removes its temporary output (the target is left as it was) and exits.
//! Before a job has a stream to end, the first signal abandons at once.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use std::io::Write;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

type StopFn = Arc<dyn Fn() + Send + Sync>;

struct State {
    program: String,
    /// The first signal received: it sets the exit code.
    first: Option<i32>,
    count: u32,
    /// Ends the stream; set while a pipeline runs.
    stop: Option<StopFn>,
    /// What the job does once stopped, e.g. "finalising out.mp4".
    finishing: String,
    /// Removed before exiting without unwinding (Drop does not run).
    temporaries: Vec<PathBuf>,
}

/// The process's SIGINT/SIGTERM/SIGHUP handling; see the module docs.
#[derive(Clone)]
pub struct Interrupts {
    state: Arc<Mutex<State>>,
}

fn name_of(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

impl Interrupts {
    /// Takes over SIGINT, SIGTERM and SIGHUP for the rest of the process; messages
    /// start with `program`.
    pub fn install(program: &str) -> std::io::Result<Interrupts> {
        let state = Arc::new(Mutex::new(State {
            program: program.to_string(),
            first: None,
            count: 0,
            stop: None,
            finishing: String::new(),
            temporaries: Vec::new(),
        }));
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        let handled = state.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    on_signal(&handled, signal);
                }
            })?;
        Ok(Interrupts { state })
    }

    /// From now on the first signal calls `stop` (which should end the
    /// stream) and the job goes on `finishing` (e.g. "finalising out.mp4").
    pub fn on_stop(&self, finishing: impl Into<String>, stop: impl Fn() + Send + Sync + 'static) {
        let mut s = self.state.lock().unwrap();
        s.finishing = finishing.into();
        s.stop = Some(Arc::new(stop));
    }

    /// The stream is over: a signal from now on abandons at once.
    pub fn clear_stop(&self) {
        self.state.lock().unwrap().stop = None;
    }

    /// `path` (a temporary file or folder) is removed if the job is
    /// abandoned.
    pub fn remove_on_abandon(&self, path: PathBuf) {
        self.state.lock().unwrap().temporaries.push(path);
    }

    /// 128 + the first signal received, if one was.
    pub fn exit_code(&self) -> Option<u8> {
        self.state
            .lock()
            .unwrap()
            .first
            .map(|s| (128 + s).clamp(0, 255) as u8)
    }
}

/// A line on stderr, which may be gone (SIGHUP: the terminal closed):
/// eprintln! would panic there and leave the job running. Where it is gone,
/// stderr is pointed at /dev/null, so that the program's own last lines
/// (eprintln! after the file is finalised) do not panic either.
fn say(line: std::fmt::Arguments) {
    if writeln!(std::io::stderr(), "{line}").is_err() {
        silence_stderr();
    }
}

#[cfg(target_os = "linux")]
fn silence_stderr() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: dup2 onto descriptor 2 from a descriptor this File owns;
        // the File closes only its own.
        unsafe { libc::dup2(null.as_raw_fd(), 2) };
    }
}

#[cfg(not(target_os = "linux"))]
fn silence_stderr() {}

fn on_signal(state: &Mutex<State>, signal: i32) {
    let mut s = state.lock().unwrap();
    s.count += 1;
    let first = *s.first.get_or_insert(signal);
    let name = name_of(signal);
    match (s.count, s.stop.clone()) {
        (1, Some(stop)) => {
            say(format_args!(
                "{}: {name}: ending the stream and {}",
                s.program, s.finishing
            ));
            drop(s);
            stop();
        }
        (2, Some(_)) => {
            say(format_args!(
                "{}: {name} again: still {} (the frames in flight go through the model and \
                 the encoder, then the file is closed); a third signal abandons it and keeps \
                 nothing",
                s.program, s.finishing
            ));
        }
        _ => {
            for path in &s.temporaries {
                let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir_all(path));
            }
            let what = if s.temporaries.is_empty() {
                "stopped"
            } else {
                "abandoned; nothing written"
            };
            say(format_args!("{}: {name}: {what}", s.program));
            std::process::exit(128 + first);
        }
    }
}
