//! The files a model names beside itself (TF.js weight shards, ONNX
//! external data, a model-proc's labels file): paths relative to the
//! model's folder that must stay inside it, so that a model file cannot make
//! wgnn read `/etc/passwd`.

use std::io::{Error, ErrorKind};
use std::path::{Component, Path, PathBuf};

fn refuse(why: String) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("{why}; it must be a relative path inside the model's folder"),
    )
}

/// Checks `relative` from its spelling alone: not empty, not absolute, no
/// `..`.
pub fn relative_inside(relative: &Path) -> std::io::Result<&Path> {
    if relative.as_os_str().is_empty() {
        return Err(refuse("it is empty".into()));
    }
    for c in relative.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(refuse("it leaves the folder with '..'".into())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("it is an absolute path".into()))
            }
        }
    }
    Ok(relative)
}

/// `relative` in `folder`, resolved: refused when it leaves the folder by
/// its spelling or through a symbolic link (the file must exist).
pub fn inside(folder: &Path, relative: &Path) -> std::io::Result<PathBuf> {
    let rel = relative_inside(relative)?;
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let real_folder = folder.canonicalize()?;
    let real = folder.join(rel).canonicalize()?;
    if !real.starts_with(&real_folder) {
        return Err(refuse(format!(
            "it is a symbolic link to {}, outside the model's folder",
            real.display()
        )));
    }
    Ok(real)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn escapes_by_dots_roots_and_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model");
        std::fs::create_dir(&model).unwrap();
        std::fs::write(model.join("w.bin"), b"w").unwrap();
        std::fs::create_dir(model.join("sub")).unwrap();
        std::fs::write(model.join("sub/x.bin"), b"x").unwrap();
        std::fs::write(dir.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), model.join("out.bin")).unwrap();
        std::os::unix::fs::symlink("sub/x.bin", model.join("in.bin")).unwrap();

        let real = model.canonicalize().unwrap();
        assert_eq!(
            inside(&model, Path::new("w.bin")).unwrap(),
            real.join("w.bin")
        );
        assert_eq!(
            inside(&model, Path::new("./sub/x.bin")).unwrap(),
            real.join("sub/x.bin")
        );
        assert_eq!(
            inside(&model, Path::new("in.bin")).unwrap(),
            real.join("sub/x.bin")
        );
        let cases = [
            ("../secret", "it leaves the folder with '..'"),
            ("sub/../../secret", "it leaves the folder with '..'"),
            ("/etc/passwd", "it is an absolute path"),
            ("", "it is empty"),
            ("out.bin", "it is a symbolic link to "),
        ];
        for (rel, says) in cases {
            let e = inside(&model, Path::new(rel)).unwrap_err().to_string();
            assert!(e.starts_with(says), "{rel}: {e}");
            assert!(
                e.ends_with("a relative path inside the model's folder"),
                "{e}"
            );
        }
        assert_eq!(
            inside(&model, Path::new("missing.bin")).unwrap_err().kind(),
            ErrorKind::NotFound
        );
    }
}
