//! wgnn-bench's benchmark subcommands in their `--quick` form (tiny sizes, a
//! few iterations) on whatever adapter the machine has (lavapipe in CI): the
//! tables print, the JSON holds what the tables claim, the zero-copy pipeline
//! downloads nothing while the copy path does, and the interop variants agree
//! with the CPU context.

use serde_json::Value;

use crate::common;

fn bench(args: &[&str]) -> String {
    let out = common::run_bin(env!("CARGO_BIN_EXE_wgnn-bench"), args, &[]);
    assert!(out.status.success(), "wgnn-bench {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn bench_json(args: &[&str]) -> Value {
    let text = bench(args);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: not JSON:\n{text}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn models_quick_table_and_saved_io() {
    let dir = std::env::temp_dir().join(format!("wgnn-bench-models-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let table = bench(&["models", "--quick", "--save-io", dir.to_str().unwrap()]);
    assert!(table.contains("GPU ms"), "{table}");
    for model in [
        "selfie 256x256",
        "selfie landscape 144x256",
        "esrgan-slim x2 32x24",
        "esrgan-slim x4 16x12",
    ] {
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with(model)).collect();
        assert_eq!(rows.len(), 2, "{model}: one GPU and one CPU row\n{table}");
        let gpu: Vec<&str> = rows[0].split_whitespace().collect();
        let cpu: Vec<&str> = rows[1].split_whitespace().collect();
        let words = model.split_whitespace().count();
        assert_eq!(gpu[words], "gpu");
        assert_eq!(cpu[words], "cpu");
        // float32 unless asked otherwise.
        assert_eq!((gpu[words + 1], cpu[words + 1]), ("f32", "f32"));
        // Each model's own batch without --batch.
        assert_eq!((gpu[words + 2], cpu[words + 2]), ("1", "1"));
        let gpu_ms: f64 = gpu[words + 3].parse().unwrap();
        assert!(gpu_ms > 0.0, "{}", rows[0]);
        // The CPU row's last column: its output against the GPU's.
        let diff: f64 = cpu.last().unwrap().parse().unwrap();
        assert!(
            diff < 1e-2,
            "CPU and GPU outputs differ by {diff}: {}",
            rows[1]
        );
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let entries = manifest["models"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    for e in entries {
        for (file, shape) in [("input", "input_shape"), ("output", "output_shape")] {
            let elements: u64 = e[shape]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .product();
            let len = std::fs::metadata(dir.join(e[file].as_str().unwrap()))
                .unwrap()
                .len();
            assert_eq!(len, 4 * elements, "{e}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--top` on the CPU context: per-op wall times and the slowest nodes of a
/// profiled run, as a table line and in the JSON, naming real ops.
#[test]
fn models_cpu_top_lists_where_the_time_goes() {
    let table = bench(&[
        "models",
        "--quick",
        "--context",
        "cpu",
        "--filter",
        "selfie 256",
        "--top",
        "4",
    ]);
    assert!(table.contains("CPU wall ms by op: conv2d"), "{table}");
    let v = bench_json(&[
        "models",
        "--quick",
        "--context",
        "cpu",
        "--filter",
        "selfie 256",
        "--top",
        "4",
        "--json",
    ]);
    let row = &v["models"][0];
    assert_eq!(row["context"], "cpu", "{v}");
    let by_op = row["ms_by_op"].as_array().unwrap();
    assert!(by_op.iter().any(|e| e["op"] == "conv2d"), "{v}");
    assert!(by_op.iter().all(|e| num(e, "ms") >= 0.0), "{v}");
    // Largest first.
    let ms: Vec<f64> = by_op.iter().map(|e| num(e, "ms")).collect();
    assert!(ms.windows(2).all(|w| w[0] >= w[1]), "{ms:?}");
    let slowest = row["slowest_kernels"].as_array().unwrap();
    assert_eq!(slowest.len(), 4, "{v}");
    let kernels = num(row, "kernels") as u64;
    assert!(
        slowest
            .iter()
            .all(|e| e["index"].as_u64().unwrap() < kernels),
        "{v}"
    );
}

#[test]
fn pipeline_quick_zero_copy_downloads_nothing() {
    let v = bench_json(&["pipeline", "--quick", "--json"]);
    let paths = v["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2);
    let (zero, copy) = (&paths[0], &paths[1]);
    assert_eq!(zero["path"], "zero-copy");
    assert_eq!(copy["path"], "copy");
    // Zero-copy: the frame goes up once and nothing comes down.
    assert_eq!(num(zero, "downloads_per_frame"), 0.0, "{zero}");
    assert_eq!(num(zero, "download_bytes_per_frame"), 0.0, "{zero}");
    assert_eq!(num(zero, "uploads_per_frame"), 1.0, "{zero}");
    assert_eq!(
        num(zero, "upload_bytes_per_frame"),
        64.0 * 48.0 * 4.0,
        "{zero}"
    );
    // Copy: tensor, mask and output frame come down; frame (twice), tensor
    // and mask go up.
    assert_eq!(num(copy, "downloads_per_frame"), 3.0, "{copy}");
    let down = 256.0 * 256.0 * 3.0 * 4.0 + 256.0 * 256.0 * 4.0 + 64.0 * 48.0 * 4.0;
    assert_eq!(num(copy, "download_bytes_per_frame"), down, "{copy}");
    assert_eq!(num(copy, "uploads_per_frame"), 4.0, "{copy}");
    for p in paths {
        assert!(num(p, "fps") > 0.0, "{p}");
        assert!(num(p, "gpu_ms_per_frame") > 0.0, "{p}");
    }
    assert!(num(&v, "fps_ratio") > 0.0);
    // The streamed frames' own timeline and host time, zero-copy only.
    let streamed = &zero["streamed"];
    assert_eq!(num(streamed, "frames"), num(zero, "frames"), "{zero}");
    assert!(num(streamed, "gpu_ms_per_frame") > 0.0, "{zero}");
    assert!(num(streamed, "gpu_ms_between_frames") >= 0.0, "{zero}");
    let busy = num(streamed, "gpu_busy");
    assert!(busy > 0.0 && busy <= 1.0 + 1e-9, "{zero}");
    // The segmenter's passes are recorded during the upload (one call, its
    // time in upload_ms), unless WGNN_UPLOAD_OVERLAP=0 puts them after it.
    let overlapped = wgnn::gpu::upload_overlap();
    assert_eq!(zero["recorded_during_upload"], overlapped, "{zero}");
    assert!(num(zero, "upload_ms_per_frame") > 0.0, "{zero}");
    match overlapped {
        true => assert_eq!(num(zero, "encode_ms_per_frame"), 0.0, "{zero}"),
        false => assert!(num(zero, "encode_ms_per_frame") > 0.0, "{zero}"),
    }
    assert_eq!(copy["recorded_during_upload"], false, "{copy}");
    assert!(copy["streamed"].is_null() && copy["encode_ms_per_frame"].is_null());

    let table = bench(&["pipeline", "--quick", "--frames", "1"]);
    assert!(
        table.contains("zero-copy per frame while streaming: host"),
        "{table}"
    );
    assert!(table.contains("down B/frame"), "{table}");
    let row = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row\n{table}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // The last two columns: download bytes and downloads per frame.
    let zero = row("zero-copy ");
    let copy = row("copy ");
    assert_eq!(zero[zero.len() - 2], "0", "{table}");
    assert!(
        copy[copy.len() - 2].parse::<f64>().unwrap() > 0.0,
        "{table}"
    );
    assert!(table.contains("zero-copy / copy fps:"), "{table}");
}

#[test]
fn detect_quick_reads_back_only_the_detections() {
    let v = bench_json(&["detect", "--quick", "--json"]);
    let frame = 320.0 * 180.0 * 4.0;
    // The frame goes up once (plus the overlay's small draw list); only the
    // detector's short list comes down, never a frame.
    let up = num(&v, "upload_bytes_per_frame");
    assert!(up >= frame && up < frame + 64.0 * 1024.0, "{v}");
    let down = num(&v, "download_bytes_per_frame");
    assert!(down > 0.0 && down < 8.0 * 1024.0, "{v}");
    assert!(num(&v, "downloads_per_frame") >= 1.0, "{v}");
    assert!(num(&v, "wall_ms_per_frame") > 0.0, "{v}");
    assert!(num(&v, "gpu_ms_overlay") > 0.0, "{v}");

    let table = bench(&["detect", "--quick", "--frames", "1"]);
    assert!(table.contains("detect span"), "{table}");
}

#[test]
fn interop_quick_variants_agree() {
    let v = bench_json(&["interop", "--quick", "--json"]);
    let variants = v["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4);
    let seed = [37.93, 27.04, 9.18, 7.58];
    for (r, s) in variants.iter().zip(seed) {
        assert_eq!(num(r, "seed_ms"), s);
        assert!(num(r, "wall_ms") > 0.0, "{r}");
        assert!(num(r, "gpu_ms") > 0.0, "{r}");
        assert!(num(r, "max_abs_diff_vs_cpu") < 1e-4, "{r}");
    }
    // Only variant 2 goes through the CPU: 12 x 12 x 16 floats each way.
    let bytes = 12.0 * 12.0 * 16.0 * 4.0;
    assert_eq!(num(&variants[1], "download_bytes_per_iteration"), bytes);
    assert_eq!(num(&variants[1], "upload_bytes_per_iteration"), bytes);
    for i in [0, 2, 3] {
        assert_eq!(num(&variants[i], "download_bytes_per_iteration"), 0.0);
        assert_eq!(num(&variants[i], "upload_bytes_per_iteration"), 0.0);
    }
    assert!(num(&v, "ratio_3_over_4_gpu") > 0.0);

    let table = bench(&["interop", "--quick"]);
    for name in [
        "(1) custom",
        "(2) graph",
        "(3) graph",
        "(4) graph",
        "(3) / (4):",
    ] {
        assert!(table.contains(name), "{name}\n{table}");
    }
    assert!(table.contains("37.93") && table.contains("7.58"), "{table}");
}

/// What `soak --help` says `--quick` runs: the frame size, the frames and
/// the frames between reports.
fn soak_quick_help() -> (String, usize, usize) {
    let help = bench(&["soak", "--help"]);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("--quick"))
        .unwrap_or_else(|| panic!("no --quick in\n{help}"));
    // "--quick  A 64x48 frame, 40 frames, a report every 10 (smoke tests)"
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let after = |word: &str| -> &str {
        let i = words.iter().position(|w| *w == word);
        words[i.unwrap_or_else(|| panic!("no '{word}' in {line}")) + 1]
    };
    let frames = words[words.iter().position(|w| *w == "frames").expect(line) - 1];
    (
        after("A").to_string(),
        frames.parse().expect(line),
        after("every").parse().expect(line),
    )
}

/// `soak --quick` runs what its help says (frame size, frames, reports)
/// and reports flat live-object counts with a verdict the exit status
/// agrees with.
#[test]
fn soak_quick_reports_flat_live_counts_and_a_verdict() {
    let (size, frames, every) = soak_quick_help();
    assert!(every > 0 && frames % every == 0, "{frames} {every}");
    let model = common::root().join("tests/data/soak/tiny_mask.onnx");
    let args = [
        "soak",
        "--quick",
        "--json",
        "--model",
        model.to_str().unwrap(),
    ];
    let out = common::run_bin(env!("CARGO_BIN_EXE_wgnn-bench"), &args, &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect();
    // A header, a report every `every` of the `frames` frames, the verdict.
    let n = frames / every;
    assert_eq!(lines.len(), n + 2, "{text}");
    assert!(lines[0]["device"].is_string(), "{text}");
    let what = lines[0]["soak"].as_str().unwrap();
    assert!(what.starts_with(&format!("{size} ")), "{size}: {what}");
    assert!(
        what.contains(&format!("a report every {every} frames")),
        "{every}: {what}"
    );
    let reports = &lines[1..=n];
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(num(r, "frames"), (every * (i + 1)) as f64, "{r}");
        assert!(num(r, "rss_bytes") > 0.0, "{r}");
        assert!(num(r, "fps") > 0.0, "{r}");
        // One graph, its tensors and the frame's textures: the same at every
        // report (nothing made per frame outlives its frame).
        assert_eq!(num(r, "live_graphs"), 1.0, "{r}");
        for key in [
            "live_buffers",
            "live_buffer_bytes",
            "live_textures",
            "live_texture_bytes",
            "live_compute_pipelines",
        ] {
            assert!(num(r, key) > 0.0, "{key}: {r}");
            assert_eq!(r[key], reports[0][key], "{key} changed: {text}");
        }
        // Vulkan keeps an allocator report; its totals stay put too.
        let allocated = &r["gpu_allocated_bytes"];
        assert!(allocated.is_u64() || allocated.is_null(), "{r}");
        assert_eq!(allocated, &reports[0]["gpu_allocated_bytes"], "{text}");
    }
    let verdict = &lines[n + 1];
    // The reference: the first report after the default warm-up (a fifth
    // of the frames, at least one report).
    let reference = (frames / 5).max(every).div_ceil(every) * every;
    let detail = verdict["detail"].as_str().unwrap();
    // lavapipe grows its own heap with every submission (see
    // tests/gst/soak.rs), so on it RSS may be all that drifts; the exit
    // status must agree with the verdict either way.
    match verdict["verdict"].as_str().unwrap() {
        "flat" => assert!(out.status.success(), "{text}"),
        "growing" => {
            assert_eq!(out.status.code(), Some(1), "{text}");
            assert!(
                detail.starts_with(&format!("NOT flat: frames {reference} -> {frames}: RSS: ")),
                "{detail}"
            );
            assert!(
                !detail.contains("live objects") && !detail.contains("GPU"),
                "{detail}"
            );
        }
        other => panic!("verdict {other}: {text}"),
    }

    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &["soak", "--frames", "10", "--every", "0"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--every 0 must be between 1 and --frames 10"),
        "{err}"
    );
}

#[test]
fn precision_shows_in_the_models_and_pipeline_reports() {
    let v = bench_json(&[
        "models",
        "--quick",
        "--filter",
        "esrgan-slim x2",
        "--precision",
        "f16",
        "--json",
    ]);
    let rows = v["models"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    for r in rows {
        // f16 on the GPU and on the CPU context alike (it rounds the same).
        assert_eq!(r["precision"], "f16", "{r}");
    }
    let table = bench(&[
        "models",
        "--quick",
        "--filter",
        "selfie 256",
        "--precision",
        "auto",
    ]);
    let f16 = common::gpu().has(wgpu::Features::SHADER_F16);
    let gpu_row = table
        .lines()
        .find(|l| l.starts_with("selfie 256x256") && l.contains(" gpu "))
        .unwrap_or_else(|| panic!("{table}"));
    let cpu_row = table
        .lines()
        .find(|l| l.starts_with("selfie 256x256") && l.contains(" cpu "))
        .unwrap_or_else(|| panic!("{table}"));
    let want = if f16 { " gpu  f16 " } else { " gpu  f32 " };
    assert!(gpu_row.contains(want), "{table}");
    assert!(
        cpu_row.contains(" cpu  f32 "),
        "auto is f32 on the CPU\n{table}"
    );

    let v = bench_json(&[
        "pipeline",
        "--quick",
        "--frames",
        "1",
        "--precision",
        "f16",
        "--json",
    ]);
    assert_eq!(v["precision"], "f16", "{v}");
    assert!(
        v["frames"]
            .as_str()
            .unwrap()
            .contains("precision f16 (asked for)"),
        "{v}"
    );

    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &["models", "--precision", "fp8"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'fp8'"));
}

/// CI's software adapter has no cooperative matrices: the ceilings refuse
/// with one line naming what is missing (and exit 1), not a wgpu panic.
#[test]
fn tensor_cores_without_cooperative_matrices_says_so() {
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &["tensor-cores", "--iterations", "1"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("no 16x16x16 float16 cooperative matrices"),
        "{err}"
    );
}

/// `streams` on tiny live frames (lavapipe cannot keep 10 fps here, so
/// whether the streams were sustained is not asserted): one row per stream
/// count, the default batch is the stream count, and what the row claims
/// is consistent with itself.
#[test]
fn streams_segment_prints_a_row_per_stream_count() {
    let table = bench(&[
        "streams",
        "--streams",
        "1,2",
        "--width",
        "64",
        "--height",
        "48",
        "--seconds",
        "1",
        "--fps",
        "10",
        "--task",
        "segment",
    ]);
    assert!(table.contains("segment x 64x48 NV12 at 10 fps"), "{table}");
    let header = table
        .lines()
        .find(|l| l.trim_start().starts_with("streams batch sustained"))
        .unwrap_or_else(|| panic!("no header:\n{table}"));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|w| w.parse::<u32>().is_ok()))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, n) in rows.iter().zip([1u32, 2]) {
        // Words: streams, batch, sustained (count, yes/no), min fps, mean
        // fps, drops, latency mean/max, mean batch, GPU ms per batch and per
        // frame, GPU busy %, CPU % per stream, submissions per frame,
        // objects per frame, precision used, host ms per frame in
        // tensorize, gather, submit, result, post and the whole element,
        // RSS MiB, GPU MiB.
        assert_eq!(row.len(), 24, "{row:?}");
        assert_eq!(row[0], n.to_string(), "{row:?}");
        assert_eq!(row[1], n.to_string(), "batch = streams: {row:?}");
        let sustained: u32 = row[2].parse().unwrap();
        assert!(sustained <= n, "{row:?}");
        assert_eq!(row[3] == "yes", sustained == n, "{row:?}");
        let (min, mean): (f64, f64) = (row[4].parse().unwrap(), row[5].parse().unwrap());
        assert!(min >= 0.0 && min <= mean + 1e-9, "{row:?}");
        let (lat_mean, lat_max) = row[7].split_once('/').unwrap();
        assert!(lat_mean.parse::<f64>().unwrap() <= lat_max.parse::<f64>().unwrap() + 1e-9);
        let rss: f64 = row[row.len() - 2].parse().unwrap();
        let gpu: f64 = row[row.len() - 1].parse().unwrap();
        assert!(rss > 0.0 && gpu > 0.0, "{row:?}");
    }
}

/// The detect task as JSON: the keys the table claims, the measured window
/// (expected frames = fps x seconds), the live GPU memory of the device
/// the streams share, (`--gpus 1`) that device's share of the streams, and
/// that the pipelines ran with queues, decoding an H.264 clip (`--queues
/// --video`).
#[test]
fn streams_detect_json() {
    let clip = common::root().join("tests/data/streams/ball_64x48.h264");
    let v = bench_json(&[
        "streams",
        "--streams",
        "2",
        "--width",
        "64",
        "--height",
        "48",
        "--seconds",
        "1",
        "--fps",
        "10",
        "--task",
        "detect",
        "--batch-size",
        "2",
        "--gpus",
        "1",
        "--precision",
        "f32",
        "--queues",
        "--video",
        clip.to_str().unwrap(),
        "--json",
    ]);
    let what = v["what"].as_str().unwrap();
    assert!(what.starts_with("detect x 64x48"), "{v}");
    assert!(
        what.ends_with("ball_64x48.h264 decoded by avdec_h264, with queues"),
        "{v}"
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{v}");
    let r = &runs[0];
    assert_eq!(num(r, "streams"), 2.0);
    assert_eq!(num(r, "batch_size"), 2.0);
    let expected = num(r, "frames_expected_per_stream");
    assert!((9.0..12.0).contains(&expected), "{r}");
    assert!(num(r, "gpu_live_bytes") > 0.0, "{r}");
    assert!(num(r, "rss_bytes") > 0.0, "{r}");
    assert!(num(r, "fps_min") <= num(r, "fps_mean") + 1e-9, "{r}");
    assert_eq!(
        r["sustained"].as_bool().unwrap(),
        num(r, "sustained_streams") == 2.0,
        "{r}"
    );
    for key in [
        "mean_batch",
        "gpu_ms_per_batch",
        "gpu_ms_per_frame",
        "submissions_per_frame",
        "error_scopes_per_frame",
    ] {
        assert!(
            r[key].is_null() || r[key].as_f64().unwrap() > 0.0,
            "{key}: {r}"
        );
    }
    // The elements share one instance: its batches hold 1 to 2 frames.
    if let Some(b) = r["mean_batch"].as_f64() {
        assert!((1.0..=2.0).contains(&b), "{r}");
    }
    assert_eq!(r["missing_properties"], serde_json::json!([]), "{r}");
    // `--gpus 1`: every stream on adapter 0, and said so.
    let shares = r["per_gpu"].as_array().unwrap();
    assert_eq!(shares.len(), 1, "{r}");
    assert_eq!(num(&shares[0], "streams"), 2.0, "{r}");
    assert_eq!(
        num(&shares[0], "sustained_streams"),
        num(r, "sustained_streams"),
        "{r}"
    );
    assert!(
        shares[0]["adapter"].as_str().unwrap().starts_with("0 '"),
        "{r}"
    );
    let used = r["precision_used"].as_str().unwrap();
    assert!(used.starts_with("f32"), "{r}");
    // The streams held graphs and buffers on the bench's device; once all
    // stopped, the shared instance went with its last user.
    assert!(num(&r["live_running"], "graphs") >= 1.0, "{r}");
    for key in ["graphs", "buffers", "textures"] {
        assert_eq!(num(&r["live_after_stop"], key), 0.0, "{key}: {r}");
    }
    // A frame's host time by stage: each one within the element's whole
    // time, and the stages together too. None only where no frame was
    // processed in the window (a software GPU under load).
    let stages = &r["stage_ms_per_frame"];
    if stages.is_null() {
        assert_eq!(num(r, "fps_mean"), 0.0, "{r}");
        return;
    }
    assert!(num(stages, "frames") >= 1.0, "{r}");
    let element = num(stages, "element");
    let mut sum = 0.0;
    for key in ["tensorize", "gather", "submit", "result", "post"] {
        let ms = num(stages, key);
        assert!(ms >= 0.0, "{key}: {r}");
        sum += ms;
    }
    // The detector encodes, submits, reads back and decodes every frame.
    for key in ["tensorize", "submit", "result", "post"] {
        assert!(num(stages, key) > 0.0, "{key}: {r}");
    }
    assert!(element > 0.0 && sum <= element * 1.001, "{r}");
}

/// `--task detect,track` with an Ultralytics export and no model-proc (the
/// committed tiny YOLOv8n, at its own 96x64): both tasks run at the stream
/// count, the model finds objects on the photo, and what tracking costs a
/// stream more is given for that count.
#[test]
fn streams_track_over_detect_with_a_zero_config_yolo_export() {
    let model = common::root().join("tests/data/detect/ultralytics/yolov8n_detect/model.onnx");
    assert!(
        !model.with_extension("json").exists(),
        "no model-proc beside it"
    );
    let v = bench_json(&[
        "streams",
        "--streams",
        "2",
        "--width",
        "96",
        "--height",
        "64",
        "--seconds",
        "1",
        "--fps",
        "10",
        "--task",
        "detect,track",
        "--model",
        model.to_str().unwrap(),
        "--json",
    ]);
    let what = v["what"].as_str().unwrap();
    assert!(
        what.starts_with("detect x 96x64") && what.contains("; track x 96x64"),
        "{v}"
    );
    let runs = v["runs"].as_array().unwrap();
    let tasks: Vec<&str> = runs.iter().map(|r| r["task"].as_str().unwrap()).collect();
    assert_eq!(tasks, ["detect", "track"], "{v}");
    for r in runs {
        assert_eq!(num(r, "streams"), 2.0, "{r}");
        // The random-weight model detects on the photo (the same frames in
        // both runs).
        assert!(num(r, "objects_per_frame") > 0.0, "{r}");
        assert!(num(r, "cpu_percent_per_stream") >= 0.0, "{r}");
        let busy = &r["gpu_busy_percent"];
        assert!(busy.is_null() || busy.as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["missing_properties"], serde_json::json!([]), "{r}");
    }
    let costs = v["track_over_detect"].as_array().unwrap();
    assert_eq!(costs.len(), 1, "{v}");
    assert_eq!(num(&costs[0], "streams"), 2.0);
    let cpu = num(&costs[0], "cpu_percent_per_stream");
    let want = num(&runs[1], "cpu_percent_per_stream") - num(&runs[0], "cpu_percent_per_stream");
    assert!((cpu - want).abs() < 1e-9, "{v}");
    assert_eq!(
        num(&costs[0], "objects_per_frame_track"),
        num(&runs[1], "objects_per_frame")
    );
}

/// Bad flags are refused before any device or pipeline: one line each, exit 2.
#[test]
fn streams_refuses_bad_flags_in_one_line() {
    for (flags, says) in [
        (&["--streams", "0"][..], "--streams"),
        (&["--streams", "1,x"][..], "--streams"),
        (&["--fps", "0"][..], "--fps"),
        (&["--width", "0"][..], "--width"),
        (&["--seconds", "0"][..], "--seconds"),
        (&["--batch-size", "0"][..], "--batch-size"),
        (&["--batch-size", "257"][..], "--batch-size"),
        (&["--max-batch-latency", "1001"][..], "--max-batch-latency"),
        (&["--format", "XYZ"][..], "XYZ"),
        (&["--gpus", "0"][..], "--gpus"),
        (&["--gpus", "1", "--gpu", "0"][..], "--gpus and --gpu"),
        (&["--model", "/nonexistent/model.tflite"][..], "--model"),
        (
            &[
                "--task",
                "segment,track",
                "--model",
                "tests/data/detect/ultralytics/yolov8n_detect/model.onnx",
            ][..],
            "--model",
        ),
    ] {
        let mut args = vec!["streams"];
        args.extend_from_slice(flags);
        let out = common::run_bin(env!("CARGO_BIN_EXE_wgnn-bench"), &args, &[]);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{flags:?}: {err}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(says),
            "{flags:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{flags:?}");
    }
}

/// `queue-overlap` on tiny frames: the four orders each get a time and the
/// summary compares two of them (what lavapipe overlaps means nothing for
/// an NVIDIA queue, so only the shape of the answer is checked).
#[test]
fn queue_overlap_times_the_four_orders() {
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &[
            "queue-overlap",
            "--frames",
            "2",
            "--work",
            "1",
            "--dispatches",
            "2",
            "--width",
            "33",
            "--height",
            "17",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for order in ["work only", "copy only", "serial", "ahead"] {
        let row = text
            .lines()
            .find(|l| l.starts_with(order))
            .unwrap_or_else(|| panic!("no {order} row in {text}"));
        let ms: f64 = row[order.len()..].trim().parse().expect("ms");
        assert!(ms > 0.0 && ms.is_finite(), "{row}");
    }
    assert!(text.contains("ahead against serial:"), "{text}");
    assert!(
        text.contains("33x17 RGBA frames, 2 frames per order"),
        "{text}"
    );
}

/// `--batch`: a model whose ONNX file leaves the batch axis open is built
/// for each count, and its rows say so (the batch in the input's shape,
/// per-image time and images per second from it); a file that fixes its
/// batch at 1 is refused for another count in one line.
#[test]
fn models_batch_binds_an_open_batch_and_refuses_a_fixed_one() {
    use prost::Message;
    let dir = common::scratch("bench-batch");
    let open = dir.join("silu_open_batch.onnx");
    std::fs::write(&open, common::onnx::silu(None).encode_to_vec()).unwrap();
    let v = bench_json(&[
        "models",
        "--quick",
        "--model",
        open.to_str().unwrap(),
        "--batch",
        "1,2",
        "--context",
        "both",
        "--json",
    ]);
    let rows = v["models"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "two batches on two contexts: {v}");
    for (r, batch) in rows.iter().zip([1, 1, 2, 2]) {
        assert_eq!(r["batch"], batch, "{r}");
        assert_eq!(r["input"], serde_json::json!([batch, 3, 8, 8]), "{r}");
        let per_run = num(
            r,
            if r["context"] == "gpu" {
                "gpu_ms"
            } else {
                "wall_ms"
            },
        );
        let per_image = num(r, "ms_per_image");
        assert!(
            (per_image * batch as f64 - per_run).abs() <= 1e-9 * per_run.max(1.0),
            "{r}"
        );
        let images = num(r, "images_per_s");
        assert!(
            (images - num(r, "fps") * batch as f64).abs() <= 1e-6 * images,
            "{r}"
        );
        // Sigmoid and Mul fuse or not; either way the count is per run.
        assert!(num(r, "kernels") >= 1.0, "{r}");
    }
    // The CPU context computes each batch as the GPU did.
    for r in rows.iter().filter(|r| r["context"] == "cpu") {
        assert!(num(r, "max_abs_diff_vs_gpu") < 1e-3, "{r}");
    }
    let table = bench(&[
        "models",
        "--quick",
        "--model",
        open.to_str().unwrap(),
        "--batch",
        "2",
        "--context",
        "gpu",
    ]);
    let header = table.lines().find(|l| l.starts_with("model")).unwrap();
    assert!(
        header.contains("batch") && header.contains("ms/img"),
        "{table}"
    );
    let row = table
        .lines()
        .find(|l| l.starts_with("silu_open_batch.onnx"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(" gpu  f32      2 "), "{table}");

    let fixed = common::root().join("tests/data/classify/mean_color.onnx");
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &[
            "models",
            "--quick",
            "--model",
            fixed.to_str().unwrap(),
            "--batch",
            "4",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    // One line (a software adapter's warning may come before it).
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(
        errors,
        [
            "error: mean_color.onnx: has a fixed batch of 1: export it with a dynamic batch axis \
          to run --batch 4"
        ],
        "{err}"
    );
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-bench"),
        &["models", "--batch", "1,0"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a batch is at least 1 item"));
}
