//! wgnnupload ! wgnndownload: frames come back bit-exact in every format,
//! both elements use one device found through the GstContext protocol, and
//! each frame crosses exactly once in each direction.

use gst::prelude::*;

use crate::common::harness::{init, pull_samples};

/// The pixel bytes of a frame, plane by plane and row by row, without the
/// row padding (which carries no pixels and may differ).
fn pixels(info: &gst_video::VideoInfo, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let finfo = info.format_info();
    for p in 0..info.n_planes() as usize {
        let rows = finfo.scale_height(p as u8, info.height()) as usize;
        let width = finfo.scale_width(p as u8, info.width()) as usize;
        let row = width * finfo.pixel_stride()[p] as usize;
        for r in 0..rows {
            let start = info.offset()[p] + r * info.stride()[p] as usize;
            out.extend_from_slice(&data[start..start + row]);
        }
    }
    out
}

/// Runs `videotestsrc ! caps ! [elements] ! appsink` and returns the frames'
/// pixels.
fn frames(caps: &str, middle: &str, n: u32) -> (Vec<Vec<u8>>, gst::Pipeline) {
    let launch = format!(
        "videotestsrc num-buffers={n} pattern=smpte ! {caps} {middle} ! appsink name=sink sync=false"
    );
    let mut out = Vec::new();
    let pipeline = pull_samples(&launch, |sample| {
        let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
        let buffer = sample.buffer().unwrap();
        out.push(pixels(&info, &buffer.map_readable().unwrap()));
    });
    let bus = pipeline.bus().unwrap();
    if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        panic!("pipeline error: {msg:?}");
    }
    (out, pipeline)
}

#[test]
fn round_trip_is_bit_exact_in_every_format() {
    init();
    for format in ["RGBA", "BGRA", "RGBx", "BGRx", "RGB", "NV12", "I420"] {
        let caps = format!("video/x-raw,format={format},width=33,height=17 !");
        let (direct, p1) = frames(&caps, "identity", 3);
        let (through, p2) = frames(&caps, "wgnnupload ! wgnndownload", 3);
        p1.set_state(gst::State::Null).unwrap();
        p2.set_state(gst::State::Null).unwrap();
        assert_eq!(direct.len(), 3, "{format}");
        assert_eq!(through.len(), 3, "{format}");
        for (a, b) in direct.iter().zip(&through) {
            assert_eq!(a.len(), b.len(), "{format}");
            assert!(a == b, "{format}: pixels differ after the round trip");
        }
    }
}

#[test]
fn elements_share_one_device_and_count_each_crossing_once() {
    init();
    let (out, pipeline) = frames(
        "video/x-raw,format=NV12,width=64,height=48 !",
        "wgnnupload name=up ! queue ! wgnndownload name=down",
        5,
    );
    assert_eq!(out.len(), 5);
    let up = pipeline.by_name("up").unwrap();
    let down = pipeline.by_name("down").unwrap();
    let device = |e: &gst::Element| {
        e.context(wgnn::gst::device::CONTEXT_TYPE)
            .and_then(|c| wgnn::gst::device::gpu_from(&c))
            .expect("element holds a wgnn device context")
    };
    let (a, b) = (device(&up), device(&down));
    assert_eq!(a.id(), b.id(), "both elements must use one device");

    // NV12 64x48: Y 64x48 + UV 32x24 pairs = 3072 + 1536 bytes per frame.
    let frame = 64 * 48 + 64 * 24;
    assert_eq!(up.property::<u64>("frames"), 5);
    assert_eq!(up.property::<u64>("bytes-uploaded"), 5 * frame);
    assert_eq!(up.property::<u64>("bytes-downloaded"), 0);
    assert_eq!(down.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(down.property::<u64>("bytes-downloaded"), 5 * frame);
    let total = a.transfers();
    assert_eq!(total.upload_bytes, 5 * frame);
    assert_eq!(total.download_bytes, 5 * frame);
    pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn caps_it_cannot_handle_are_refused() {
    init();
    // Refused when linking... (named, because automatic names count the
    // elements made so far in this process, which other tests share)
    let err = gst::parse::launch(
        "videotestsrc num-buffers=1 ! video/x-raw,format=YUY2,width=16,height=16 ! \
         wgnnupload name=refusing ! fakesink",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("refusing can't handle caps video/x-raw, format=(string)YUY2"),
        "{err}"
    );

    // ...and when a source only says what it sends at run time.
    let pipeline = gst::Pipeline::new();
    let src = gst_app::AppSrc::builder()
        .caps(
            &gst::Caps::builder("video/x-raw")
                .field("format", "YUY2")
                .field("width", 16)
                .field("height", 16)
                .field("framerate", gst::Fraction::new(30, 1))
                .build(),
        )
        .format(gst::Format::Time)
        .build();
    let up = gst::ElementFactory::make("wgnnupload").build().unwrap();
    let sink = gst::ElementFactory::make("fakesink").build().unwrap();
    pipeline.add_many([src.upcast_ref(), &up, &sink]).unwrap();
    gst::Element::link_many([src.upcast_ref(), &up, &sink]).unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    src.push_buffer(gst::Buffer::with_size(16 * 16 * 2).unwrap())
        .unwrap();
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(10),
            &[gst::MessageType::Error, gst::MessageType::Eos],
        )
        .expect("an error message");
    match msg.view() {
        gst::MessageView::Error(e) => {
            let text = format!("{} {:?}", e.error(), e.debug());
            assert!(
                text.contains("not-negotiated") || text.contains("negotiat"),
                "{text}"
            );
        }
        other => panic!("expected a negotiation error, got {other:?}"),
    }
    pipeline.set_state(gst::State::Null).unwrap();
}

/// Results attached upstream survive the trip to the GPU and back: both
/// elements make a new buffer and carry the ROI metas (and their params)
/// over.
#[test]
fn roi_metas_cross_upload_and_download() {
    use wgnn::gst::roi;
    use wgnn::tasks::{Detection, Rect};
    init();
    let pipeline = crate::common::harness::launch(
        "videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 ! \
         wgnnupload name=up ! wgnndownload ! appsink name=sink sync=false",
    );
    let up = pipeline.by_name("up").unwrap();
    up.static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, |_, info| {
            if let Some(gst::PadProbeData::Buffer(b)) = info.data.as_mut() {
                let face = Detection {
                    label: "face".into(),
                    label_id: 0,
                    confidence: 0.5,
                    rect: Rect::new(8.0, 4.0, 16.0, 20.0),
                    extras: Default::default(),
                    keypoints: vec![[10.0, 10.0]],
                };
                roi::attach_detection(b.make_mut(), &face, 64, 48, -1);
            }
            gst::PadProbeReturn::Ok
        });
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let sample = sink.pull_sample().unwrap();
    let rois = roi::read(sample.buffer().unwrap(), 64, 48);
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(rois.len(), 1, "{rois:?}");
    assert_eq!(rois[0].pixels, (8, 4, 16, 20));
    assert_eq!(rois[0].object.label, "face");
    assert_eq!(rois[0].object.keypoints, vec![[10.0, 10.0]]);
}

