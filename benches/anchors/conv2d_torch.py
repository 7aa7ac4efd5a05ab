#!/usr/bin/env python3
"""PyTorch/cuDNN anchor for `wgnn-bench ops`: conv2d 3x3, 64->64 channels,
512x512, batch 1, padding 1, with bias, in fp32 (TF32 off), TF32 and fp16,
NCHW and channels-last. Times are CUDA-event medians over many runs.

Run on the device machine beside `wgnn-bench ops`, so that the ratio is taken
on one GPU in one session."""
import statistics

import torch


def bench(fn, warmup=10, runs=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


def main():
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}")
    torch.backends.cudnn.benchmark = True
    h = w = 512
    flops = 2 * h * w * 64 * 64 * 9
    print(f"{'case':<34} {'median ms':>10} {'min ms':>10} {'GFLOP/s':>10}")
    for name, dtype, tf32, channels_last in [
        ("conv2d 3x3 64->64 fp32 nchw", torch.float32, False, False),
        ("conv2d 3x3 64->64 fp32 nhwc", torch.float32, False, True),
        ("conv2d 3x3 64->64 tf32 nchw", torch.float32, True, False),
        ("conv2d 3x3 64->64 fp16 nchw", torch.float16, False, False),
        ("conv2d 3x3 64->64 fp16 nhwc", torch.float16, False, True),
    ]:
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=True).to(dev, dtype)
        x = torch.randn(1, 64, h, w, device=dev, dtype=dtype)
        if channels_last:
            conv = conv.to(memory_format=torch.channels_last)
            x = x.to(memory_format=torch.channels_last)
        with torch.no_grad():
            med, mn = bench(lambda: conv(x))
        print(f"{name:<34} {med:>10.4f} {mn:>10.4f} {flops / med / 1e6:>10.0f}")


if __name__ == "__main__":
    main()
