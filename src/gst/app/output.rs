//! Outputs written where they cannot hurt: a temporary file (or folder, for
//! a PNG sequence) beside the target, on the same filesystem, renamed into
//! place only when the job ends well. A failed job leaves whatever was at the
//! target untouched and no temporary file behind (dropping an [`Output`]
//! removes it). The temporary's name carries this process's id, and those a
//! killed job left are removed by the next; a lock beside the target keeps
//! two jobs from writing it at once. A target that is a symbolic link is
//! written through (the file it leads to is replaced, the link kept); one
//! that is not a regular file (a device, a FIFO) is refused.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::lock::{remove_dead_temporaries, temporary_prefix, Lock};
use super::pattern::check_pattern;
use crate::error::{Error, Result};

/// A file or PNG sequence being written.
#[derive(Debug)]
pub struct Output {
    kind: Kind,
    /// Dropped after `kind`: the temporary goes before the lock.
    lock: Lock,
}

#[derive(Debug)]
enum Kind {
    /// `target` as the user named it; `real` where it is written (through
    /// a symbolic link).
    File {
        target: PathBuf,
        real: PathBuf,
        temp: tempfile::TempPath,
    },
    /// `pattern`'s file name holds the `%d`; the frames are written into
    /// `temp` (a folder in the pattern's folder) and moved out at the end.
    Sequence {
        pattern: PathBuf,
        name: OsString,
        temp: tempfile::TempDir,
    },
}

/// The prefix of a PNG sequence's temporary folders.
const FRAMES: &str = "wgnn-frames";

fn file_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::File {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// The folder a target lands in: its parent, or the current one.
fn folder_of(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that `folder` exists and is a folder, for an error that names it.
fn check_folder(folder: &Path) -> Result<()> {
    match std::fs::metadata(folder) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(file_error(folder, "not a folder")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(file_error(folder, "no such folder"))
        }
        Err(e) => Err(file_error(folder, e)),
    }
}

/// A temporary file or folder that cannot be made: the folder named once
/// (tempfile adds the temporary's own path to the message).
fn unwritable(folder: &Path, e: std::io::Error) -> Error {
    let text = e.to_string();
    let text = text.split(" at path ").next().unwrap_or(&text);
    file_error(folder, format!("cannot write there: {text}"))
}

/// Where a file target is written: itself, or the file a symbolic link
/// leads to; anything but a regular file (or none yet) is refused.
fn real_target(target: &Path) -> Result<PathBuf> {
    let Ok(meta) = std::fs::symlink_metadata(target) else {
        return Ok(target.to_path_buf());
    };
    if meta.is_dir() {
        return Err(file_error(target, "is a folder; give a file name"));
    }
    if meta.is_file() {
        return Ok(target.to_path_buf());
    }
    let real = if meta.file_type().is_symlink() {
        match target.canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(file_error(
                    target,
                    "is a symbolic link to a missing file; give a file name",
                ))
            }
            Err(e) => return Err(file_error(target, e)),
        }
    } else {
        target.to_path_buf()
    };
    crate::files::check_regular(&real).map_err(|e| {
        file_error(
            target,
            format!("{e}; outputs are written to regular files only"),
        )
    })?;
    Ok(real)
}

