//! Structure-aware fuzzing of wgnn's GStreamer elements: `arbitrary` picks an
//! element, properties and values (each from the property's own kind: a
//! valid-looking or hostile string, a number at, inside or beyond its range,
//! NaN, an enum value or not), and caps (formats, sizes including 0, 1, odd
//! and huge, frame rates, with or without `memory:WgpuTexture`); then it runs
//! `appsrc ! element ! appsink` and pushes one or two frames, sometimes
//! changing a property while playing. Errors are fine; a panic, an abort or
//! a hang is a finding.
//!
//! Elements run with device=cpu: the GPU (lavapipe here) costs seconds per
//! run. Set WGNN_FUZZ_GPU=1 to let the fuzzer keep its own device choice and
//! to include wgnnupload, wgnndownload and wgnnsink (offscreen).
//!
//! Build with `cargo +nightly fuzz build --features gst elements`.
#![no_main]

use std::ffi::CString;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use gst::glib;
use gst::glib::translate::ToGlibPtr;
use gst::prelude::*;
use libfuzzer_sys::fuzz_target;

/// The elements of wgnn's table the run may pick: on the GPU every one,
/// else those that can run on the CPU (that have a `device` property).
fn elements(gpu: bool) -> Vec<&'static str> {
    wgnn::gst::elements::ELEMENTS
        .iter()
        .filter(|e| gpu || e.has_property("device"))
        .map(|e| e.name)
        .collect()
}

const FORMATS: &[&str] = &[
    "RGBA",
    "BGRA",
    "RGBx",
    "BGRx",
    "RGB",
    "NV12",
    "I420",
    "GRAY8",
    "YUY2",
    "ARGB",
    "RGBA64_LE",
];
const SIZES: &[i64] = &[
    0,
    1,
    2,
    3,
    7,
    16,
    17,
    31,
    64,
    65,
    127,
    256,
    321,
    4096,
    16385,
    65535,
    100000,
    i32::MAX as i64,
    -1,
];
const RATES: &[&str] = &[
    "30/1",
    "0/1",
    "1/0",
    "-1/1",
    "1000000/1",
    "1/1000000",
    "2147483647/1",
];

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Paths that a `model`, `model-proc`, `labels` or `background` property may
/// name: real ones of each kind, wrong kinds, and missing ones.
fn files() -> &'static [String] {
    static FILES: OnceLock<Vec<String>> = OnceLock::new();
    FILES.get_or_init(|| {
        [
            "assets/models/selfie/selfie_segmentation.tflite",
            "assets/models/esrgan-slim/x2/model.json",
            "assets/models/mediapipe/face_detection_short_range.tflite",
            "assets/models/mediapipe/face_detection_short_range.json",
            "tests/data/classify/mean_color.onnx",
            "tests/data/classify/mean_color.json",
            "tests/data/classify/colors.txt",
            "tests/data/tflite/ops/relu.tflite",
            "tests/data/tflite/ops/conv_same_stride2_relu6.tflite",
            "tests/data/tflite/bad/quantized_int8.tflite",
            "tests/data/tflite/bad/unsupported_op.tflite",
            "tests/data/onnx/backend/node/test_conv_with_strides_padding/model.onnx",
            "tests/data/detect/faces/astronaut_100.png",
            "tests/data/detect/faces/README.md",
            "assets/models",
            "no/such/file.tflite",
        ]
        .iter()
        .map(|p| root().join(p).display().to_string())
        .chain(["", "/dev/null", "/", "/proc/self/mem"].map(String::from))
        .collect()
    })
}

/// Valid-looking values for each string property, by name.
fn strings_for(name: &str) -> &'static [&'static str] {
    match name {
        "background" => &[
            "#2060c0",
            "#ff000080",
            "black",
            "white",
            "grey",
            "#12345",
            "#GGGGGG",
            "#",
            "#ffffffff00",
            "transparent",
            "rgb(1,2,3)",
        ],
        "colors" => &[
            "FF0000,00FF00",
            "0000FF",
            "FF0000,",
            ",",
            "GGGGGG",
            "#FF0000",
            "FF00",
            "",
        ],
        "input-range" => &[
            "0,1", "-1,1", "0,255", "1,0", "abc", "nan,1", "0,inf", "0", "0,1,2", "1e39,2",
            " 0 , 1 ",
        ],
        "object-class" => &["face", "person", "", "*"],
        "window-title" => &["wgnn", "", "%s%n%x"],
        _ => &[],
    }
}

/// Strings any string property may get.
fn hostile(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0 => String::new(),
        1 => "x".repeat(u.int_in_range(1..=20000)?),
        2 => "é\u{202e}🦀\u{feff}".into(),
        3 => "../../../../etc/passwd".into(),
        4 => " ".into(),
        _ => u.arbitrary::<String>()?.replace('\0', ""),
    })
}

