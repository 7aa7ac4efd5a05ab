#!/usr/bin/env bash
# Every issue-8 measurement in one device-machine call, so that all ratios in
# docs/BENCHMARKS.md come from one run on one GPU: wgnn-bench ops, models,
# pipeline and interop, then the PyTorch anchors (models_torch.py, which also
# checks its outputs against wgnn's, and conv2d_torch.py).
#
# Prepare here (see docs/BENCHMARKS.md, "How these runs were made"):
#   cargo build --release --no-default-features --bin wgnn-bench
#   mkdir -p .devbin && strip -o .devbin/wgnn-bench target/release/wgnn-bench
#   .gl/  the Vulkan loader .debs (/work/.library/device/README.md)
#   .whl/ tflite-2.18.0-py2.py3-none-any.whl (the anchor parses TFLite with it)
# and for `wgnn-bench streams` (GStreamer elements; the device has no GStreamer),
# built first, as the line above overwrites target/release/wgnn-bench:
#   cargo build --release --bin wgnn-bench
#   strip -o .devbin/wgnn-bench-gst target/release/wgnn-bench
#   bash benches/anchors/gst_debs.sh   # .gst/: GStreamer's Debian 12 .debs, 8 MB
#   xz -f .devbin/wgnn-bench .devbin/wgnn-bench-gst   # under the 64 MiB carry limit
# Then run with carry [".devbin", ".gl", ".gst", ".whl"]:
#   bash benches/anchors/device_run.sh
# or only the streams runs (carry [".devbin", ".gl", ".gst"]):
#   bash benches/anchors/device_run.sh streams        # or `streams yolo`: only the YOLOv8n rows
#   (`streams gpus`: issue 44's one-GPU and all-GPU rows, on a multi-GPU kind, in one
#   process; `streams procs`: the same with one process per GPU; `streams decode`:
#   segment and YOLOv8n track with H.264 decoded in every stream; `streams inflight`:
#   YOLOv8n with one and three frames in flight per stream)
# The streams' YOLOv8n runs need its ONNX export (random weights, with the
# metadata Ultralytics writes, so no model-proc; its class biases raised by 9
# so that it finds 15 objects on the bench picture and the tracker has work):
# $YOLO, or carried in .devbin/
#   python3 benches/anchors/speed_models.py export --out .devbin --models yolov8n --cls-bias 9
#   xz -f .devbin/yolov8n.onnx
# or made on the device where .whl/ carries the ultralytics wheels.
set -u
OUT=${OUT:-/tmp/wgnn-bench-out}
mkdir -p "$OUT"
# Binaries carried xz-compressed (the working tree plus carry stays under 64 MiB).
for f in .devbin/*.xz; do
    [ -e "$f" ] && xz -dkf "$f" && chmod +x "${f%.xz}"
done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
B=${BENCH:-.devbin/wgnn-bench}
if ! python3 -c "import tflite" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
        export PYTHONPATH=/tmp/site
fi
# The path of the YOLOv8n export for the streams' detect and track runs, or
# nothing.
yolo_model() {
    local m
    for m in "${YOLO:-}" .devbin/yolov8n.onnx /tmp/streams-models/yolov8n.onnx; do
        if [ -n "$m" ] && [ -f "$m" ]; then
            echo "$m"
            return
        fi
    done
    if ls .whl/ultralytics-*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl >&2 && export PYTHONPATH=/tmp/site
        YOLO_OFFLINE=1 YOLO_VERBOSE=False YOLO_CONFIG_DIR=/tmp/ultralytics \
            python3 benches/anchors/speed_models.py export --out /tmp/streams-models \
            --models yolov8n --cls-bias 9 >&2 && echo /tmp/streams-models/yolov8n.onnx && return
    fi
}
# wgnn-bench streams (issue 20): N live 1080p30 streams through the elements
# sharing one model instance, for segmentation + blur and detection + overlay;
# then (issues 42, 43) YOLOv8n detect + overlay and detect + track +
# analytics + overlay at the same stream counts, with what tracking costs a
# stream more.
# GStreamer comes from .gst/ unpacked into /tmp/gstroot (unpacking into /
# can break the machine), found through LD_LIBRARY_PATH; only the four
# plugins the pipelines use are on the plugin path, so no other plugin is
# loaded (or fails to load for a library it lacks).
streams() {
    if [ ! -x .devbin/wgnn-bench-gst ] || ! ls .gst/*.deb >/dev/null 2>&1; then
        echo "streams: skipped (carry .devbin/wgnn-bench-gst and .gst)" | tee "$OUT/streams.txt"
        return
    fi
    local G=/tmp/gstroot A=x86_64-linux-gnu Y
    Y=$(yolo_model)
    for f in .gst/*.deb; do dpkg -x "$f" $G; done
    for f in .gst/*.tar.xz; do [ -e "$f" ] && tar -C $G -xJf "$f"; done
    mkdir -p $G/plugins
    for p in coreelements videoconvertscale png imagefreeze videorate multifile isomp4 \
        openh264 videoparsersbad; do
        [ -e $G/usr/lib/$A/gstreamer-1.0/libgst$p.so ] &&
            ln -sf $G/usr/lib/$A/gstreamer-1.0/libgst$p.so $G/plugins/
    done
    (
        export LD_LIBRARY_PATH=$G/usr/lib/$A:$G/lib/$A${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        export GST_PLUGIN_SYSTEM_PATH_1_0=$G/plugins GST_PLUGIN_PATH_1_0=
        export GST_PLUGIN_SCANNER=$G/usr/lib/$A/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner
        export GST_REGISTRY=$G/registry.bin GST_REGISTRY_1_0=$G/registry.bin
        # The bench with STREAMS_EXTRA's flags (procs and gpus).
        # shellcheck disable=SC2086
        run() { .devbin/wgnn-bench-gst streams "$@" ${STREAMS_EXTRA:-}; }
        if [ "${1:-}" = inflight ]; then
            # Issue 43: YOLOv8n f16 detect (batch 32, 30 ms to fill) with
            # queues, one frame in flight per stream against three, then
            # track with three; counts in INFLIGHT_STREAMS.
            local c=${INFLIGHT_STREAMS:-32,48,64}
            .devbin/wgnn-bench-gst streams --streams 8 --seconds 3 --task detect --model "$Y" \
                --precision f16 >/dev/null
            for f in 1 3; do
                .devbin/wgnn-bench-gst streams --streams "$c" --seconds 5 --task detect \
                    --model "$Y" --precision f16 --batch-size 32 --max-batch-latency 30 \
                    --queues --frames-in-flight $f
            done
            .devbin/wgnn-bench-gst streams --streams "$c" --seconds 5 --task track \
                --model "$Y" --precision f16 --batch-size 32 --max-batch-latency 30 \
                --queues --frames-in-flight 3
            exit
        fi
        if [ "${1:-}" = decode ]; then
            # Issue 43 item 5: H.264 decoded on the host's cores in every
            # stream's pipeline. The clip: the bundled sample scaled to
            # 1080p30 and encoded at 4 Mbit/s with a keyframe every 2 s
            # (openh264: the only H.264 codec carried); each count first on
            # the photo (no decode), then decoding the clip in a loop: the
            # CPU column's difference is the decode a stream.
            local clip=/tmp/clip1080.h264 d=${DECODE_STREAMS:-8,16,32}
            $G/usr/bin/gst-launch-1.0 -q filesrc location=assets/samples/astronaut.mp4 ! \
                qtdemux ! h264parse ! openh264dec ! videoconvert ! videoscale ! \
                video/x-raw,width=1920,height=1080,format=I420 ! \
                openh264enc bitrate=4000000 gop-size=60 ! h264parse ! \
                video/x-h264,stream-format=byte-stream ! filesink location=$clip
            ls -l $clip
            .devbin/wgnn-bench-gst streams --streams 8 --seconds 3 --task segment >/dev/null
            for v in "" "--video $clip --decoder openh264dec"; do
                # shellcheck disable=SC2086
                .devbin/wgnn-bench-gst streams --streams "$d" --seconds 5 --task segment \
                    --queues $v
                if [ -n "$Y" ]; then
                    # shellcheck disable=SC2086
                    .devbin/wgnn-bench-gst streams --streams 16 --seconds 5 --task track \
                        --model "$Y" --queues $v
                fi
            done
            exit
        fi
        if [ "${1:-}" = procs ]; then
            # Issue 44 as docs/SCALING.md deploys it: one process per GPU.
            # Each count first in one process on GPU 0 alone, then at the
            # same count in N processes at once, one pinned to each GPU
            # (--gpu), their measured windows overlapping; each process's
            # table is printed under its GPU's name. Counts as for gpus.
            # PROCS_ON lists the GPU of each process instead (e.g. "0 0":
            # two processes on GPU 0), and PROCS_SHARE=1 splits each count
            # among the processes rather than giving each all of it (is a
            # bound per process or per GPU?).
            local n x g c seg=${SEGMENT_ONE:-64} yolo=${YOLO_ONE:-16,24} on
            n=$(nvidia-smi -L | wc -l)
            on=${PROCS_ON:-$(seq 0 $((n - 1)))}
            # shellcheck disable=SC2329
            each_gpu() {
                local p=0 count=$1
                shift
                [ "${PROCS_SHARE:-0}" = 1 ] && count=$((count / $(echo $on | wc -w)))
                for g in $on; do
                    run --gpu "$g" --streams "$count" "$@" >"/tmp/procs.$p" 2>&1 &
                    p=$((p + 1))
                done
                wait
                p=0
                for g in $on; do
                    echo "--- process $p on GPU $g"
                    grep -v '^device:' "/tmp/procs.$p"
                    p=$((p + 1))
                done
            }
            each_gpu 8 --seconds 3 --task segment >/dev/null
            [ -n "$Y" ] && each_gpu 8 --seconds 3 --task track --model "$Y" >/dev/null
            run --streams "$seg" --seconds 5 --task segment
            for c in ${seg//,/ }; do each_gpu "$c" --seconds 5 --task segment; done
            if [ -n "$Y" ]; then
                run --streams "$yolo" --seconds 5 --task track --model "$Y"
                for c in ${yolo//,/ }; do
                    each_gpu "$c" --seconds 5 --task track --model "$Y"
                done
            fi
            exit
        fi
        if [ "${1:-}" = gpus ]; then
            # Issue 44, on a kind with several GPUs: each task swept on one
            # GPU, then at N times each count spread over the host's N GPUs
            # (round robin, one instance per GPU); the issue asks for at
            # least 0.9 x N x the largest one-GPU count held. Warm-ups first
            # (3 s, not reported as results): the model's first build on
            # each GPU and an idle GPU's clock stay out of the measured
            # rows. STREAMS_EXTRA adds flags (e.g. --queues) to every run;
            # SEGMENT_ONE and YOLO_ONE are the one-GPU counts.
            local n x seg=${SEGMENT_ONE:-64} yolo=${YOLO_ONE:-12,16,20,24}
            times() {
                local out="" c
                for c in ${1//,/ }; do out+="${out:+,}$((c * $2))"; done
                echo "$out"
            }
            n=$(nvidia-smi -L | wc -l)
            .devbin/wgnn-bench-gst adapters
            for x in 1 "$n"; do
                run --streams $((8 * x)) --gpus "$x" --seconds 3 --task segment >/dev/null
            done
            run --streams "$seg" --seconds 5 --task segment
            run --streams "$(times "$seg" "$n")" --gpus "$n" --seconds 5 --task segment
            if [ -n "$Y" ]; then
                for x in 1 "$n"; do
                    run --streams $((8 * x)) --gpus "$x" --seconds 3 --task track \
                        --model "$Y" >/dev/null
                done
                run --streams "$yolo" --seconds 5 --task track --model "$Y"
                run --streams "$(times "$yolo" "$n")" --gpus "$n" --seconds 5 --task track \
                    --model "$Y"
            fi
            exit
        fi
        if [ "${1:-}" != yolo ]; then
            .devbin/wgnn-bench-gst streams --streams 1,8,16,24,32,48,64 --task segment
            .devbin/wgnn-bench-gst streams --streams 1,8,32,64 --task detect
        fi
        if [ -n "$Y" ]; then
            .devbin/wgnn-bench-gst streams --streams 1,8,16,32 --seconds 5 --task detect,track \
                --model "$Y"
            # Issue 43: YOLOv8n detect in float16 at batches of 32 and 64
            # that have time to fill (30 ms), with the stage columns; the SM
            # clock and nvidia-smi's utilization sampled beside them (is an
            # idle GPU's clock what gpu-ms reads at low load?).
            nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu,power.draw \
                --format=csv -lms 500 >"$OUT/streams_clocks.csv" 2>&1 &
            local smi=$!
            .devbin/wgnn-bench-gst streams --streams 1,32,64,96 --seconds 5 --task detect \
                --model "$Y" --precision f16 --batch-size 32 --max-batch-latency 30
            .devbin/wgnn-bench-gst streams --streams 64,96 --seconds 5 --task detect \
                --model "$Y" --precision f16 --batch-size 64 --max-batch-latency 30
            # The same f16 rows with three frames in flight per stream: a
            # stream's rate bound by its batch's gather, not gather + read-back.
            .devbin/wgnn-bench-gst streams --streams 32,64,96 --seconds 5 --task detect \
                --model "$Y" --precision f16 --batch-size 32 --max-batch-latency 30 \
                --frames-in-flight 3
            kill "$smi"
        else
            echo "streams: YOLOv8n detect and track skipped: no yolov8n.onnx (\$YOLO, \
.devbin/yolov8n.onnx[.xz], or .whl/ with the ultralytics wheels)"
        fi
    ) 2>&1 | tee "$OUT/streams.txt"
}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    echo "cpus: $(nproc)"
    $B adapters
} 2>&1 | tee "$OUT/env.txt"
if [ "${1:-}" = streams ]; then
    streams "${2:-}"
    exit
fi
$B ops --iterations 20 2>&1 | tee "$OUT/ops.txt"
# What the tensor cores reach through wgpu: the tensor-core conv2d's ceilings.
$B tensor-cores 2>&1 | tee "$OUT/tensor_cores.txt"
# Whether a frame's upload copy can overlap compute on wgpu's one queue
# (what bounds the zero-copy / copy ratio): stand-in work near selfie's GPU
# time, then a heavier one.
{
    $B queue-overlap --work 10 --dispatches 60
    $B queue-overlap --work 100 --dispatches 60
} 2>&1 | tee "$OUT/queue_overlap.txt"
# The float16 rows again without cooperative matrices (tensor cores), as A/B.
echo "WGNN_COOPERATIVE_MATRIX=0:" | tee -a "$OUT/ops.txt"
WGNN_COOPERATIVE_MATRIX=0 $B ops --iterations 20 --filter float16 2>&1 | tee -a "$OUT/ops.txt"
# And with all of wgpu's shader runtime checks back on, as A/B.
echo "WGNN_SHADER_CHECKS=1:" | tee -a "$OUT/ops.txt"
WGNN_SHADER_CHECKS=1 $B ops --iterations 20 --filter "64->64" 2>&1 | tee -a "$OUT/ops.txt"
WGNN_SHADER_CHECKS=1 $B models --context gpu --filter selfie 2>&1 | tee -a "$OUT/models.txt"
$B models --context gpu --top 6 --save-io /tmp/wgnn-io 2>&1 | tee "$OUT/models.txt"
$B models --context both --filter selfie --iterations 20 --cpu-iterations 5 2>&1 | tee -a "$OUT/models.txt"
# Every bundled model again computed in float16 (precision f16), with its
# outputs' PSNR against the float32 graph's on the same input.
$B models --context gpu --precision f16 --top 6 2>&1 | tee -a "$OUT/models.txt"
$B pipeline 2>&1 | tee "$OUT/pipeline.txt"
$B pipeline --format NV12 2>&1 | tee -a "$OUT/pipeline.txt"
$B pipeline --precision f16 2>&1 | tee -a "$OUT/pipeline.txt"
# The upload ring against wgpu's write_texture, graphs encoded ahead
# against encoded by the dispatching thread, planes unpacked by compute
# against copied, and the frame's passes recorded during its upload against
# after it, as A/B.
echo "WGNN_UPLOAD_RING=0:" | tee -a "$OUT/pipeline.txt"
WGNN_UPLOAD_RING=0 $B pipeline 2>&1 | tee -a "$OUT/pipeline.txt"
echo "WGNN_ENCODE_AHEAD=0:" | tee -a "$OUT/pipeline.txt"
WGNN_ENCODE_AHEAD=0 $B pipeline 2>&1 | tee -a "$OUT/pipeline.txt"
echo "WGNN_UPLOAD_UNPACK=0:" | tee -a "$OUT/pipeline.txt"
WGNN_UPLOAD_UNPACK=0 $B pipeline 2>&1 | tee -a "$OUT/pipeline.txt"
WGNN_UPLOAD_UNPACK=0 $B pipeline --format NV12 2>&1 | tee -a "$OUT/pipeline.txt"
echo "WGNN_UPLOAD_OVERLAP=0:" | tee -a "$OUT/pipeline.txt"
WGNN_UPLOAD_OVERLAP=0 $B pipeline 2>&1 | tee -a "$OUT/pipeline.txt"
WGNN_UPLOAD_OVERLAP=0 $B pipeline --format NV12 2>&1 | tee -a "$OUT/pipeline.txt"
$B interop 2>&1 | tee "$OUT/interop.txt"
# A 1080p frame in a DMA-BUF imported against the same frame uploaded
# (issue 19): bytes uploaded per frame and host ms on each path.
$B import --format NV12 2>&1 | tee "$OUT/import.txt"
$B import --format RGBA 2>&1 | tee -a "$OUT/import.txt"
python3 benches/anchors/models_torch.py --io /tmp/wgnn-io --pipeline --json "$OUT/torch.json" 2>&1 |
    tee "$OUT/torch.txt"
python3 benches/anchors/conv2d_torch.py 2>&1 | tee -a "$OUT/torch.txt"
# Last, as it is slow: ESRGAN on the CPU context (one inference each).
timeout 240 $B models --context both --filter esrgan --iterations 10 --cpu-iterations 1 2>&1 |
    tee -a "$OUT/models.txt"
streams
date -u | tee -a "$OUT/env.txt"