impl Output {
    /// Creates the temporary file beside `target` (or the file it links
    /// to): this is also the check that its folder exists and can be
    /// written, and that no other job writes it.
    pub fn file(target: &Path) -> Result<Output> {
        let real = real_target(target)?;
        let folder = folder_of(&real);
        check_folder(folder)?;
        let name = real.file_name().unwrap_or_default().to_string_lossy();
        let lock = Lock::take(folder, &name, target)?;
        remove_dead_temporaries(folder, &name);
        let prefix = temporary_prefix(&name);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".partial");
        usual_permissions(&mut builder);
        let temp = builder
            .tempfile_in(folder)
            .map_err(|e| unwritable(folder, e))?
            .into_temp_path();
        Ok(Output {
            kind: Kind::File {
                target: target.to_path_buf(),
                real,
                temp,
            },
            lock,
        })
    }

    /// A PNG sequence like `frames/%05d.png`: a temporary folder in
    /// `frames/`, whose files are moved into `frames/` at the end. The file
    /// name must hold exactly one frame number (it becomes a printf format).
    pub fn sequence(pattern: &Path) -> Result<Output> {
        let name = pattern.file_name().unwrap_or_default().to_os_string();
        let folder = folder_of(pattern);
        if folder.to_string_lossy().contains('%') {
            return Err(file_error(
                pattern,
                "only the file name may hold the frame number (%d), not the folder",
            ));
        }
        check_pattern(&name.to_string_lossy()).map_err(|e| file_error(pattern, e))?;
        check_folder(folder)?;
        let lock = Lock::take(folder, &name.to_string_lossy(), pattern)?;
        remove_dead_temporaries(folder, FRAMES);
        let temp = tempfile::Builder::new()
            .prefix(&temporary_prefix(FRAMES))
            .suffix(".partial")
            .tempdir_in(folder)
            .map_err(|e| unwritable(folder, e))?;
        Ok(Output {
            kind: Kind::Sequence {
                pattern: pattern.to_path_buf(),
                name,
                temp,
            },
            lock,
        })
    }

    /// Where the job writes now: the temporary file, or the pattern inside
    /// the temporary folder.
    pub fn location(&self) -> PathBuf {
        match &self.kind {
            Kind::File { temp, .. } => temp.to_path_buf(),
            Kind::Sequence { name, temp, .. } => temp.path().join(name),
        }
    }

    /// What the user named: the target file or the pattern.
    pub fn target(&self) -> &Path {
        match &self.kind {
            Kind::File { target, .. } => target,
            Kind::Sequence { pattern, .. } => pattern,
        }
    }

    /// The temporary file or folder and the lock file, for a signal handler
    /// that must remove them before the process exits without unwinding.
    pub fn temporaries(&self) -> Vec<PathBuf> {
        let temp = match &self.kind {
            Kind::File { temp, .. } => temp.to_path_buf(),
            Kind::Sequence { temp, .. } => temp.path().to_path_buf(),
        };
        vec![temp, self.lock.path().to_path_buf()]
    }

    /// Moves the finished output into place (replacing what was there);
    /// returns how many files it placed.
    pub fn commit(self) -> Result<usize> {
        match self.kind {
            Kind::File { target, real, temp } => {
                temp.persist(&real)
                    .map_err(|e| file_error(&target, format!("cannot move it into place: {e}")))?;
                Ok(1)
            }
            Kind::Sequence { pattern, temp, .. } => {
                let folder = folder_of(&pattern).to_path_buf();
                let mut files: Vec<PathBuf> = std::fs::read_dir(temp.path())
                    .map_err(|e| file_error(temp.path(), e))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .collect();
                files.sort();
                for f in &files {
                    let to = folder.join(f.file_name().unwrap_or_default());
                    std::fs::rename(f, &to)
                        .map_err(|e| file_error(&to, format!("cannot move it into place: {e}")))?;
                }
                Ok(files.len())
            }
        }
    }
}

/// Renamed into place, a file must carry the usual permissions (0666 less
/// the umask), not a temporary file's 0600.
fn usual_permissions(builder: &mut tempfile::Builder) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    #[cfg(not(unix))]
    let _ = builder;
}