/// Plays `desc` to its end; the messages of `kinds` it posted before, and
/// the one that ended it (EOS or an error).
fn play(desc: &str, kinds: &[gst::MessageType]) -> (Vec<gst::Message>, gst::Message) {
    let pipeline = crate::common::harness::launch(desc);
    let _ = pipeline.set_state(gst::State::Playing);
    let bus = pipeline.bus().unwrap();
    let mut seen = Vec::new();
    let mut types = kinds.to_vec();
    types.extend([gst::MessageType::Error, gst::MessageType::Eos]);
    let end = loop {
        let msg = bus
            .timed_pop_filtered(gst::ClockTime::from_seconds(60), &types)
            .unwrap_or_else(|| panic!("{desc}: neither EOS nor an error in 60 s"));
        if matches!(msg.type_(), gst::MessageType::Error | gst::MessageType::Eos) {
            break msg;
        }
        seen.push(msg);
    };
    pipeline.set_state(gst::State::Null).unwrap();
    (seen, end)
}

/// The error `msg` carries, as "source: message", or `None` for EOS.
fn error_of(msg: &gst::Message) -> Option<String> {
    match msg.view() {
        gst::MessageView::Error(e) => Some(format!(
            "{}: {}",
            msg.src().map(|s| s.name().to_string()).unwrap_or_default(),
            e.error()
        )),
        _ => None,
    }
}

/// Texture frames carry no system memory: a sink that takes any caps would
/// write nothing (issue 45: `wgnnupload ! filesink` wrote a 0-byte file
/// and returned 0). wgnnupload refuses such a peer with one bus error
/// naming it and the way out; a peer that names memory:WgpuTexture (a
/// capsfilter before an appsink) gets the textures, and wgnndownload's
/// system memory reaches the file whole.
#[test]
fn texture_frames_reach_only_elements_that_name_them() {
    init();
    let dir = crate::common::scratch("upload-sinks");
    let src = "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=16,height=16";
    let file = dir.join("upl.raw");
    let mut refused = 0;
    for (sink, who) in [
        (
            format!("filesink name=file location={}", file.display()),
            "file",
        ),
        ("appsink name=app sync=false".to_string(), "app"),
        ("identity name=ident ! fakesink".to_string(), "ident"),
    ] {
        let desc = format!("{src} ! wgnnupload name=texup ! {sink}");
        let (_, end) = play(&desc, &[]);
        let e =
            error_of(&end).unwrap_or_else(|| panic!("{desc}: no error, texture frames went on"));
        assert!(e.starts_with("texup: "), "{desc}: {e}");
        for needle in [who, "memory:WgpuTexture", "wgnndownload", "any caps"] {
            assert!(e.contains(needle), "{desc}: {needle:?} not in {e:?}");
        }
        assert!(!e.contains('\n') && !e.contains(".rs"), "{e:?}");
        refused += 1;
    }
    assert_eq!(refused, 3);
    assert!(
        std::fs::metadata(&file).map_or(true, |m| m.len() == 0),
        "nothing written"
    );

    // Named textures pass, each buffer with its frame.
    let mut frames = 0;
    let pipeline = pull_samples(
        &format!(
            "{src} ! wgnnupload ! video/x-raw(memory:WgpuTexture) ! appsink name=sink sync=false"
        ),
        |sample| {
            assert!(wgnn::gst::frame_meta::frame_of(sample.buffer().unwrap()).is_some());
            frames += 1;
        },
    );
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(frames, 2);

    // Downloaded, the frames reach the file.
    let (_, end) = play(
        &format!(
            "{src} ! wgnnupload ! wgnndownload ! filesink location={}",
            file.display()
        ),
        &[],
    );
    assert_eq!(error_of(&end), None);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 2 * 16 * 16 * 4);
}

