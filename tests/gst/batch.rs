//! Elements sharing one model instance (`model-instance-id`, `batch-size`,
//! `max-batch-latency`) across separate pipelines of one process, as an
//! application running many streams on one GPU builds them: batched output
//! equals unbatched frame for frame, a stalled or finished stream holds the
//! others back no longer than the batch latency, a pipeline leaving keeps
//! the instance alive for the rest, bad combinations fail with one line,
//! and latency and profiling say what batching costs.
//!
//! Each test uses instance ids of its own: the registry is the process's,
//! shared with the tests running beside it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::harness::{
    buffer, caps, element, harness_on_shared_device, init, launch, shared_device, start_error,
};

use gst::prelude::*;
use wgnn::gst::roi;
use wgnn::gst::tensor_meta::outputs_of;
use wgnn::tasks::instance::registry;

fn selfie() -> PathBuf {
    wgnn::models::bundled("selfie/selfie_segmentation.tflite")
}

/// The face detector (its model-proc, face_detection_short_range.json,
/// lies beside it): 128x128 input, the cheapest model here on lavapipe.
fn face() -> PathBuf {
    wgnn::models::bundled("mediapipe/face_detection_short_range.tflite")
}

/// An instance id no other test uses.
fn id(name: &str) -> String {
    format!("batch-{name}-{}", std::process::id())
}

/// Frame `k` of stream `s`, RGBA `w` x `h`: the sample photo scaled down
/// (it has a face the detector finds), rolled sideways and brightened by
/// the stream and frame so that every frame differs.
fn frame(s: usize, k: usize, w: u32, h: u32) -> Vec<u8> {
    let img = image::DynamicImage::ImageRgb8(common::astronaut())
        .resize_exact(w, h, image::imageops::FilterType::Triangle)
        .to_rgba8();
    let roll = (s * 5 + k * 3) as u32 % w;
    let lift = (s * 20 + k * 7) as u8;
    let mut out = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            let p = img.get_pixel((x + roll) % w, y).0;
            out.extend(p[..3].iter().map(|v| v.saturating_add(lift)));
            out.push(255);
        }
    }
    out
}

/// One pipeline `appsrc ! <element> name=el ! appsink`, started (so its
/// element has joined its instance) and fed nothing yet.
struct Stream {
    pipeline: gst::Pipeline,
    src: gst_app::AppSrc,
    sink: gst_app::AppSink,
    size: (u32, u32),
    pushed: u64,
}

impl Stream {
    fn start(element: &str, size: (u32, u32)) -> Stream {
        Stream::start_on(element, size, false)
    }

    /// `start`, on the shared device (`harness::shared_device`) if `shared`,
    /// else on a device of the pipeline's own.
    fn start_on(element: &str, size: (u32, u32), shared: bool) -> Stream {
        let pipeline = launch(&format!(
            "appsrc name=src format=time ! {element} name=el ! appsink name=sink sync=false"
        ));
        if shared {
            pipeline.set_context(&shared_device());
        }
        let src = pipeline
            .by_name("src")
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap();
        let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, size.0, size.1)
            .fps(gst::Fraction::new(30, 1))
            .build()
            .unwrap();
        src.set_caps(Some(&info.to_caps().unwrap()));
        let sink = pipeline
            .by_name("sink")
            .unwrap()
            .downcast::<gst_app::AppSink>()
            .unwrap();
        pipeline.set_state(gst::State::Playing).unwrap();
        Stream {
            pipeline,
            src,
            sink,
            size,
            pushed: 0,
        }
    }

    fn el(&self) -> gst::Element {
        self.pipeline.by_name("el").unwrap()
    }

    fn push(&mut self, data: &[u8]) {
        self.src
            .push_buffer(buffer(data, self.pushed * 33))
            .unwrap();
        self.pushed += 1;
    }

    /// The next output buffer; fails with the bus's error if one came.
    fn pull(&self) -> gst::Buffer {
        match self.sink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
            Some(s) => s.buffer_owned().unwrap(),
            None => {
                let err = self
                    .pipeline
                    .bus()
                    .unwrap()
                    .pop_filtered(&[gst::MessageType::Error]);
                panic!("no frame out in 60 s: {err:?}")
            }
        }
    }

    /// `batched-frames / batches` of the element's instance.
    fn mean_batch(&self) -> (u64, u64) {
        let el = self.el();
        (el.property::<u64>("batches"), el.property("batched-frames"))
    }

    fn finish(self) {
        self.src.end_of_stream().unwrap();
        common::harness::expect_eos(&self.pipeline, 60, "finishing a stream");
        self.pipeline.set_state(gst::State::Null).unwrap();
    }
}

