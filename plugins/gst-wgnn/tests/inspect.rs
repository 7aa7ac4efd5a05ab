//! The plugin built by cargo loads in GStreamer's own tools, with a private
//! registry so that a stale cache cannot hide a broken plugin.

use std::path::PathBuf;
use std::process::Command;

fn plugin_dir() -> PathBuf {
    // target/<profile>/deps/inspect-<hash> -> target/<profile>
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    assert!(
        dir.join("libgstwgnn.so").exists(),
        "libgstwgnn.so not found in {}: build the workspace first",
        dir.display()
    );
    dir
}

#[test]
fn gst_inspect_loads_the_plugin() {
    let registry = std::env::temp_dir().join(format!("wgnn-registry-{}.bin", std::process::id()));
    let _ = std::fs::remove_file(&registry);
    let out = Command::new("gst-inspect-1.0")
        .arg("wgnn")
        .env("GST_PLUGIN_PATH", plugin_dir())
        .env("GST_REGISTRY", &registry)
        .env("GST_REGISTRY_FORK", "no")
        .output()
        .expect("gst-inspect-1.0 must be installed (gstreamer1.0-tools)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "gst-inspect-1.0 wgnn failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("libgstwgnn.so"), "{stdout}");
    assert!(stdout.contains(env!("CARGO_PKG_VERSION")), "{stdout}");
    // Exactly the table's elements: "  wgnnupload: wgnn upload" lines.
    let listed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("wgnn") && !name.contains(' '))
        .collect();
    let table: Vec<&str> = wgnn::gst::elements::ELEMENTS
        .iter()
        .map(|e| e.name)
        .collect();
    let mut sorted = table.clone();
    sorted.sort_unstable();
    assert_eq!(listed, sorted, "gst-inspect-1.0 wgnn:\n{stdout}");
    for element in table {
        assert!(
            stdout.contains(element),
            "{element} missing from:\n{stdout}"
        );
        // Each element is documented: its page lists the copy counters.
        let page = Command::new("gst-inspect-1.0")
            .arg(element)
            .env("GST_PLUGIN_PATH", plugin_dir())
            .env("GST_REGISTRY", &registry)
            .env("GST_REGISTRY_FORK", "no")
            .output()
            .unwrap();
        let page = String::from_utf8_lossy(&page.stdout);
        for property in ["bytes-uploaded", "bytes-downloaded", "frames"] {
            assert!(
                page.contains(property),
                "{element} does not document {property}:\n{page}"
            );
        }
    }
    let _ = std::fs::remove_file(&registry);
}

#[test]
fn static_registration_makes_the_plugin_visible() {
    gst::init().unwrap();
    gstwgnn::plugin_register_static().unwrap();
    let plugin = gst::Registry::get()
        .find_plugin("wgnn")
        .expect("plugin wgnn registered");
    assert_eq!(plugin.version(), env!("CARGO_PKG_VERSION"));
}

/// Links `from` at `to` (a copy where the folders are on different file
/// systems), creating `to`'s folder.
fn place(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// The plugin laid out as `cargo cinstall` and the Debian package install
/// it, in a prefix of its own: loaded by gst-launch-1.0 (whose program says
/// nothing about wgnn), wgnnsegment's default model is read from
/// PREFIX/share/wgnn beside the plugin, not from this source tree.
#[test]
fn an_installed_plugin_reads_its_models_beside_itself() {
    let prefix = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let plugins = prefix.path().join("lib/x86_64-linux-gnu/gstreamer-1.0");
    place(
        &plugin_dir().join("libgstwgnn.so"),
        &plugins.join("libgstwgnn.so"),
    );
    let model = "models/selfie/selfie_segmentation.tflite";
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets");
    place(
        &source.join(model),
        &prefix.path().join("share/wgnn").join(model),
    );

    let registry = prefix.path().join("registry.bin");
    let out = Command::new("gst-launch-1.0")
        .args([
            "-q",
            "videotestsrc",
            "num-buffers=2",
            "!",
            "video/x-raw,width=64,height=48",
        ])
        .args(["!", "wgnnsegment", "device=cpu", "!", "fakesink"])
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", &registry)
        .env("GST_REGISTRY_FORK", "no")
        .env("GST_DEBUG", "wgnnsegment:4")
        .env("GST_DEBUG_NO_COLOR", "1")
        .env_remove("WGNN_ASSETS_DIR")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gst-launch-1.0 failed:\n{log}");
    let expected = format!(
        "model {}",
        prefix.path().join("share/wgnn").join(model).display()
    );
    assert!(log.contains(&expected), "'{expected}' not in:\n{log}");
}
