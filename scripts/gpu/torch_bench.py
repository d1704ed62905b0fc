#!/usr/bin/env python3
"""PyTorch's batch-1 float32 latency of six torchvision CNNs on the GPU: the reference the CUDA
backend's bench_gpu is compared with (issue 25).

For each model (random weights, eval(), torch.no_grad, input 1x3x224x224) three modes:
  eager_fp32  eager, cudnn.benchmark on, TF32 off for matmuls and convolutions
  eager_tf32  the same with TF32 on
  graph_fp32  the eager_fp32 settings, replayed from one CUDA graph captured after a warm-up on a
              side stream (the recipe of PyTorch's "CUDA Graphs" notes, torch.cuda.graph)
Each mode warms up (>= 20 iterations, cudnn.benchmark tunes during these), then times --reps
iterations one by one: CUDA events around the call and a synchronize after it, so each number is
one inference's latency, launch overhead included. Reported: median, p10 and p90 in milliseconds.

  torch_bench.py --out FILE [--reps N] [--models a,b] [--cpu-dry-run]

Exits 2 when no CUDA device is visible. --cpu-dry-run runs 2 iterations of each eager mode on the
CPU (timed with perf_counter, no CUDA graph) to check the code path on a machine without a GPU.
"""

import argparse
import datetime
import json
import sys
import time

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:  # a python3 without PyTorch: say so instead of a traceback
    print(f"torch_bench: {e}: run it with the python3 that holds torch and torchvision", file=sys.stderr)
    sys.exit(2)

WARMUP = 20
MODELS = ["resnet50", "densenet121", "squeezenet1_1", "googlenet", "shufflenet_v2_x1_0", "alexnet"]
NOTES = {
    "shufflenet_v2_x1_0": "torchvision has ShuffleNet v2 only, not v1 (the ONNX zoo's shufflenet is v1)",
    "googlenet": "aux_logits=False, init_weights=True",
}


def build(name):
    """The torchvision architecture with random weights (weights=None)."""
    ctor = getattr(torchvision.models, name)
    if name == "googlenet":
        return ctor(weights=None, aux_logits=False, init_weights=True)
    return ctor(weights=None)


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def stats(ms):
    a = np.asarray(ms, dtype=np.float64)
    return {"median": float(np.median(a)), "p10": float(np.percentile(a, 10)),
            "p90": float(np.percentile(a, 90))}


def time_cuda(fn, reps, warmup):
    """Latency of fn() in ms, one CUDA-event pair per iteration, synchronised after each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
    return ms


def time_cpu(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1e3)
    return ms


def capture_graph(model, x, warmup):
    """A CUDA graph of model(x) and its static output; warm-up on a side stream before capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = model(x)
    return graph, y


def bench_model(name, dev, reps, warmup, dry):
    torch.manual_seed(0)
    model = build(name).to(dev).eval()
    x = torch.randn(1, 3, 224, 224, device=dev)
    timer = time_cpu if dry else time_cuda
    rec = {"params": sum(p.numel() for p in model.parameters())}
    if name in NOTES:
        rec["note"] = NOTES[name]
    with torch.no_grad():
        set_tf32(False)
        s = stats(timer(lambda: model(x), reps, warmup))
        ref = model(x).float()
        rec.update({"eager_fp32_ms": s["median"], "eager_fp32_p10_ms": s["p10"], "eager_fp32_p90_ms": s["p90"]})

        set_tf32(True)
        s = stats(timer(lambda: model(x), reps, warmup))
        rec["tf32_max_abs_diff"] = float((model(x).float() - ref).abs().max())
        rec.update({"eager_tf32_ms": s["median"], "eager_tf32_p10_ms": s["p10"], "eager_tf32_p90_ms": s["p90"]})
        set_tf32(False)

        if dry:
            rec.update({"graph_fp32_ms": None, "graph_fp32_p10_ms": None, "graph_fp32_p90_ms": None})
        else:
            graph, y = capture_graph(model, x, warmup)
            s = stats(timer(graph.replay, reps, warmup))
            rec["graph_max_abs_diff"] = float((y.float() - ref).abs().max())
            rec.update({"graph_fp32_ms": s["median"], "graph_fp32_p10_ms": s["p10"], "graph_fp32_p90_ms": s["p90"]})
            del graph, y
    rec["output_shape"] = list(ref.shape)
    del model, x, ref
    if not dry:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--reps", type=int, default=200, help="timed iterations per mode (default 200)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated torchvision names")
    ap.add_argument("--cpu-dry-run", action="store_true", help="2 iterations of each eager mode on the CPU")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if not hasattr(torchvision.models, n):
            print(f"torch_bench: torchvision has no model '{n}'", file=sys.stderr)
            return 2

    dry = args.cpu_dry_run
    if dry:
        dev, reps, warmup, device_name = torch.device("cpu"), 2, 1, "cpu (dry run)"
    else:
        if not torch.cuda.is_available():
            print("torch_bench: no CUDA device visible to PyTorch (torch.cuda.is_available() is false); "
                  "run it on the GPU machine, or pass --cpu-dry-run to check the code path", file=sys.stderr)
            return 2
        dev, reps, warmup = torch.device("cuda"), args.reps, WARMUP
        device_name = torch.cuda.get_device_name(0)
    torch.backends.cudnn.benchmark = True

    result = {
        "device": device_name,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "batch": 1, "dtype": "float32", "input": [1, 3, 224, 224], "weights": "random (weights=None)",
        "reps": reps, "warmup": warmup,
        "timing": ("CUDA events around each iteration, synchronised after each: latency with launch "
                   "overhead; ms; median and p10/p90") if not dry else "perf_counter on the CPU (dry run)",
        "modes": {"eager_fp32": "cudnn.benchmark, TF32 off", "eager_tf32": "cudnn.benchmark, TF32 on",
                  "graph_fp32": "CUDA graph replay, cudnn.benchmark, TF32 off"},
        "models": {},
    }
    print(f"torch_bench: {device_name}, torch {result['torch']}, cudnn {result['cudnn']}, reps {reps}")
    t0 = time.time()
    for n in names:
        t = time.time()
        result["models"][n] = bench_model(n, dev, reps, warmup, dry)
        print(f"  {n}: {time.time() - t:.1f} s", flush=True)
    result["seconds"] = round(time.time() - t0, 1)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)

    fmt = lambda v: "-" if v is None else f"{v:.3f}"
    print(f"\n{'model':<20} {'eager fp32':>11} {'eager tf32':>11} {'graph fp32':>11}   (median ms)")
    for n, r in result["models"].items():
        print(f"{n:<20} {fmt(r['eager_fp32_ms']):>11} {fmt(r['eager_tf32_ms']):>11} {fmt(r['graph_fp32_ms']):>11}")
    print(f"wrote {args.out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