/// Runs `frames[s]` through one pipeline per stream, all started before
/// any frame goes in and fed at once (so that their frames meet in the
/// instance), and returns each stream's outputs and the instance's
/// (batches, batched frames) as the first element saw them.
///
/// Every stream runs on the process's shared device (see
/// `harness::shared_device`): the batched and unbatched runs of a model
/// then compile its kernels once, not once per stream.
fn run_streams(
    element: &str,
    sizes: &[(u32, u32)],
    frames: usize,
) -> (Vec<Vec<gst::Buffer>>, (u64, u64)) {
    let mut streams: Vec<Stream> = sizes
        .iter()
        .map(|&s| Stream::start_on(element, s, true))
        .collect();
    for s in streams.iter_mut() {
        let (w, h) = s.size;
        let index = sizes.iter().position(|&z| z == s.size).unwrap();
        for k in 0..frames {
            s.push(&frame(index, k, w, h));
        }
    }
    let out: Vec<Vec<gst::Buffer>> = streams
        .iter()
        .map(|s| (0..frames).map(|_| s.pull()).collect())
        .collect();
    let stats = streams[0].mean_batch();
    for s in streams {
        s.finish();
    }
    (out, stats)
}

/// Streams of distinct sizes (they index [`frame`]'s patterns).
const SIZES: [(u32, u32); 3] = [(32, 24), (48, 40), (20, 30)];
/// Frames per stream: two make two full batches of three, with each
/// stream's frames in both (a frame more is CPU time on lavapipe, not a
/// case the comparison lacks).
const FRAMES: usize = 2;

fn batching(id: &str) -> String {
    format!("model-instance-id={id} batch-size=3 max-batch-latency=500")
}

fn assert_batched((batches, items): (u64, u64), what: &str) {
    let total = (SIZES.len() * FRAMES) as u64;
    assert_eq!(items, total, "{what}: every frame in a batch");
    assert!(
        batches < items,
        "{what}: {items} frames in {batches} batches: the mean batch must be above 1"
    );
    eprintln!("{what}: {items} frames in {batches} batches");
}

#[test]
fn segment_masks_batched_equal_unbatched_for_streams_of_different_sizes() {
    init();
    // Selfie takes 256x256 whatever the frame: the three streams' frames
    // (three sizes) are each scaled into their slot of one batched input.
    let plain = format!(
        "wgnnsegment device=gpu precision=f32 effect=mask model={}",
        selfie().display()
    );
    let shared = format!("{plain} {}", batching(&id("segment")));
    let (alone, _) = run_streams(&plain, &SIZES, FRAMES);
    let (batched, stats) = run_streams(&shared, &SIZES, FRAMES);
    assert_batched(stats, "wgnnsegment");
    // Byte-exact in float32: each item of the batched graph runs the same
    // kernels on the same values as the batch-1 graph (the batch is one
    // more dimension the kernels index; no sum is reordered), the slot is
    // written as a frame alone is, and the mask is quantised by the same
    // shader. (In float16 a batch rounds some gates once more than batch 1
    // does: see tests/models/batched.rs.)
    for (s, (a, b)) in alone.iter().zip(&batched).enumerate() {
        for (k, (a, b)) in a.iter().zip(b).enumerate() {
            let (a, b) = (common::harness::bytes(a), common::harness::bytes(b));
            let (w, h) = SIZES[s];
            assert_eq!(a.len(), (w * h * 4) as usize);
            let worst = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max();
            assert!(
                a == b,
                "stream {s} frame {k}: batched mask differs by up to {worst:?}"
            );
        }
    }
}