fn string_value(u: &mut Unstructured, name: &str) -> Result<String> {
    let kind = u.int_in_range(0..=9)?;
    let named = strings_for(name);
    if matches!(name, "model" | "model-proc" | "labels" | "background") && kind < 5 {
        return Ok(u.choose(files())?.clone());
    }
    if !named.is_empty() && kind < 8 {
        return Ok(u.choose(named)?.to_string());
    }
    hostile(u)
}

/// A value of the property's type: in range, at its ends, beyond them
/// (GLib refuses those before the element sees them), NaN and infinities.
fn value_for(u: &mut Unstructured, pspec: &glib::ParamSpec) -> Result<Option<glib::Value>> {
    macro_rules! numeric {
        ($spec:ty, $t:ty) => {
            if let Some(p) = pspec.downcast_ref::<$spec>() {
                let (min, max) = (p.minimum(), p.maximum());
                let v: $t = match u.int_in_range(0..=5)? {
                    0 => min,
                    1 => max,
                    2 => p.default_value(),
                    3 => min.saturating_sub(1),
                    4 => max.saturating_add(1),
                    _ => u.arbitrary()?,
                };
                return Ok(Some(v.to_value()));
            }
        };
    }
    numeric!(glib::ParamSpecUInt, u32);
    numeric!(glib::ParamSpecInt, i32);
    numeric!(glib::ParamSpecUInt64, u64);
    numeric!(glib::ParamSpecInt64, i64);
    if let Some(p) = pspec.downcast_ref::<glib::ParamSpecDouble>() {
        let v = match u.int_in_range(0..=8)? {
            0 => p.minimum(),
            1 => p.maximum(),
            2 => p.default_value(),
            3 => f64::NAN,
            4 => f64::INFINITY,
            5 => f64::NEG_INFINITY,
            6 => -p.maximum(),
            7 => {
                p.minimum() + (p.maximum() - p.minimum()) * f64::from(u.arbitrary::<u8>()?) / 255.0
            }
            _ => u.arbitrary()?,
        };
        return Ok(Some(v.to_value()));
    }
    if let Some(p) = pspec.downcast_ref::<glib::ParamSpecFloat>() {
        let v = match u.int_in_range(0..=4)? {
            0 => p.minimum(),
            1 => p.maximum(),
            2 => f32::NAN,
            3 => f32::INFINITY,
            _ => u.arbitrary()?,
        };
        return Ok(Some(v.to_value()));
    }
    if pspec.value_type() == bool::static_type() {
        return Ok(Some(u.arbitrary::<bool>()?.to_value()));
    }
    if pspec.value_type() == String::static_type() {
        return Ok(Some(string_value(u, pspec.name())?.to_value()));
    }
    if pspec.downcast_ref::<glib::ParamSpecEnum>().is_some() {
        // As gst-launch does: from a nick, a name or a number, valid or not.
        let text = match u.int_in_range(0..=4)? {
            0 => "cpu".to_string(),
            1 => "gpu".to_string(),
            2 => "auto".to_string(),
            3 => u.int_in_range(-1..=9)?.to_string(),
            _ => hostile(u)?,
        };
        return Ok(glib::Value::deserialize_with_pspec(&text, pspec).ok());
    }
    Ok(None)
}

/// Sets a property through GObject's C entry point, as gst-launch does, so
/// that an out-of-range value gets GLib's own refusal (a warning) rather than
/// the Rust binding's panic.
fn set(element: &gst::Element, pspec: &glib::ParamSpec, value: &glib::Value) {
    let Ok(name) = CString::new(pspec.name()) else {
        return;
    };
    // SAFETY: a live object, a NUL-terminated property name and a valid
    // GValue of the property's type, as g_object_set_property requires.
    unsafe {
        glib::gobject_ffi::g_object_set_property(
            element.as_ptr() as *mut glib::gobject_ffi::GObject,
            name.as_ptr(),
            value.to_glib_none().0,
        );
    }
}

fn fuzz_property(u: &mut Unstructured, element: &gst::Element, gpu: bool) -> Result<()> {
    let specs: Vec<glib::ParamSpec> = element
        .list_properties()
        .iter()
        .filter(|p| p.flags().contains(glib::ParamFlags::WRITABLE))
        .filter(|p| !p.flags().contains(glib::ParamFlags::CONSTRUCT_ONLY))
        .filter(|p| gpu || p.name() != "device")
        .filter(|p| p.owner_type() != gst::Object::static_type())
        .cloned()
        .collect();
    if specs.is_empty() {
        return Ok(());
    }
    let pspec = u.choose(&specs)?;
    if let Some(value) = value_for(u, pspec)? {
        if verbose() {
            eprintln!("elements: {}={value:?}", pspec.name());
        }
        set(element, pspec, &value);
    }
    Ok(())
}

