//! wgnnpublish against a real Mosquitto broker the test starts on a free
//! port (Debian's `mosquitto`, installed by .ci/setup), restarted while
//! the stream runs; and its file method, and the errors of issue 42: an
//! unreachable broker at start, a topic with wildcards.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;

use super::analytics::{config, push_scene, FRAMES};
use crate::common;
pub(super) use crate::common::broker::{free_port, Broker};
use crate::common::harness::{init, launch};

/// A subscriber with a session of its own on the broker, collecting the
/// payloads of `topic`.
pub(super) fn subscribe(port: u16, topic: &str) -> (rumqttc::Client, Arc<Mutex<Vec<Vec<u8>>>>) {
    let mut options = rumqttc::MqttOptions::new("wgnn-test-subscriber", "127.0.0.1", port);
    options.set_clean_session(false);
    options.set_keep_alive(Duration::from_secs(5));
    let (client, mut connection) = rumqttc::Client::new(options, 64);
    client.subscribe(topic, rumqttc::QoS::AtLeastOnce).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let (subscribed_tx, subscribed) = std::sync::mpsc::channel();
    let collected = got.clone();
    std::thread::spawn(move || {
        for event in connection.iter() {
            match event {
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::SubAck(_))) => {
                    let _ = subscribed_tx.send(());
                }
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                    collected.lock().unwrap().push(p.payload.to_vec());
                }
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    });
    subscribed
        .recv_timeout(Duration::from_secs(10))
        .expect("subscribed");
    (client, got)
}

/// The `wgnn-publish` counts posted at EOS: (sent, queued, dropped).
pub(super) fn counts_at_eos(pipeline: &gst::Pipeline) -> (u64, u64, u64) {
    let bus = pipeline.bus().unwrap();
    let mut counts = None;
    loop {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[
                    gst::MessageType::Element,
                    gst::MessageType::Eos,
                    gst::MessageType::Error,
                ],
            )
            .expect("EOS within 60 s");
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure().unwrap();
                if s.name() == "wgnn-publish" {
                    counts = Some((
                        s.get::<u64>("sent").unwrap(),
                        s.get::<u64>("queued").unwrap(),
                        s.get::<u64>("dropped").unwrap(),
                    ));
                }
            }
            gst::MessageView::Error(e) => panic!("{} ({:?})", e.error(), e.debug()),
            gst::MessageView::Eos(_) => break,
            _ => {}
        }
    }
    counts.expect("a wgnn-publish message before EOS")
}

#[test]
fn a_broker_restarted_mid_stream_gets_every_sent_message_once_per_frame() {
    init();
    let dir = common::scratch("publish-broker");
    let mut broker = Broker::start(&dir);
    let topic = "wgnn/test/door";
    let (subscriber, got) = subscribe(broker.port, topic);
    let pipeline = launch(&format!(
        "appsrc name=src ! wgnnanalytics config={} ! wgnnpublish name=p \
         address=127.0.0.1:{} topic={topic} qos=1 max-queue=3 ! fakesink",
        config(&dir).display(),
        broker.port
    ));
    pipeline.set_state(gst::State::Playing).unwrap();
    let publish = pipeline.by_name("p").unwrap();
    let began = Instant::now();
    // The broker goes away after frame 3 and comes back after frame 9:
    // six frames or more (until the reconnection) meet no broker, and the
    // queue keeps three.
    push_scene(&pipeline, |i| {
        std::thread::sleep(Duration::from_millis(40));
        if i == 3 {
            broker.stop();
        }
        if i == 9 {
            broker.restart();
        }
    });
    let (sent, queued, dropped) = counts_at_eos(&pipeline);
    let property = |name: &str| publish.property::<u64>(name);
    assert_eq!(
        (property("messages-sent"), property("messages-dropped")),
        (sent, dropped)
    );
    pipeline.set_state(gst::State::Null).unwrap();
    eprintln!(
        "broker restart: {FRAMES} frames, sent {sent}, queued {queued}, dropped {dropped} in \
         {:.1} s",
        began.elapsed().as_secs_f64()
    );
    assert_eq!(queued, 0, "everything went or was counted at EOS");
    assert_eq!(
        sent + dropped,
        FRAMES,
        "each frame is sent or counted dropped"
    );
    assert!(dropped > 0, "the outage outlasted the queue");
    // Frames 0-3 went before the outage; the queue kept its last three.
    assert!(sent >= 4 + 3, "sent {sent}");
    // Every message the broker acknowledged arrived, once per frame (QoS 1
    // may repeat one), each a whole frame's results.
    let until = Instant::now() + Duration::from_secs(10);
    let frames = loop {
        let frames: BTreeSet<u64> = got
            .lock()
            .unwrap()
            .iter()
            .map(|p| {
                let v: serde_json::Value = serde_json::from_slice(p).unwrap();
                assert!(
                    v["objects"].is_array() && v["lines"]["door"].is_object(),
                    "{v}"
                );
                v["frame"].as_u64().unwrap()
            })
            .collect();
        if frames.len() as u64 >= sent || Instant::now() > until {
            break frames;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(frames.len() as u64, sent, "frames received: {frames:?}");
    assert!(
        frames.contains(&0) && frames.contains(&(FRAMES - 1)),
        "{frames:?}"
    );
    let _ = subscriber.disconnect();
}

#[test]
fn an_unreachable_broker_fails_the_start_naming_its_address() {
    init();
    let port = free_port();
    let error = common::harness::start_error(&format!(
        "videotestsrc num-buffers=1 ! wgnnpublish address=127.0.0.1:{port} connect-timeout=2 ! \
         fakesink"
    ));
    assert!(
        error.starts_with(&format!(
            "cannot connect to the MQTT broker at 127.0.0.1:{port}: connection refused "
        )),
        "{error}"
    );
}

#[test]
fn a_topic_with_wildcards_is_refused() {
    init();
    // The marker is the element's name, which only this test gives: the
    // warnings' own text ("wildcards") is in other tests' refusals too.
    let marker = "publish-topic-refusals";
    common::harness::wgnn_warnings(marker);
    for topic in ["cameras/#", "cameras/+/door"] {
        let e = gst::ElementFactory::make("wgnnpublish")
            .name(marker)
            .build()
            .unwrap();
        e.set_property("topic", topic);
        assert_eq!(e.property::<String>("topic"), "wgnn/results", "{topic}");
    }
    let warnings = common::harness::wgnn_warnings(marker);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("cannot hold the wildcards"),
        "{}",
        warnings[0]
    );
}

#[test]
fn the_file_method_appends_one_line_per_frame_even_without_objects() {
    init();
    let dir = common::scratch("publish-file");
    let path = dir.join("results.jsonl");
    std::fs::write(&path, "kept\n").unwrap();
    let pipeline = launch(&format!(
        "videotestsrc num-buffers=5 ! video/x-raw,width=32,height=32 ! \
         wgnnpublish name=p method=file file-location={} ! fakesink",
        path.display()
    ));
    pipeline.set_state(gst::State::Playing).unwrap();
    let (sent, queued, dropped) = counts_at_eos(&pipeline);
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!((sent, queued, dropped), (5, 0, 0));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[0], "kept");
    for (i, line) in lines[1..].iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["frame"], i as u64);
        assert_eq!(v["objects"], serde_json::json!([]));
        assert_eq!(v["width"], 32);
    }
}