#[test]
fn infer_tensors_batched_equal_unbatched() {
    init();
    let plain = format!(
        "wgnninfer device=gpu precision=f32 model={}",
        face().display()
    );
    let shared = format!("{plain} {}", batching(&id("infer")));
    let (alone, _) = run_streams(&plain, &SIZES, FRAMES);
    let (batched, stats) = run_streams(&shared, &SIZES, FRAMES);
    assert_batched(stats, "wgnninfer");
    for (s, (a, b)) in alone.iter().zip(&batched).enumerate() {
        for (k, (a, b)) in a.iter().zip(b).enumerate() {
            let (a, b) = (outputs_of(a).unwrap(), outputs_of(b).unwrap());
            assert_eq!(a.tensors().len(), 2, "regressors and scores");
            assert_eq!(a.tensors().len(), b.tensors().len());
            for i in 0..a.tensors().len() {
                assert_eq!(a.tensors()[i].0, b.tensors()[i].0);
                assert_eq!(a.tensors()[i].1.shape(), b.tensors()[i].1.shape());
                let (x, y) = (a.read_f32(i).unwrap(), b.read_f32(i).unwrap());
                let worst = x
                    .iter()
                    .zip(&y)
                    .map(|(p, q)| (p - q).abs() / p.abs().max(1.0))
                    .fold(0f32, f32::max);
                assert!(
                    worst <= 1e-4,
                    "stream {s} frame {k} output {}: batched differs by {worst}",
                    a.tensors()[i].0
                );
            }
        }
    }
}

#[test]
fn detect_finds_the_same_faces_batched_and_unbatched() {
    init();
    let plain = format!(
        "wgnndetect device=gpu precision=f32 model={}",
        face().display()
    );
    let shared = format!("{plain} {}", batching(&id("detect")));
    let (alone, _) = run_streams(&plain, &SIZES, FRAMES);
    let (batched, stats) = run_streams(&shared, &SIZES, FRAMES);
    assert_batched(stats, "wgnndetect");
    let mut found = 0;
    for (s, (a, b)) in alone.iter().zip(&batched).enumerate() {
        let (w, h) = SIZES[s];
        for (k, (a, b)) in a.iter().zip(b).enumerate() {
            let (a, b) = (roi::read(a, w, h), roi::read(b, w, h));
            assert_eq!(a.len(), b.len(), "stream {s} frame {k}: {a:?} / {b:?}");
            for (x, y) in a.iter().zip(&b) {
                let (x, y) = (&x.object, &y.object);
                assert_eq!(x.label, y.label);
                assert!((x.confidence - y.confidence).abs() <= 1e-4, "{x:?} / {y:?}");
                let r = |o: &wgnn::tasks::ObjectResult| [o.rect.x, o.rect.y, o.rect.w, o.rect.h];
                for (p, q) in r(x).iter().zip(r(y)) {
                    assert!((p - q).abs() <= 1e-3, "stream {s} frame {k}: {x:?} / {y:?}");
                }
            }
            found += a.len();
        }
    }
    assert!(
        found > 0,
        "the face is found in some frames: the comparison compares something"
    );
}

/// Pushes one frame into each of `streams` and pulls their outputs; the
/// wall time it took.
fn one_round(streams: &mut [&mut Stream], k: usize) -> Duration {
    let began = Instant::now();
    for (s, stream) in streams.iter_mut().enumerate() {
        let (w, h) = stream.size;
        stream.push(&frame(s, k, w, h));
    }
    for stream in streams.iter() {
        stream.pull();
    }
    began.elapsed()
}

/// A tiny model (32x32 in, three means out): its dispatch takes
/// milliseconds even on lavapipe, so a batch's wait stands out of the
/// rounds' times (the face detector takes seconds on a busy machine).
fn tiny() -> PathBuf {
    common::root().join("tests/data/classify/mean_color.onnx")
}

const LATENCY: Duration = Duration::from_millis(1000);

/// What a round of the tiny model may take besides any wait (a busy
/// two-core machine's scheduling).
const SLACK: Duration = Duration::from_millis(400);

