use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::error::Error;
use crate::gpu::transfer::{TextureRegion, TextureWrite};
use crate::gpu::UploadRing;

/// A device whose deferred work waits 10 s at most: the tests but the age
/// bound's count the submissions their own steps make, which a 2 ms bound
/// on a loaded lavapipe host would race.
fn gpu() -> Gpu {
    let gpu =
        Gpu::new().unwrap_or_else(|e| panic!("the deferred work tests need a GPU adapter: {e}"));
    gpu.set_max_deferred_age(Duration::from_secs(10));
    gpu
}

fn texture(gpu: &Gpu) -> crate::gpu::live::Texture {
    crate::gpu::upload_ring::tests::texture(gpu, 8, 4)
}

/// Uploads `bytes` into `t` through `ring`: deferred, not submitted.
fn upload(gpu: &Gpu, ring: &UploadRing, t: &wgpu::Texture, bytes: &[u8]) {
    let before = gpu.submits().submissions;
    let write = TextureWrite {
        texture: t,
        region: TextureRegion::whole(t),
        data: bytes,
        bytes_per_row: t.width() * 4,
        rows: t.height(),
    };
    gpu.upload_textures(ring, &[write]).unwrap();
    assert_eq!(ring.stats().fallbacks, 0);
    assert_eq!(gpu.submits().submissions, before, "the upload submitted");
}

fn read(gpu: &Gpu, t: &wgpu::Texture) -> Vec<u8> {
    let whole = TextureRegion::whole(t);
    gpu.download_texture(t, whole).unwrap().wait().unwrap()
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..8 * 4 * 4)
        .map(|i| (i as u8).wrapping_mul(7) ^ seed)
        .collect()
}

#[test]
fn deferred_work_runs_first_in_the_next_submission() {
    let gpu = gpu();
    let ring = UploadRing::new();
    let (t, twin) = (texture(&gpu), texture(&gpu));
    let bytes = pattern(3);
    upload(&gpu, &ring, &t, &bytes);
    assert_eq!(gpu.deferred(), 1);
    // Work submitted later reads the uploaded frame: the upload rides in
    // its submission, ahead of it.
    let before = gpu.submits().submissions;
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_texture_to_texture(t.as_image_copy(), twin.as_image_copy(), t.size());
    gpu.submit("reading test", [encoder.finish()]).unwrap();
    assert_eq!(gpu.submits().submissions - before, 1);
    assert_eq!(gpu.deferred(), 0);
    assert_eq!(read(&gpu, &twin), bytes);
}

#[test]
fn a_download_and_a_fallback_write_flush_first() {
    let gpu = gpu();
    let ring = UploadRing::new();
    let t = texture(&gpu);
    let bytes = pattern(5);
    upload(&gpu, &ring, &t, &bytes);
    assert_eq!(read(&gpu, &t), bytes);
    // `write_texture` runs ahead of the next submission's commands: the
    // deferred upload it would overtake is submitted first, so the later
    // bytes win.
    upload(&gpu, &ring, &t, &pattern(6));
    let later = pattern(7);
    let whole = TextureRegion::whole(&t);
    gpu.upload_texture(&t, whole, &later, 32, 4).unwrap();
    assert_eq!(gpu.deferred(), 0);
    assert_eq!(read(&gpu, &t), later);
}

#[test]
fn the_bound_flushes_in_one_submission_and_actions_run_in_order() {
    let gpu = gpu();
    let order = Arc::new(Mutex::new(Vec::new()));
    let before = gpu.submits().submissions;
    for i in 0..MAX_DEFERRED {
        let encoder = gpu.device().create_command_encoder(&Default::default());
        let order = order.clone();
        let after: After = Box::new(move || order.lock().unwrap().push(i));
        let deferral = gpu.defer("empty test pass", encoder, Some(after)).unwrap();
        let last = i + 1 == MAX_DEFERRED;
        assert_eq!(gpu.is_deferred(deferral), !last, "pass {i}");
    }
    assert_eq!(gpu.submits().submissions - before, 1);
    assert_eq!(gpu.deferred(), 0);
    assert_eq!(
        *order.lock().unwrap(),
        (0..MAX_DEFERRED).collect::<Vec<_>>()
    );
    // Waiting for the device submits what is deferred first.
    let encoder = gpu.device().create_command_encoder(&Default::default());
    gpu.defer("empty test pass", encoder, None).unwrap();
    gpu.wait_idle().unwrap();
    assert_eq!(gpu.submits().submissions - before, 2);
}

/// A copy of 32 bytes out of 16-byte buffers: invalid when finished.
fn bad_copy(gpu: &Gpu) -> wgpu::CommandEncoder {
    let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let [a, b] = [[1u8; 16], [0; 16]].map(|v| gpu.create_buffer_with_data("t", &v, usage).unwrap());
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&a, 0, &b, 0, 32);
    encoder
}

