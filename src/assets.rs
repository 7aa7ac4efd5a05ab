//! Where wgnn's bundled assets (models, model-procs, sample media) are read
//! from, so that the same build works from the source tree, from a prefix
//! install (`cargo cinstall`, `cargo install`) and from the Debian package.
//!
//! The first of these that exists is used:
//! 1. `$WGNN_ASSETS_DIR`, when set (it is used even when missing, so that a
//!    typo is reported rather than silently replaced by another copy);
//! 2. `PREFIX/share/wgnn` beside the running code: the plugin file
//!    (`PREFIX/lib[/<triplet>]/gstreamer-1.0/libgstwgnn.so`) when GStreamer
//!    loaded it, else the program (`PREFIX/bin/wgnn-selfie`). Installed
//!    copies are relocatable and never read the build machine's tree;
//! 3. the source tree's `assets/` (builds that were not installed);
//! 4. `wgnn` under each of `$XDG_DATA_HOME` and `$XDG_DATA_DIRS`
//!    (`~/.local/share`, `/usr/local/share`, `/usr/share`): programs of
//!    other people that link the library, with wgnn installed beside them.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The plugin's own file, when GStreamer loaded `libgstwgnn.so`: recorded at
/// plugin init, since the program is then `gst-launch-1.0` or any other
/// application and says nothing about where wgnn is installed.
static PLUGIN_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Why a folder is on the search path (shown by error messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Environment,
    BesidePlugin,
    BesideProgram,
    SourceTree,
    DataDirs,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Environment => "$WGNN_ASSETS_DIR",
            Origin::BesidePlugin => "installed beside the plugin",
            Origin::BesideProgram => "installed beside the program",
            Origin::SourceTree => "the source tree",
            Origin::DataDirs => "$XDG_DATA_HOME / $XDG_DATA_DIRS",
        })
    }
}

/// One folder of the search path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub dir: PathBuf,
    pub origin: Origin,
}

/// What the search depends on, gathered once so that the order itself is a
/// pure function (and tested as one).
struct Inputs {
    env: Option<OsString>,
    plugin: Option<PathBuf>,
    program: Option<PathBuf>,
    source: PathBuf,
    data_home: Option<PathBuf>,
    data_dirs: Vec<PathBuf>,
}

impl Inputs {
    fn current() -> Self {
        let data_home = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")));
        let data_dirs = std::env::var_os("XDG_DATA_DIRS")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
        Inputs {
            env: std::env::var_os("WGNN_ASSETS_DIR").filter(|v| !v.is_empty()),
            plugin: PLUGIN_FILE.get().cloned(),
            program: std::env::current_exe().ok(),
            source: Path::new(env!("CARGO_MANIFEST_DIR")).join("assets"),
            data_home,
            data_dirs: std::env::split_paths(&data_dirs)
                .filter(|p| p.is_absolute())
                .collect(),
        }
    }
}

fn candidates_for(inputs: &Inputs) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut push = |dir: PathBuf, origin| {
        if !out.iter().any(|c: &Candidate| c.dir == dir) {
            out.push(Candidate { dir, origin });
        }
    };
    if let Some(env) = &inputs.env {
        push(PathBuf::from(env), Origin::Environment);
    }
    if let Some(prefix) = inputs.plugin.as_deref().and_then(plugin_prefix) {
        push(prefix.join("share/wgnn"), Origin::BesidePlugin);
    }
    if let Some(prefix) = inputs.program.as_deref().and_then(program_prefix) {
        push(prefix.join("share/wgnn"), Origin::BesideProgram);
    }
    push(inputs.source.clone(), Origin::SourceTree);
    for dir in inputs.data_home.iter().chain(&inputs.data_dirs) {
        push(dir.join("wgnn"), Origin::DataDirs);
    }
    out
}