#[test]
fn a_stalled_stream_holds_the_others_at_most_the_batch_latency_and_its_eos_not_at_all() {
    init();
    const ROUNDS: usize = 2;
    let desc = format!(
        "wgnninfer device=gpu model={} model-instance-id={} batch-size=3 max-batch-latency={}",
        tiny().display(),
        id("stall"),
        LATENCY.as_millis()
    );
    let (mut a, mut b) = (
        Stream::start(&desc, (32, 24)),
        Stream::start(&desc, (32, 24)),
    );
    // Started (a member of the instance) and never fed.
    let stalled = Stream::start(&desc, (32, 24));
    // The first round builds the batched graph: not timed.
    one_round(&mut [&mut a, &mut b], 0);
    let held: Vec<Duration> = (1..=ROUNDS)
        .map(|k| one_round(&mut [&mut a, &mut b], k))
        .collect();
    let (batches, items) = a.mean_batch();
    // The stalled stream's end of stream: nobody is left to wait for, so
    // the two running streams' batches go as soon as both have a frame in.
    stalled.finish();
    let free: Vec<Duration> = (1..=ROUNDS)
        .map(|k| one_round(&mut [&mut a, &mut b], ROUNDS + k))
        .collect();
    eprintln!("rounds with a stalled stream {held:?}, after its EOS {free:?}");
    // Each batch waited for the stalled stream's frame the latency, no
    // longer, then ran partial.
    for (k, t) in held.iter().enumerate() {
        assert!(*t >= LATENCY, "round {k}: {t:?}: the batch did not wait");
        assert!(
            *t < LATENCY + SLACK,
            "round {k}: {t:?}: held beyond the batch latency"
        );
    }
    for (k, t) in free.iter().enumerate() {
        assert!(*t < SLACK, "round {k} after the EOS: {t:?}: it waited");
    }
    let (after, after_items) = a.mean_batch();
    assert_eq!(after - batches, ROUNDS as u64, "one batch per round");
    assert_eq!(after_items - items, 2 * ROUNDS as u64, "two frames in each");
    // One stream's EOS leaves the other alone: its frames go at once.
    a.finish();
    let alone = one_round(&mut [&mut b], 2 * ROUNDS + 1);
    assert!(alone < SLACK, "the last stream waited {alone:?}");
    b.finish();
}

#[test]
fn a_pipeline_leaving_keeps_the_instance_for_the_others_until_the_last_goes() {
    init();
    let id = id("leave");
    let desc = format!(
        "wgnninfer device=gpu model={} model-instance-id={id} batch-size=3 max-batch-latency={}",
        tiny().display(),
        LATENCY.as_millis()
    );
    assert!(registry::find(&id, None).is_none());
    let mut streams: Vec<Stream> = (0..3).map(|_| Stream::start(&desc, (32, 24))).collect();
    assert!(registry::find(&id, None).is_some());
    {
        let mut all: Vec<&mut Stream> = streams.iter_mut().collect();
        one_round(&mut all, 0);
    }
    // One pipeline goes away in the middle of the stream, no EOS.
    let gone = streams.pop().unwrap();
    gone.pipeline.set_state(gst::State::Null).unwrap();
    drop(gone);
    assert!(
        registry::find(&id, None).is_some(),
        "the others still use the instance"
    );
    let (batches, _) = streams[0].mean_batch();
    let (mut a, mut b) = {
        let mut it = streams.into_iter();
        (it.next().unwrap(), it.next().unwrap())
    };
    // It is no longer waited for: no round waits the latency.
    for k in 1..=2 {
        let t = one_round(&mut [&mut a, &mut b], k);
        assert!(
            t < SLACK,
            "round {k}: {t:?}: waited for the pipeline that left"
        );
    }
    assert_eq!(
        a.mean_batch().0 - batches,
        2,
        "the shared instance ran both rounds"
    );
    a.pipeline.set_state(gst::State::Null).unwrap();
    drop(a);
    assert!(registry::find(&id, None).is_some(), "one user is left");
    b.pipeline.set_state(gst::State::Null).unwrap();
    drop(b);
    assert!(
        registry::find(&id, None).is_none(),
        "the last user has gone"
    );
}

/// One line, no source paths, no runs of spaces from a broken string.
fn assert_clean(text: &str) {
    assert!(!text.contains('\n'), "one line: {text:?}");
    assert!(!text.contains(".rs:"), "no source paths: {text:?}");
    assert!(!text.contains("  "), "no runs of spaces: {text:?}");
}

/// The error message (not the debug text) the second pipeline posts when
/// it starts while `first` runs.
fn second_error(first: &str, second: &str) -> String {
    let running = Stream::start(first, (32, 24));
    let pipeline = launch(&format!(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=24 ! {second} ! fakesink"
    ));
    let _ = pipeline.set_state(gst::State::Playing);
    let msg = common::harness::eos_or_error(&pipeline, 60);
    pipeline.set_state(gst::State::Null).unwrap();
    running.pipeline.set_state(gst::State::Null).unwrap();
    match msg.view() {
        gst::MessageView::Error(e) => e.error().to_string(),
        _ => panic!("{second}: started while {first} runs"),
    }
}

