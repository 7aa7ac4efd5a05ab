# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_wgnn_bench_global_optspecs
    string join \n generate= h/help V/version
end

function __fish_wgnn_bench_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_wgnn_bench_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_wgnn_bench_using_subcommand
    set -l cmd (__fish_wgnn_bench_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -l generate -d 'Print the manual page (man) or a shell completion script (bash, zsh, fish) and exit' -r -f -a "man\t'The manual page (roff, for man(1))'
bash\t'A bash completion script'
zsh\t'A zsh completion script'
fish\t'A fish completion script'"
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -s V -l version -d 'Print version'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "adapters" -d 'List the GPU adapters found, in the order the elements\' `gpu` property and `streams --gpus` count in (index, name, backend, type, driver, PCI bus id, vendor:device id), and the one wgnn would use'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "tensor-cores" -d 'Ceilings of the tensor cores (cooperative matrices, 16x16x16 float16 into float32) through wgpu: products alone, and with operands loaded contiguously or with an NHWC tensor\'s row stride (GPU timestamps)'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "queue-overlap" -d 'Whether a frame\'s upload copy overlaps the previous frame\'s compute work on wgpu\'s one queue when queued between that frame\'s first pass and the rest (stand-in work, wall ms per frame)'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "ops" -d 'GPU time per operator (median of timestamped dispatches)'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "models" -d 'Models end to end on the GPU (timestamped GPU ms per inference) and CPU contexts (wall ms): the bundled ones (selfie square 256x256, selfie landscape 144x256, ESRGAN-slim x2 at 960x540 and x4 at 480x270), or the files given with --model (ONNX, TFLite, TF.js)'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "pipeline" -d 'Frames through upload -> tensorize -> selfie -> blur composite, kept on the GPU, against the copy path (read back and re-upload between stages)'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "soak" -d 'The zero-copy pipeline (as `pipeline`) for many frames, reporting RSS, wgpu\'s allocator report and wgnn\'s live objects every N frames; exits non-zero unless the last report is within the tolerance of the first one after the warm-up'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "detect" -d 'What wgnndetect ! wgnnoverlay do to each frame: upload, tensorize, detector, decode + threshold + compact on the GPU, the short list read back, NMS, boxes and labels drawn on the GPU'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "import" -d 'A frame in a DMA-BUF imported (no upload) against the same frame uploaded, then tensorized: host ms, bytes uploaded, tensors compared. The DMA-BUF comes from /dev/dma_heap/system, /dev/udmabuf or a memfd (which only lavapipe takes). Exits 1 when the device cannot import it (the line says why) or the tensors differ'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "streams" -d 'Live streams through wgnn\'s GStreamer elements in one process, every model element sharing one model instance (model-instance-id) and one device: for each task in --task and each count in --streams, that many pipelines of filesrc (the bundled astronaut photo) ! pngdec ! videoconvert ! videoscale ! imagefreeze is-live=true ! wgnnupload ! the task\'s elements ! video/x-raw(memory:WgpuTexture) ! fakesink sync=true qos=true max-lateness=20ms (with --queues: a queue after wgnnupload and one before the sink; with --video: multifilesrc loop=true ! h264parse ! the decoder ! videoconvert ! videoscale ! videorate instead of the photo). After every stream\'s first frames (at most 5 s past the first, which builds the model) and a 2 s warm-up, --seconds are measured: streams that kept the frame rate (within one frame and 1%) with no frame dropped (QoS), fps, capture-to-sink latency, the instance\'s mean batch and GPU ms per batch (profile on one element) and per frame, the model\'s GPU busy % (batches times GPU ms per batch over the window), host CPU per stream (user and system, % of one core), queue submissions per frame (all the streams\' GPU work; the JSON also error scopes), objects (regions of interest) per frame out of the model element, the precision the model computed in (precision-used), a frame\'s mean host ms in each stage of the model elements (stage-ms: tensorize, batch gather, model submit, waiting for the GPU\'s result, decode/NMS, and the element\'s whole transform), RSS and wgnn\'s live GPU memory. With detect and track both in --task: what track costs a stream more at each N. With --gpus or --gpu: the streams spread round robin over those GPUs, one model instance on each, and each GPU\'s streams reported beside the total. Needs the gst feature'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "interop" -d 'Seed 002\'s interop experiment: conv2d [1,100,100,100], 3x3 100->100, then add + relu, in custom WGSL, through the CPU, through a rented buffer, and all in the graph'
complete -c wgnn-bench -n "__fish_wgnn_bench_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand adapters" -l gpu -d 'Show the adapter this `gpu` value picks (an index, or a piece of a name, driver, PCI bus id or vendor:device id) rather than the default one' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand adapters" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand adapters" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand tensor-cores" -l iterations -d 'Timed dispatches per variant, after two warm-ups' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand tensor-cores" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -l frames -d 'Frames per measured order' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -l work -d 'Multiply-adds per element in each dispatch of the stand-in work' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -l dispatches -d 'Dependent dispatches of the stand-in work per frame' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand queue-overlap" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand ops" -l iterations -d 'Timed dispatches per case, after 200 ms of warm-up (at least two)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand ops" -l filter -d 'Only cases whose name contains this' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand ops" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand ops" -l quick -d 'Shrink every shape (for software adapters and smoke tests)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand ops" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l model -d 'A model file to measure instead of the bundled models (repeatable)' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l batch -d 'Items per run, one measurement each (e.g. 1,8,32): a model whose batch axis is open (ONNX dim_param, TF.js) is built for that many; one whose file fixes its batch is refused unless it is that batch. Default: each model\'s own batch (1 where it is open)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l size -d 'Input size HxW for --model files that take any size (e.g. 540x960)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l iterations -d 'Profiled GPU inferences per model, after 200 ms of warm-up (at least two)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l cpu-iterations -d 'Timed CPU inferences per model (no warm-up)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l context -r -f -a "gpu\t''
cpu\t''
both\t''"
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l filter -d 'Only models whose name contains this' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l top -d 'Also list ms per op type and this many of the slowest kernels per model, each with its shapes, fusions and workgroups (GPU timestamps; on the CPU context, wall time per node); --json then lists every kernel in execution order too' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l save-io -d 'Write each model\'s input and GPU output (raw float32, NHWC) and a manifest.json into this folder, for benches/anchors/models_torch.py' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l precision -d 'What the models compute in: f32; f16 (float16 between layers, float32 inputs and outputs); auto (f16 where the context is a GPU with SHADER_F16 and the outputs stay within 1% RMS of f32 on a probe input; its build ms includes that probe)' -r -f -a "auto\t''
f32\t''
f16\t''"
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -l quick -d 'Shrink the super-resolution inputs and the iteration counts'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand models" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l frames -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l format -d 'Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l blur -d 'Background blur sigma in frame pixels (wgnnsegment\'s default)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l model -d 'Segmentation model (default: the bundled square selfie model)' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l precision -d 'What the model computes in: f32; f16; auto (f16 where the GPU has SHADER_F16 and the outputs stay within 1% RMS of f32)' -r -f -a "auto\t''
f32\t''
f16\t''"
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -l quick -d 'A 64x48 frame and at most 3 frames (for software adapters)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand pipeline" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l format -d 'Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l every -d 'Frames between reports' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l warmup -d 'Frames before the reference report (default: a fifth of --frames, at least --every: allocators and drivers settle over the first thousands of frames; a leak grows on after)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l tolerance -d 'How far the last report may be from the reference, in percent' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l blur -d 'Background blur sigma in frame pixels (wgnnsegment\'s default)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l model -d 'Segmentation model (default: the bundled square selfie model)' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l frames -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l quick -d 'A 64x48 frame, 40 frames, a report every 10 (smoke tests)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -l json -d 'One JSON object per line instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand soak" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l frames -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l format -d 'Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l model -d 'Detection model with a model-proc beside it (default: the bundled MediaPipe short-range face detector)' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -l quick -d 'A 320x180 frame and at most 3 frames (for software adapters)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand detect" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l frames -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l format -d 'Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -l quick -d 'A 64x48 frame and at most 3 frames (for software adapters)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand import" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l streams -d 'Stream counts, one run each in this process (e.g. 1,8,32,64)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l task -d 'The tasks, each run at every count (e.g. detect,track)' -r -f -a "segment\t'Selfie segmentation + background blur (wgnnsegment effect=blur)'
detect\t'Detection (faces, or --model\'s objects) + boxes drawn (wgnndetect ! wgnnoverlay)'
track\t'Detection, tracking, one line and one zone counted, boxes drawn (wgnndetect ! wgnntrack ! wgnnanalytics ! wgnnoverlay)'"
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l batch-size -d 'Frames per dispatch of the shared instance (default: the stream count, at most 64)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l max-batch-latency -d 'How long a partial batch waits for more frames, ms' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l seconds -d 'Seconds measured (after the warm-up)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l width -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l height -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l fps -d 'Frames per second of every source' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l format -d 'Frame format of the sources (GStreamer name): NV12, RGBA, ...' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l model -d 'The model (default: the bundled selfie model for segment, the MediaPipe short-range face detector for detect and track); for detect and track, any detector wgnndetect takes (an Ultralytics ONNX export needs no model-proc)' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l gpus -d 'Spread the streams round robin over the first N adapters of `wgnn-bench adapters`, one model instance on each' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l gpu -d 'Spread the streams over these adapters (comma-separated `gpu` values: indices, or pieces of a name or PCI bus id)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l precision -d 'What the model elements compute in (their precision): auto, f32 or f16; the table\'s prec column says what they used' -r -f -a "auto\t''
f32\t''
f16\t''"
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l video -d 'Each stream decodes this H.264 byte-stream file (Annex B, e.g. x264enc or openh264enc into h264parse) in a loop instead of repeating the bundled photo, so that the CPU column counts the decode' -r -F
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l decoder -d 'The GStreamer decoder of --video' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l frames-in-flight -d 'Frames each model element has submitted before it waits for the oldest one\'s result (its frames-in-flight, 1 to 16)' -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l queues -d 'A queue after wgnnupload and one before the sink, as live pipelines run: the sink\'s wait for each frame\'s running time plus the pipeline\'s latency then holds the queue\'s thread, not the one that uploads and infers'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand streams" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand interop" -l iterations -r
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand interop" -l json -d 'Print JSON instead of a table'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand interop" -l quick -d 'A 12x12x16 input'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand interop" -s h -l help -d 'Print help'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "adapters" -d 'List the GPU adapters found, in the order the elements\' `gpu` property and `streams --gpus` count in (index, name, backend, type, driver, PCI bus id, vendor:device id), and the one wgnn would use'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "tensor-cores" -d 'Ceilings of the tensor cores (cooperative matrices, 16x16x16 float16 into float32) through wgpu: products alone, and with operands loaded contiguously or with an NHWC tensor\'s row stride (GPU timestamps)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "queue-overlap" -d 'Whether a frame\'s upload copy overlaps the previous frame\'s compute work on wgpu\'s one queue when queued between that frame\'s first pass and the rest (stand-in work, wall ms per frame)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "ops" -d 'GPU time per operator (median of timestamped dispatches)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "models" -d 'Models end to end on the GPU (timestamped GPU ms per inference) and CPU contexts (wall ms): the bundled ones (selfie square 256x256, selfie landscape 144x256, ESRGAN-slim x2 at 960x540 and x4 at 480x270), or the files given with --model (ONNX, TFLite, TF.js)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "pipeline" -d 'Frames through upload -> tensorize -> selfie -> blur composite, kept on the GPU, against the copy path (read back and re-upload between stages)'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "soak" -d 'The zero-copy pipeline (as `pipeline`) for many frames, reporting RSS, wgpu\'s allocator report and wgnn\'s live objects every N frames; exits non-zero unless the last report is within the tolerance of the first one after the warm-up'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "detect" -d 'What wgnndetect ! wgnnoverlay do to each frame: upload, tensorize, detector, decode + threshold + compact on the GPU, the short list read back, NMS, boxes and labels drawn on the GPU'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "import" -d 'A frame in a DMA-BUF imported (no upload) against the same frame uploaded, then tensorized: host ms, bytes uploaded, tensors compared. The DMA-BUF comes from /dev/dma_heap/system, /dev/udmabuf or a memfd (which only lavapipe takes). Exits 1 when the device cannot import it (the line says why) or the tensors differ'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "streams" -d 'Live streams through wgnn\'s GStreamer elements in one process, every model element sharing one model instance (model-instance-id) and one device: for each task in --task and each count in --streams, that many pipelines of filesrc (the bundled astronaut photo) ! pngdec ! videoconvert ! videoscale ! imagefreeze is-live=true ! wgnnupload ! the task\'s elements ! video/x-raw(memory:WgpuTexture) ! fakesink sync=true qos=true max-lateness=20ms (with --queues: a queue after wgnnupload and one before the sink; with --video: multifilesrc loop=true ! h264parse ! the decoder ! videoconvert ! videoscale ! videorate instead of the photo). After every stream\'s first frames (at most 5 s past the first, which builds the model) and a 2 s warm-up, --seconds are measured: streams that kept the frame rate (within one frame and 1%) with no frame dropped (QoS), fps, capture-to-sink latency, the instance\'s mean batch and GPU ms per batch (profile on one element) and per frame, the model\'s GPU busy % (batches times GPU ms per batch over the window), host CPU per stream (user and system, % of one core), queue submissions per frame (all the streams\' GPU work; the JSON also error scopes), objects (regions of interest) per frame out of the model element, the precision the model computed in (precision-used), a frame\'s mean host ms in each stage of the model elements (stage-ms: tensorize, batch gather, model submit, waiting for the GPU\'s result, decode/NMS, and the element\'s whole transform), RSS and wgnn\'s live GPU memory. With detect and track both in --task: what track costs a stream more at each N. With --gpus or --gpu: the streams spread round robin over those GPUs, one model instance on each, and each GPU\'s streams reported beside the total. Needs the gst feature'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "interop" -d 'Seed 002\'s interop experiment: conv2d [1,100,100,100], 3x3 100->100, then add + relu, in custom WGSL, through the CPU, through a rented buffer, and all in the graph'
complete -c wgnn-bench -n "__fish_wgnn_bench_using_subcommand help; and not __fish_seen_subcommand_from adapters tensor-cores queue-overlap ops models pipeline soak detect import streams interop help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
