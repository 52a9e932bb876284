"""PyTorch's time on this machine's GPU for what bench/cuda.ts measures of ours, so that a
ratio is taken in one run: ResNet-50's last 3x3 conv (7x7x512 -> 512,
padding 1, + bias + relu, batch 1) through cuDNN, and resnet-18 (torchvision's, batch 1,
224x224, random weights) in eager mode.

fp32 throughout with TF32 off (our kernels are fp32 FMA; TF32 rounds the inputs of the
products to 10-bit mantissas), cuDNN's autotuner on (torch.backends.cudnn.benchmark).

  python3 bench/torch-reference.py [--iters 200]

Prints one JSON object:
  conv_ms            mean device time of conv2d + bias + relu over `iters` queued calls
                     (CUDA events around the whole loop: launch gaps hidden when the GPU
                     is the bottleneck)
  resnet18_device_ms the same for resnet-18's forward on an input already on the GPU
  resnet18_host_ms   median host time of one call as tt_run makes it: the input copied
                     from host memory, the forward, the logits copied back (synchronised)
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def device_ms(fn, iters):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "tf32": False}

    with torch.no_grad():
        x = torch.rand(1, 512, 7, 7, device=dev).to(memory_format=torch.channels_last)
        w = (torch.rand(512, 512, 3, 3, device=dev) - 0.5).to(memory_format=torch.channels_last)
        b = torch.rand(512, device=dev)
        out["conv_ms"] = device_ms(lambda: F.relu(F.conv2d(x, w, b, padding=1)), args.iters)

        import torchvision

        model = torchvision.models.resnet18(weights=None).eval().to(dev)
        xd = torch.rand(1, 3, 224, 224, device=dev)
        out["resnet18_device_ms"] = device_ms(lambda: model(xd), args.iters)
        xh = torch.rand(1, 3, 224, 224).pin_memory()
        runs = []
        for i in range(args.iters + 20):
            t0 = time.perf_counter()
            model(xh.to(dev, non_blocking=True)).cpu()
            if i >= 20:
                runs.append((time.perf_counter() - t0) * 1e3)
        out["resnet18_host_ms"] = statistics.median(runs)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