#[test]
fn elements_that_cannot_share_an_instance_fail_with_one_line() {
    init();
    let (face, selfie) = (face(), selfie());
    let (face, selfie) = (face.display(), selfie.display());
    // The first element's name is its pipeline's "el": the message names it.
    // (The same id on two devices, the CPU and a GPU or two GPUs, makes one
    // instance on each: tests/gst/gpus.rs.)
    let cases = [
        (
            format!("wgnninfer device=gpu model={face} model-instance-id=ID"),
            format!("wgnninfer device=gpu model={selfie} model-instance-id=ID"),
            vec![format!(
                "model-instance-id 'ID' is el's, with model {face}, not {selfie}"
            )],
        ),
        (
            format!("wgnndetect device=gpu model={face} model-instance-id=ID batch-size=2"),
            format!("wgnndetect device=gpu model={face} model-instance-id=ID batch-size=3"),
            vec!["model-instance-id 'ID' is el's, with batch-size 2, not 3".into()],
        ),
        (
            format!("wgnnsegment device=gpu model={selfie} model-instance-id=ID batch-size=2"),
            format!(
                "wgnnsegment device=gpu model={selfie} model-instance-id=ID batch-size=2 \
                 max-batch-latency=20"
            ),
            vec!["with max-batch-latency 10 ms, not 20 ms".into()],
        ),
    ];
    for (n, (first, second, needles)) in cases.into_iter().enumerate() {
        let id = id(&format!("mismatch{n}"));
        let (first, second) = (first.replace("ID", &id), second.replace("ID", &id));
        let text = second_error(&first, &second);
        assert_clean(&text);
        assert!(text.starts_with("cannot use model "), "{text}");
        for needle in needles {
            let needle = needle.replace("ID", &id);
            assert!(
                text.contains(&needle),
                "{second}: {text:?} lacks {needle:?}"
            );
        }
    }
}

#[test]
fn batching_on_the_cpu_or_beyond_the_device_fails_with_one_line() {
    init();
    let src = "videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=32,height=24";
    for element in ["wgnnsegment", "wgnninfer"] {
        let text = start_error(&format!(
            "{src} ! {element} device=cpu model={} batch-size=2 ! fakesink",
            selfie().display()
        ));
        let line = text.split(" Some(").next().unwrap();
        assert_clean(line);
        assert!(
            line.contains("batch size 2 needs the GPU"),
            "{element}: {text}"
        );
    }
    // Selfie's input is 256x256x3 float32 per frame; the first batch size
    // whose input cannot be one storage buffer of the device.
    let per_frame = 256 * 256 * 3 * 4;
    let limit = common::gpu().limits().max_storage_buffer_binding_size;
    let too_many = limit / per_frame + 1;
    eprintln!("max_storage_buffer_binding_size {limit}: batch {too_many} is too large");
    if too_many > 256 {
        // batch-size stops at 256: a device whose buffers hold 256 selfie
        // inputs (192 MiB) takes every batch size the property allows.
        return;
    }
    let text = start_error(&format!(
        "{src} ! wgnnsegment device=gpu precision=f32 model={} batch-size={too_many} ! fakesink",
        selfie().display()
    ));
    let line = text.split(" Some(").next().unwrap();
    assert_clean(line);
    assert!(
        line.contains(&format!("batch size {too_many} is too large for"))
            && line.contains(&format!("the device allows {limit} in one buffer")),
        "{text}"
    );
}