/// `PREFIX` of a plugin installed as GStreamer plugins are:
/// `PREFIX/lib/gstreamer-1.0/`, `PREFIX/lib/<triplet>/gstreamer-1.0/` or
/// `PREFIX/lib64/gstreamer-1.0/`. A plugin loaded from anywhere else (a
/// build folder on `GST_PLUGIN_PATH`) has none.
fn plugin_prefix(file: &Path) -> Option<PathBuf> {
    let dir = file.parent()?;
    if dir.file_name()? != "gstreamer-1.0" {
        return None;
    }
    let mut up = dir.parent()?;
    if !is_lib_dir(up) {
        // The multiarch triplet between lib and gstreamer-1.0.
        up = up.parent()?;
        if !is_lib_dir(up) {
            return None;
        }
    }
    up.parent().map(Path::to_path_buf)
}

fn is_lib_dir(dir: &Path) -> bool {
    dir.file_name()
        .is_some_and(|n| n == "lib" || n == "lib64" || n == "lib32")
}

/// `PREFIX` of a program installed in `PREFIX/bin/`.
fn program_prefix(file: &Path) -> Option<PathBuf> {
    let dir = file.parent()?;
    (dir.file_name()? == "bin").then(|| dir.parent().map(Path::to_path_buf))?
}

/// The search path, in order, without duplicates.
pub fn search_path() -> Vec<Candidate> {
    candidates_for(&Inputs::current())
}

/// The folder used: `$WGNN_ASSETS_DIR` when set, else the first folder of
/// the search path that holds `models/`. When none does, the first
/// candidate, so that errors name a path a user can act on.
pub fn dir() -> PathBuf {
    let candidates = search_path();
    let found = candidates
        .iter()
        .find(|c| c.origin == Origin::Environment || c.dir.join("models").is_dir());
    found.unwrap_or(&candidates[0]).dir.clone()
}

/// Whether bundled assets are anywhere on the search path.
pub fn found() -> bool {
    dir().join("models").is_dir()
}

/// One line for errors about a missing bundled file: what
/// `$WGNN_ASSETS_DIR` names, or else the folders searched.
pub fn not_found_hint() -> String {
    hint_for(&search_path())
}

fn hint_for(candidates: &[Candidate]) -> String {
    if let Some(env) = candidates.iter().find(|c| c.origin == Origin::Environment) {
        return format!(
            "WGNN_ASSETS_DIR is {}, which holds no models/ folder",
            env.dir.display()
        );
    }
    let searched: Vec<String> = candidates
        .iter()
        .map(|c| format!("{} ({})", c.dir.display(), c.origin))
        .collect();
    format!(
        "wgnn's bundled assets were not found; searched {}; set WGNN_ASSETS_DIR to the folder \
         that holds models/",
        searched.join(", ")
    )
}

