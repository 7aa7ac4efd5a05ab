//! Two jobs writing the same output: an advisory lock (flock) on a lock file
//! beside the target, so that the second refuses at start rather than both
//! finishing and one result being lost. Also the temporaries a killed job
//! left: their names carry the owner's pid, and those of a dead owner are
//! removed.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A held lock on `.NAME.lock` beside a target; dropping it removes the
/// file (while still holding it) and releases the lock.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    // Held open for the lock; closed after the file is removed.
    _file: std::fs::File,
}

impl Lock {
    /// Locks `name` in `folder`; `shown` names the output in the refusal.
    pub fn take(folder: &Path, name: &str, shown: &Path) -> Result<Lock> {
        let path = folder.join(format!(".{name}.lock"));
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::File {
                    path: folder.to_path_buf(),
                    message: format!("cannot write there: {e}"),
                })?;
            if !try_lock(&file) {
                return Err(Error::invalid(format!(
                    "another wgnn job is writing {}; wait for it to end or give another name",
                    shown.display()
                )));
            }
            // The job that held it may have removed the file between our
            // open and our lock: then the lock is on a file nobody else
            // sees, and we start again.
            if same_inode(&path, &file) {
                return Ok(Lock { path, _file: file });
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(target_os = "linux")]
fn try_lock(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this File owns and keeps open.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    // A filesystem without flock (some network ones) cannot lock: the job
    // goes on unlocked, as it did before locks.
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK)
}

#[cfg(not(target_os = "linux"))]
fn try_lock(_: &std::fs::File) -> bool {
    true
}

#[cfg(unix)]
fn same_inode(path: &Path, file: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(path: &Path, _: &std::fs::File) -> bool {
    path.exists()
}

/// The prefix of this process's temporaries for `name`: `.NAME.PID.`.
pub fn temporary_prefix(name: &str) -> String {
    format!(".{name}.{}.", std::process::id())
}

/// Removes the temporaries `.NAME.PID.*.partial` in `folder` whose owner
/// `PID` is no longer running (a killed job's); others are left alone.
pub fn remove_dead_temporaries(folder: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let start = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let Some(rest) = file_name
            .strip_prefix(&start)
            .filter(|_| file_name.ends_with(".partial"))
        else {
            continue;
        };
        let pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !alive(p)) {
            let path = entry.path();
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
        }
    }
}

#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 sends nothing; it only asks whether the pid exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(target_os = "linux"))]
fn alive(_: u32) -> bool {
    true
}