fn caps(u: &mut Unstructured) -> Result<String> {
    let feature = if u.ratio(1, 4)? {
        "(memory:WgpuTexture)"
    } else {
        ""
    };
    let dim = |u: &mut Unstructured| -> Result<i64> {
        if u.ratio(3, 4)? {
            u.int_in_range(1..=48)
        } else {
            u.choose(SIZES).copied()
        }
    };
    let mut caps = format!(
        "video/x-raw{feature},format={},width={},height={},framerate={}",
        u.choose(FORMATS)?,
        dim(u)?,
        dim(u)?,
        u.choose(RATES)?,
    );
    if u.ratio(1, 8)? {
        caps.push_str(",pixel-aspect-ratio=3/1,interlace-mode=interleaved");
    }
    Ok(caps)
}

/// Bytes per frame, for frames up to 256x256 pixels. A larger frame is real
/// work for the CPU (ESRGAN on a 65535x16 frame takes minutes, which would
/// read as a hang), so its caps are kept but the buffer pushed is a short
/// one, which the element must refuse.
fn frame_size(caps: &gst::Caps) -> Option<usize> {
    let info = gst_video::VideoInfo::from_caps(caps).ok()?;
    let pixels = u64::from(info.width()) * u64::from(info.height());
    Some(info.size()).filter(|_| pixels <= 1 << 16)
}

/// WGNN_FUZZ_VERBOSE=1: say what each execution chose and how it ended
/// (to read a finding; off while fuzzing, where it would only slow it).
fn verbose() -> bool {
    static VERBOSE: OnceLock<bool> = OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("WGNN_FUZZ_VERBOSE").is_some())
}

fn run(u: &mut Unstructured) -> Result<()> {
    let gpu = std::env::var_os("WGNN_FUZZ_GPU").is_some();
    let names = elements(gpu);
    let name = *u.choose(&names)?;
    let is_sink = wgnn::gst::elements::spec(name).is_some_and(|e| e.is_sink());
    let Ok(element) = gst::ElementFactory::make(name).build() else {
        return Ok(());
    };
    if element.find_property("offscreen").is_some() {
        // No display here.
        element.set_property("offscreen", true);
    }
    for _ in 0..u.int_in_range(0..=6)? {
        fuzz_property(u, &element, gpu)?;
    }
    if !gpu && element.find_property("device").is_some() {
        element.set_property_from_str("device", "cpu");
    }
    let caps_text = caps(u)?;
    if verbose() {
        eprintln!("elements: {name} with caps {caps_text}");
    }
    let Ok(caps) = gst::Caps::from_str(&caps_text) else {
        return Ok(());
    };
    let pipeline = gst::Pipeline::new();
    let src = gst_app::AppSrc::builder()
        .caps(&caps)
        .format(gst::Format::Time)
        .build();
    // Keep no output and post EOS at once: by default appsink waits for the
    // application to pull every sample before it does.
    let sink = gst_app::AppSink::builder()
        .sync(false)
        .drop(true)
        .max_buffers(1)
        .wait_on_eos(false)
        .build();
    let last: gst::Element = if is_sink {
        element.clone()
    } else {
        sink.clone().upcast()
    };
    let linked = if is_sink {
        pipeline.add_many([src.upcast_ref(), &element]).is_ok() && src.link(&element).is_ok()
    } else {
        pipeline
            .add_many([src.upcast_ref(), &element, sink.upcast_ref()])
            .is_ok()
            && gst::Element::link_many([src.upcast_ref(), &element, &last]).is_ok()
    };
    if linked && pipeline.set_state(gst::State::Playing).is_ok() {
        let size = frame_size(&caps).unwrap_or(64);
        let frames = u.int_in_range(1..=2)?;
        for i in 0..frames {
            let fill: u8 = u.arbitrary()?;
            let mut data = vec![fill; size];
            if let Some(b) = data.first_mut() {
                *b = u.arbitrary()?;
            }
            let mut buffer = gst::Buffer::from_mut_slice(data);
            if let Some(b) = buffer.get_mut() {
                b.set_pts(gst::ClockTime::from_mseconds(33 * i));
            }
            if src.push_buffer(buffer).is_err() {
                break;
            }
            if u.ratio(1, 4)? {
                fuzz_property(u, &element, gpu)?;
            }
        }
        let _ = src.end_of_stream();
        if let Some(bus) = pipeline.bus() {
            // A stream that neither ends nor fails is a hang: the finding.
            let end = bus.timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[gst::MessageType::Eos, gst::MessageType::Error],
            );
            if verbose() {
                eprintln!("elements: ended with {end:?}");
            }
            assert!(
                end.is_some(),
                "{name} with caps {caps_text}: neither EOS nor an error in 60 s"
            );
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        wgnn::gst::register_static().expect("the wgnn elements register");
    });
    let _ = run(&mut Unstructured::new(data));
});