/// A processing element on the GPU makes system memory (one counted
/// download) for a peer that does not name memory:WgpuTexture, so that a
/// filesink gets each frame's bytes, not an empty buffer (issue 45, row 6).
/// A device=cpu element offered only textures says why on the bus, where
/// the link used to fail with a bare "could not link" (row 13); offered
/// system memory as well, by a GPU element, it gets that.
#[test]
fn processing_elements_download_for_any_caps_sinks_and_cpu_ones_say_why() {
    init();
    let dir = crate::common::scratch("processing-sinks");
    let src = "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=16,height=16";
    let mut written = 0;
    for (i, element) in ["wgnnsegment device=gpu effect=mask", "wgnnoverlay"]
        .iter()
        .enumerate()
    {
        let file = dir.join(format!("{i}.raw"));
        let desc = format!(
            "{src} ! wgnnupload ! {element} ! filesink location={}",
            file.display()
        );
        let (_, end) = play(&desc, &[]);
        assert_eq!(error_of(&end), None, "{desc}");
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            2 * 16 * 16 * 4,
            "{desc}"
        );
        written += 1;
    }
    assert_eq!(written, 2);

    let desc = format!("{src} ! wgnnupload ! wgnnsegment name=cpuseg device=cpu ! fakesink");
    let (_, end) = play(&desc, &[]);
    let e = error_of(&end).unwrap_or_else(|| panic!("{desc}: textures reached device=cpu"));
    assert!(e.starts_with("cpuseg: "), "{e}");
    for needle in ["device=cpu", "memory:WgpuTexture", "wgnndownload"] {
        assert!(e.contains(needle), "{needle:?} not in {e:?}");
    }
    assert!(!e.contains('\n') && !e.contains(".rs"), "{e:?}");

    let desc = format!(
        "{src} ! wgnnsegment device=gpu effect=mask ! wgnnsegment device=cpu effect=mask ! fakesink"
    );
    let (_, end) = play(&desc, &[]);
    assert_eq!(error_of(&end), None, "{desc}");
}

/// A negotiation the transfer elements refuse says why on the bus, naming
/// both sides' memories: caps upstream sends that wgnnupload does not take
/// (a warning from its accept-caps answer, then GStreamer's error), and a
/// format downstream does not take.
#[test]
fn refused_negotiations_name_both_sides_memories() {
    init();
    let run = |caps: &str, after: &str| {
        let desc = format!("appsrc name=src format=time ! wgnnupload name=refuser ! {after}");
        let pipeline = crate::common::harness::launch(&desc);
        let src = pipeline
            .by_name("src")
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap();
        src.set_caps(Some(&caps.parse::<gst::Caps>().unwrap()));
        pipeline.set_state(gst::State::Playing).unwrap();
        let _ = src.push_buffer(gst::Buffer::with_size(16 * 16 * 4).unwrap());
        let _ = src.end_of_stream();
        let bus = pipeline.bus().unwrap();
        let mut said = Vec::new();
        while let Some(msg) = bus.timed_pop_filtered(
            gst::ClockTime::from_seconds(30),
            &[
                gst::MessageType::Warning,
                gst::MessageType::Error,
                gst::MessageType::Eos,
            ],
        ) {
            let from_refuser = msg.src().is_some_and(|s| s.name() == "refuser");
            match msg.view() {
                gst::MessageView::Warning(w) if from_refuser => said.push(w.error().to_string()),
                gst::MessageView::Error(e) if from_refuser => said.push(e.error().to_string()),
                gst::MessageView::Error(_) | gst::MessageView::Eos(_) => break,
                _ => {}
            }
        }
        pipeline.set_state(gst::State::Null).unwrap();
        said
    };
    let cases = [
        (
            "video/x-raw,format=YUY2,width=16,height=16,framerate=30/1",
            "wgnndownload ! fakesink",
            ["YUY2", "system memory", "memory:DMABuf", "NV12"],
        ),
        (
            "video/x-raw,format=RGBA,width=16,height=16,framerate=30/1",
            "video/x-raw(memory:WgpuTexture),format=BGRA ! fakesink",
            ["RGBA", "BGRA", "memory:WgpuTexture", "capsfilter"],
        ),
    ];
    for (caps, after, needles) in cases {
        let said = run(caps, after);
        assert_eq!(said.len(), 1, "{caps} ! {after}: {said:?}");
        for needle in needles {
            assert!(said[0].contains(needle), "{needle:?} not in {said:?}");
        }
    }
}