/// Records the plugin file GStreamer loaded, so that assets are found
/// beside it. Only the first call counts (one plugin per process).
pub fn set_plugin_file(file: &Path) {
    // GStreamer may name it through a symlinked folder (/lib ->
    // /usr/lib on merged-/usr systems), whose parent is not the prefix.
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let _ = PLUGIN_FILE.set(file);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            env: None,
            plugin: None,
            program: None,
            source: PathBuf::from("/src/wgnn/assets"),
            data_home: Some(PathBuf::from("/home/u/.local/share")),
            data_dirs: vec![
                PathBuf::from("/usr/local/share"),
                PathBuf::from("/usr/share"),
            ],
        }
    }

    fn dirs(inputs: &Inputs) -> Vec<(String, Origin)> {
        candidates_for(inputs)
            .into_iter()
            .map(|c| (c.dir.display().to_string(), c.origin))
            .collect()
    }

    #[test]
    fn the_debian_package_reads_usr_share_before_the_build_tree() {
        let mut i = inputs();
        i.program = Some("/usr/bin/wgnn-selfie".into());
        let d = dirs(&i);
        assert_eq!(d[0], ("/usr/share/wgnn".into(), Origin::BesideProgram));
        assert_eq!(d[1], ("/src/wgnn/assets".into(), Origin::SourceTree));
        // /usr/share/wgnn is not repeated for XDG_DATA_DIRS.
        assert_eq!(d.iter().filter(|(p, _)| p == "/usr/share/wgnn").count(), 1);

        // gst-launch-1.0 loading the packaged plugin.
        let mut i = inputs();
        i.program = Some("/usr/bin/gst-launch-1.0".into());
        i.plugin = Some("/usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstwgnn.so".into());
        assert_eq!(
            dirs(&i)[0],
            ("/usr/share/wgnn".into(), Origin::BesidePlugin)
        );
    }

    #[test]
    fn a_prefix_install_is_found_beside_the_plugin_before_the_program() {
        let mut i = inputs();
        i.program = Some("/usr/bin/gst-launch-1.0".into());
        for plugin in [
            "/opt/w/lib/gstreamer-1.0/libgstwgnn.so",
            "/opt/w/lib64/gstreamer-1.0/libgstwgnn.so",
            "/opt/w/lib/aarch64-linux-gnu/gstreamer-1.0/libgstwgnn.so",
        ] {
            i.plugin = Some(plugin.into());
            let d = dirs(&i);
            assert_eq!(
                d[0],
                ("/opt/w/share/wgnn".into(), Origin::BesidePlugin),
                "{plugin}"
            );
            assert_eq!(
                d[1],
                ("/usr/share/wgnn".into(), Origin::BesideProgram),
                "{plugin}"
            );
        }
        let mut i = inputs();
        i.program = Some("/home/u/.local/bin/wgnn-superres".into());
        assert_eq!(
            dirs(&i)[0],
            ("/home/u/.local/share/wgnn".into(), Origin::BesideProgram)
        );
    }

    #[test]
    fn build_folders_are_not_mistaken_for_prefixes() {
        let mut i = inputs();
        i.program = Some("/src/wgnn/target/release/wgnn-selfie".into());
        i.plugin = Some("/src/wgnn/target/release/libgstwgnn.so".into());
        let d = dirs(&i);
        assert_eq!(d[0], ("/src/wgnn/assets".into(), Origin::SourceTree));
        assert_eq!(
            d[1..].iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            [
                "/home/u/.local/share/wgnn",
                "/usr/local/share/wgnn",
                "/usr/share/wgnn"
            ]
        );
        // A gstreamer-1.0 folder that is not under lib*/ is no prefix either.
        assert_eq!(
            plugin_prefix(Path::new("/x/y/gstreamer-1.0/libgstwgnn.so")),
            None
        );
        assert_eq!(program_prefix(Path::new("/wgnn-selfie")), None);
    }

    #[test]
    fn the_hint_names_every_folder_searched_or_the_environment() {
        let mut i = inputs();
        i.program = Some("/opt/w/bin/wgnn-selfie".into());
        let hint = hint_for(&candidates_for(&i));
        for part in [
            "searched /opt/w/share/wgnn (installed beside the program), /src/wgnn/assets (the \
             source tree), /home/u/.local/share/wgnn ($XDG_DATA_HOME / $XDG_DATA_DIRS)",
            "/usr/share/wgnn",
            "set WGNN_ASSETS_DIR",
        ] {
            assert!(hint.contains(part), "'{part}' not in: {hint}");
        }
        i.env = Some("/typo".into());
        assert_eq!(
            hint_for(&candidates_for(&i)),
            "WGNN_ASSETS_DIR is /typo, which holds no models/ folder"
        );
    }

    #[test]
    fn the_environment_comes_first() {
        let mut i = inputs();
        i.env = Some("/data/wgnn-assets".into());
        i.program = Some("/usr/bin/wgnn-selfie".into());
        assert_eq!(
            dirs(&i)[0],
            ("/data/wgnn-assets".into(), Origin::Environment)
        );
    }
}
