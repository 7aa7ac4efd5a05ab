//! Regular files only: anything else is refused from its metadata, before
//! it is opened.

use std::fs::{File, Metadata};
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// What `meta` describes, in words, when it is not a regular file.
fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("a special file")
}

fn refuse(kind: &str) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("it is {kind}, not a regular file"),
    )
}

/// Checks that `path` (through symbolic links) is a regular file, without
/// opening it.
pub fn check_regular(path: &Path) -> std::io::Result<Metadata> {
    let meta = std::fs::metadata(path)?;
    match not_regular(&meta) {
        None => Ok(meta),
        Some(kind) => Err(refuse(kind)),
    }
}

/// Opens a regular file for reading. The open itself cannot block: the
/// metadata is checked first, and the file is opened non-blocking and
/// checked again, in case it was swapped for a FIFO in between.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    check_regular(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Reads of a regular file ignore O_NONBLOCK; it only matters for the
        // open of a FIFO.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    match not_regular(&file.metadata()?) {
        None => Ok(file),
        Some(kind) => Err(refuse(kind)),
    }
}

/// The whole of a regular file.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn fifos_devices_and_folders_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("m.onnx");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let cases = [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/null"), "a character device"),
            (dir.path(), "a folder"),
        ];
        for (path, kind) in cases {
            for e in [
                check_regular(path).unwrap_err(),
                open_regular(path).unwrap_err(),
                read_regular(path).unwrap_err(),
            ] {
                assert_eq!(e.to_string(), format!("it is {kind}, not a regular file"));
            }
        }
        let file = dir.path().join("ok.bin");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"abc");
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link).unwrap(), b"abc");
    }
}
