//! A real Mosquitto (Debian's `mosquitto`, which .ci/setup installs) on a
//! free port, for the tests that publish to a broker (tests/gst/publish*.rs,
//! tests/pipelines).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Mosquitto on `port` that keeps its sessions and queued messages in
/// `dir` across restarts (saved when it is stopped), as a broker that a
/// restart must not make forget its subscribers. Anonymous clients are let
/// in on `port`; `listeners` adds others, each with its own settings.
pub struct Broker {
    pub port: u16,
    dir: PathBuf,
    listeners: String,
    child: Option<Child>,
}

impl Broker {
    pub fn start(dir: &Path) -> Broker {
        Broker::with_listeners(dir, String::new())
    }

    pub fn with_listeners(dir: &Path, listeners: String) -> Broker {
        // Mosquitto started as root runs as the user `mosquitto`, which
        // must be able to save its state here.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut b = Broker {
            port: free_port(),
            dir: dir.to_path_buf(),
            listeners,
            child: None,
        };
        b.restart();
        b
    }

    pub fn restart(&mut self) {
        let conf = self.dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "per_listener_settings true\nlistener {} 127.0.0.1\nallow_anonymous true\n{}\
                 persistence true\npersistence_location {}/\nautosave_interval 0\n",
                self.port,
                self.listeners,
                self.dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("mosquitto")
            .arg("-c")
            .arg(&conf)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mosquitto must be installed (.ci/setup installs it)");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < until,
                "mosquitto did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops it as a service manager would (SIGTERM: it saves its state).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}