#[test]
fn batch_properties_out_of_glibs_range_are_refused() {
    init();
    for factory in ["wgnnsegment", "wgnninfer", "wgnndetect", "wgnnclassify"] {
        let e = gst::ElementFactory::make(factory).build().unwrap();
        let uint = |name: &str| {
            let spec = e.find_property(name).unwrap();
            let spec = spec.downcast::<gst::glib::ParamSpecUInt>().unwrap();
            (spec.minimum(), spec.maximum(), spec.default_value())
        };
        assert_eq!(uint("batch-size"), (1, 256, 1), "{factory}");
        assert_eq!(uint("max-batch-latency"), (0, 1000, 10), "{factory}");
        for (name, bad) in [
            ("batch-size", 0u32),
            ("batch-size", 257),
            ("max-batch-latency", 1001),
        ] {
            let before: u32 = e.property(name);
            let set = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                e.set_property(name, bad)
            }));
            assert!(set.is_err(), "{factory}: {name}={bad} was taken");
            assert_eq!(e.property::<u32>(name), before, "{factory} {name}");
        }
        // The read-only counters and the instance id are there too.
        for name in ["batches", "batched-frames", "batches-in-flight"] {
            let spec = e.find_property(name).unwrap();
            assert!(
                !spec.flags().contains(gst::glib::ParamFlags::WRITABLE),
                "{factory} {name}"
            );
            assert_eq!(e.property::<u64>(name), 0, "{factory} {name} before start");
        }
        assert_eq!(e.property::<Option<String>>("model-instance-id"), None);
        assert_eq!(e.property::<f64>("gpu-ms"), -1.0, "{factory}");
        // And the stage times: no frame timed yet.
        let stages = e.property::<gst::Structure>("stage-ms");
        assert_eq!(stages.get::<u64>("frames").unwrap(), 0, "{factory}");
        assert_eq!(stages.get::<f64>("element").unwrap(), 0.0, "{factory}");
    }
}

/// The latency `el` adds, asked on its source pad.
fn latency_of(el: &gst::Element) -> gst::ClockTime {
    let mut q = gst::query::Latency::new();
    assert!(
        el.static_pad("src").unwrap().query(&mut q),
        "latency answered"
    );
    q.result().1
}

#[test]
fn a_batching_element_reports_its_batch_latency() {
    init();
    let model = face();
    let batching = Stream::start(
        &format!(
            "wgnninfer device=gpu model={} model-instance-id={} batch-size=2 \
             max-batch-latency=300",
            model.display(),
            id("latency")
        ),
        (32, 24),
    );
    let plain = Stream::start(
        &format!("wgnninfer device=gpu model={}", model.display()),
        (32, 24),
    );
    // Before any frame: the batch latency is what a frame may wait.
    assert!(latency_of(&batching.el()) >= gst::ClockTime::from_mseconds(300));
    assert!(latency_of(&plain.el()) < gst::ClockTime::from_mseconds(300));
    batching.pipeline.set_state(gst::State::Null).unwrap();
    plain.pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn profiling_measures_the_models_gpu_time_where_the_adapter_has_timestamps() {
    init();
    let timestamps = common::gpu().has(wgpu::Features::TIMESTAMP_QUERY);
    let classifier = common::root().join("tests/data/classify/mean_color.onnx");
    let id = id("profile");
    let cases = [
        format!("wgnninfer device=gpu model={}", face().display()),
        format!("wgnndetect device=gpu model={}", face().display()),
        format!("wgnnclassify device=gpu model={}", classifier.display()),
        // Two elements of one batching instance.
        format!(
            "wgnninfer device=gpu model={} model-instance-id={id} batch-size=2",
            face().display()
        ),
        format!(
            "wgnninfer device=gpu model={} model-instance-id={id} batch-size=2",
            face().display()
        ),
    ];
    let mut harnesses = Vec::new();
    for desc in &cases {
        let mut h = harness_on_shared_device(&format!("{desc} name=el profile=true"));
        h.set_src_caps_str(&caps("RGBA", 32, 24));
        harnesses.push(h);
    }
    // A harness's push runs the element: the pair's frames go in batches
    // of one after the default 10 ms latency, each timed as a batch.
    for (k, h) in harnesses.iter_mut().enumerate() {
        h.push(buffer(&frame(k, 0, 32, 24), 0)).unwrap();
    }
    for (desc, h) in cases.iter().zip(harnesses.iter_mut()) {
        h.pull().unwrap();
        let ms = element(h, "el").property::<f64>("gpu-ms");
        eprintln!("{desc}: gpu-ms {ms} (timestamps: {timestamps})");
        if timestamps {
            assert!(ms > 0.0, "{desc}: gpu-ms {ms}");
        } else {
            assert_eq!(ms, -1.0, "{desc}: measured with no timestamp queries");
        }
    }
}
