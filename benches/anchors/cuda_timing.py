"""What the PyTorch anchors share: GPU time of a callable from CUDA events."""
import statistics

import torch


def cuda_ms(fn, warmup=10, iters=50):
    """Median and minimum ms of `fn` on the GPU (CUDA events around each
    call, after `warmup` calls)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), min(times)