#[test]
fn an_error_in_deferred_work_names_it_in_one_line() {
    let gpu = gpu();
    gpu.defer("bad copy", bad_copy(&gpu), None).unwrap();
    let err = gpu.submit("test submit", []).unwrap_err();
    match &err {
        Error::Gpu { what, .. } => assert_eq!(what, "test submit (with the deferred bad copy)"),
        other => panic!("expected a GPU error naming the deferred work, got {other:?}"),
    }
    gpu.defer("bad copy", bad_copy(&gpu), None).unwrap();
    let err = gpu.flush().unwrap_err().to_string();
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with("GPU error in the deferred bad copy: "),
        "{err}"
    );
    // Caught in the flushing submission's scope: the device is fine.
    gpu.check().unwrap();
    gpu.submit("test submit", []).unwrap();
}

/// A device whose deferred work waits `ms` at most: long beside the test's
/// own steps on lavapipe, short beside its wait.
fn gpu_aged(ms: u64) -> Gpu {
    let gpu = gpu();
    gpu.set_max_deferred_age(Duration::from_millis(ms));
    gpu
}

/// Waits up to 2 s for `gpu`'s deferred work to be submitted; false where
/// it was not.
fn submitted_within_2s(gpu: &Gpu) -> bool {
    let start = Instant::now();
    while gpu.deferred() > 0 {
        if start.elapsed() > Duration::from_secs(2) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// An empty pass whose after-submit action records the thread it ran on.
fn traced(gpu: &Gpu, ran_on: &Arc<Mutex<Option<std::thread::ThreadId>>>) -> Deferral {
    let encoder = gpu.device().create_command_encoder(&Default::default());
    let ran_on = ran_on.clone();
    let after: After =
        Box::new(move || *ran_on.lock().unwrap() = Some(std::thread::current().id()));
    gpu.defer("empty test pass", encoder, Some(after)).unwrap()
}

#[test]
fn a_deferral_past_the_age_bound_is_submitted_by_the_next() {
    // Deferred under a long bound, the flusher's deadline is 10 s out:
    // only the next deferral can submit it once the bound is shortened.
    let gpu = gpu();
    let ran_on = Arc::new(Mutex::new(None));
    let first = traced(&gpu, &ran_on);
    gpu.set_max_deferred_age(Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(30));
    let before = gpu.submits();
    let second = traced(&gpu, &Arc::new(Mutex::new(None)));
    let counted = gpu.submits().since(&before);
    assert_eq!((counted.submissions, counted.aged), (1, 1), "{counted}");
    assert!(!gpu.is_deferred(first) && !gpu.is_deferred(second));
    assert_eq!(gpu.deferred(), 0);
    assert_eq!(*ran_on.lock().unwrap(), Some(std::thread::current().id()));
}

#[test]
fn a_lone_deferral_is_submitted_at_its_deadline() {
    let gpu = gpu_aged(40);
    let ring = UploadRing::new();
    let t = texture(&gpu);
    let bytes = pattern(9);
    let before = gpu.submits();
    let start = Instant::now();
    upload(&gpu, &ring, &t, &bytes);
    assert!(
        gpu.deferred() == 1 || start.elapsed() >= Duration::from_millis(40),
        "submitted before its deadline"
    );
    assert!(submitted_within_2s(&gpu), "the upload waited past 2 s");
    assert!(start.elapsed() >= Duration::from_millis(40));
    let counted = gpu.submits().since(&before);
    assert_eq!((counted.submissions, counted.aged), (1, 1), "{counted}");
    assert_eq!(read(&gpu, &t), bytes);
}

#[test]
fn a_failed_submission_by_the_flusher_is_the_next_submits_error() {
    let gpu = gpu_aged(20);
    gpu.defer("bad copy", bad_copy(&gpu), None).unwrap();
    assert!(submitted_within_2s(&gpu), "the bad copy waited past 2 s");
    // The error is kept once the flusher's scope has been popped, a little
    // after its submission took the work: a submit in between succeeds.
    let start = Instant::now();
    let err = loop {
        match gpu.submit("test submit", []) {
            Err(e) => break e.to_string(),
            Ok(_) if start.elapsed() < Duration::from_secs(2) => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Ok(_) => panic!("no submit returned the flusher's error in 2 s"),
        }
    };
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(
            "GPU error in the deferred bad copy (submitted alone after waiting 20 ms): "
        ),
        "{err}"
    );
    // Returned once; the device is fine.
    gpu.submit("test submit", []).unwrap();
    gpu.flush().unwrap();
}

#[test]
fn dropping_the_device_with_work_pending_submits_it_and_ends_the_flusher() {
    let (tx, rx) = std::sync::mpsc::channel();
    // On a thread of its own, so that a hang fails the test, not the run.
    std::thread::spawn(move || {
        let gpu = gpu();
        let ran_on = Arc::new(Mutex::new(None));
        traced(&gpu, &ran_on);
        let timer = Arc::downgrade(&gpu.inner.deferred.flusher.timer_for_tests());
        drop(gpu);
        let _ = tx.send((ran_on.lock().unwrap().is_some(), timer.upgrade().is_none()));
    });
    let (submitted, ended) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("dropping the device hung or panicked");
    assert!(
        submitted,
        "the pending work was not submitted as the device went"
    );
    assert!(ended, "the flusher thread outlived its device");
}