/// Whether `a` and `b` name the same existing file (same device and inode on
/// Unix: hard links, symbolic links and `./` spellings included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wgnn-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_dropped_file_leaves_the_old_one_and_no_temporary() {
        let dir = scratch("drop");
        let target = dir.join("out.mp4");
        std::fs::write(&target, b"old").unwrap();
        let out = Output::file(&target).unwrap();
        std::fs::write(out.location(), b"half").unwrap();
        let name = out
            .location()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(&format!(".out.mp4.{}.", std::process::id())),
            "{name}"
        );
        let mut during = vec![".out.mp4.lock".to_string(), name, "out.mp4".into()];
        during.sort();
        assert_eq!(entries(&dir), during);
        drop(out);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(entries(&dir), ["out.mp4"]);
    }

    #[test]
    fn a_committed_file_replaces_the_old_one() {
        let dir = scratch("commit");
        let target = dir.join("out.mkv");
        std::fs::write(&target, b"old").unwrap();
        let out = Output::file(&target).unwrap();
        std::fs::write(out.location(), b"new").unwrap();
        assert_eq!(out.commit().unwrap(), 1);
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(entries(&dir), ["out.mkv"]);
    }

    #[test]
    fn a_second_job_on_the_same_target_is_refused_while_the_first_runs() {
        let dir = scratch("lock");
        let target = dir.join("out.mp4");
        let first = Output::file(&target).unwrap();
        let e = Output::file(&target).unwrap_err().to_string();
        assert!(e.starts_with("another wgnn job is writing "), "{e}");
        assert!(e.contains("out.mp4"), "{e}");
        // Through a link to it, too: the lock is beside the real file.
        #[cfg(unix)]
        {
            let link = dir.join("link.mp4");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(Output::file(&link).is_err());
            std::fs::remove_file(&link).unwrap();
        }
        let pattern = dir.join("%03d.png");
        let frames = Output::sequence(&pattern).unwrap();
        assert!(Output::sequence(&pattern).is_err());
        drop(frames);
        drop(first);
        let again = Output::file(&target).unwrap();
        drop(again);
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    }

    #[test]
    fn temporaries_of_dead_jobs_are_removed_and_live_ones_kept() {
        let dir = scratch("stale");
        // A pid that cannot be running (above Linux's pid_max) and this one.
        let dead = dir.join(".out.mp4.4194305.abc123.partial");
        let live = dir.join(format!(".out.mp4.{}.zzz999.partial", std::process::id()));
        let dead_frames = dir.join(".wgnn-frames.4194305.abc123.partial");
        std::fs::write(&dead, b"x").unwrap();
        std::fs::write(&live, b"x").unwrap();
        std::fs::create_dir(&dead_frames).unwrap();
        std::fs::write(dead_frames.join("001.png"), b"x").unwrap();
        drop(Output::file(&dir.join("out.mp4")).unwrap());
        drop(Output::sequence(&dir.join("%03d.png")).unwrap());
        assert!(!dead.exists() && !dead_frames.exists());
        assert!(live.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through_and_a_device_refused() {
        let dir = scratch("link");
        let real = dir.join("real.png");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.join("link.png");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let out = Output::file(&link).unwrap();
        assert_eq!(out.target(), link);
        std::fs::write(out.location(), b"new").unwrap();
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");

        let full = dir.join("full.png");
        std::os::unix::fs::symlink("/dev/full", &full).unwrap();
        let dangling = dir.join("dangling.png");
        std::os::unix::fs::symlink(dir.join("missing.png"), &dangling).unwrap();
        for (target, says) in [
            (
                full.as_path(),
                "it is a character device, not a regular file",
            ),
            (Path::new("/dev/null"), "it is a character device"),
            (dangling.as_path(), "is a symbolic link to a missing file"),
        ] {
            let e = Output::file(target).unwrap_err().to_string();
            assert!(e.contains(says), "{}: {e}", target.display());
        }
        assert!(std::fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            entries(&dir),
            ["dangling.png", "full.png", "link.png", "real.png"]
        );
    }

    #[test]
    fn a_sequence_moves_its_frames_out_only_when_committed() {
        let dir = scratch("seq");
        std::fs::write(dir.join("001.png"), b"old").unwrap();
        let pattern = dir.join("%03d.png");
        let out = Output::sequence(&pattern).unwrap();
        let loc = out.location();
        assert!(loc.starts_with(&dir) && loc != pattern);
        std::fs::write(loc.parent().unwrap().join("001.png"), b"new1").unwrap();
        std::fs::write(loc.parent().unwrap().join("002.png"), b"new2").unwrap();
        assert_eq!(out.commit().unwrap(), 2);
        assert_eq!(entries(&dir), ["001.png", "002.png"]);
        assert_eq!(std::fs::read(dir.join("001.png")).unwrap(), b"new1");

        let failed = Output::sequence(&pattern).unwrap();
        std::fs::write(failed.location().parent().unwrap().join("001.png"), b"x").unwrap();
        drop(failed);
        assert_eq!(std::fs::read(dir.join("001.png")).unwrap(), b"new1");
        assert_eq!(entries(&dir), ["001.png", "002.png"]);
    }

    #[test]
    fn missing_folders_and_bad_patterns_are_refused() {
        let dir = scratch("bad");
        let e = Output::file(&dir.join("no/such/out.mp4")).unwrap_err();
        assert!(e.to_string().contains("no/such"), "{e}");
        let e = Output::file(&dir).unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        let e = Output::sequence(&dir.join("frame.png")).unwrap_err();
        assert!(e.to_string().contains("%05d"), "{e}");
        let e = Output::sequence(&dir.join("%s%s.png")).unwrap_err();
        assert!(e.to_string().contains("'%s' in the file name"), "{e}");
        let e = Output::sequence(&dir.join("%d/x%d.png")).unwrap_err();
        assert!(e.to_string().contains("not the folder"), "{e}");
        assert!(entries(&dir).is_empty());
    }

    #[test]
    fn same_file_sees_through_links_and_spellings() {
        let dir = scratch("same");
        let a = dir.join("a.mp4");
        std::fs::write(&a, b"x").unwrap();
        let dotted = dir.join(".").join("a.mp4");
        assert!(same_file(&a, &dotted));
        #[cfg(unix)]
        {
            let link = dir.join("link.mp4");
            std::os::unix::fs::symlink(&a, &link).unwrap();
            assert!(same_file(&a, &link));
            let hard = dir.join("hard.mp4");
            std::fs::hard_link(&a, &hard).unwrap();
            assert!(same_file(&hard, &a));
        }
        assert!(!same_file(&a, &dir.join("missing.mp4")));
        let b = dir.join("b.mp4");
        std::fs::write(&b, b"x").unwrap();
        assert!(!same_file(&a, &b));
    }
}
