#!/usr/bin/env python3
"""A stream of inferences through ONNX Runtime (CPU execution provider): the yardstick of
`partex-cli execute --stream N` (issue 29, item 4). Benchmarks only; the product never depends on it.

  PYTHON scripts/ort/stream.py MODEL --config one2|two1 [--n N] [--warmup W] [--seed S] [--dim NAME=V]...

  one2: one session, intra_op_num_threads = 2, one thread submitting the N inferences one after another
        (each uses both cores).
  two1: two sessions, intra_op_num_threads = 1 each, run side by side by two threads pinned to CPUs 0
        and 1, taking the next inference of the stream as soon as they finish one (two in flight).
Both: inter_op_num_threads = 1, sequential execution, ORT_ENABLE_ALL; W untimed runs per session first.
Prints one JSON object: config, inferences, period_us (median gap between consecutive completions after
the first `skip` = 3 completions), steady_throughput_per_s (completions after those over the time from
the 3rd to the last one), latency_median_us / latency_p90_us (end - start of the inferences after them),
wall_us, load_average (1 minute, before the stream). The same statistics as execute --stream's.
Exit 3 when onnxruntime cannot be imported, 2 on bad arguments or models.
"""
import json
import math
import os
import sys
import threading
import time


def die(code, msg):
    sys.stderr.write(f"ort/stream.py: {msg}\n")
    sys.exit(code)


try:
    import numpy as np
    import onnxruntime as ort
except Exception as e:  # ImportError, or a wheel that does not load here
    die(3, f"onnxruntime is not importable by {sys.executable} (run scripts/ort/install.sh): {e}")

SKIP = 3
TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
         "tensor(int32)": np.int32, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def parse(argv):
    opt = {"model": None, "config": None, "n": 200, "warmup": 2, "seed": 1, "dims": {}}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--config", "--n", "--warmup", "--seed", "--dim"):
            if i + 1 >= len(argv):
                die(2, f"{a} needs a value")
            v = argv[i + 1]
            i += 1
            if a == "--config":
                if v not in ("one2", "two1"):
                    die(2, f"--config '{v}': expected one2 or two1")
                opt["config"] = v
            elif a == "--dim":
                key, eq, val = v.rpartition("=")
                if not eq or not key or not val.isdigit():
                    die(2, f"--dim '{v}': expected NAME=VALUE")
                opt["dims"][key] = int(val)
            else:
                if not v.isdigit() or (a == "--n" and int(v) < 1):
                    die(2, f"{a} '{v}': expected a whole number" + (" >= 1" if a == "--n" else ""))
                opt[a[2:]] = int(v)
        elif a.startswith("--"):
            die(2, f"unknown option {a}")
        elif opt["model"]:
            die(2, f"two models given: {opt['model']} and {a}")
        else:
            opt["model"] = a
        i += 1
    if not opt["model"] or not opt["config"]:
        die(2, "usage: stream.py MODEL --config one2|two1 [--n N] [--warmup W] [--seed S] [--dim NAME=V]")
    return opt


def session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    try:
        return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    except Exception as e:
        die(2, f"{model}: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}")


def feeds_of(sess, opt):
    feeds = {}
    rng = np.random.default_rng(opt["seed"])
    for m in sess.get_inputs():
        shape = []
        for axis, d in enumerate(m.shape):
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif f"{m.name}:{axis}" in opt["dims"]:
                shape.append(opt["dims"][f"{m.name}:{axis}"])
            elif isinstance(d, str) and d in opt["dims"]:
                shape.append(opt["dims"][d])
            else:
                die(2, f"input {m.name} axis {axis} ({d}) needs --dim")
        dtype = TYPES.get(m.type)
        if dtype is None:
            die(2, f"input {m.name}: no random {m.type} inputs")
        feeds[m.name] = ((rng.random(shape) * 2 - 1).astype(dtype) if np.issubdtype(dtype, np.floating)
                         else np.zeros(shape, dtype=dtype))
    return feeds


def stats(starts, ends):
    n = len(ends)
    skip = min(SKIP, max(0, n - 2))
    done = sorted(ends)
    gaps = sorted(done[j] - done[j - 1] for j in range(skip + 1, n))
    lat = sorted(ends[i] - starts[i] for i in range(n) if ends[i] >= done[skip])

    def median(v):
        if not v:
            return 0.0
        k = len(v)
        return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])

    span = done[-1] - done[skip]
    period = median(gaps) if gaps else median(lat)
    return {
        "period_us": period,
        "throughput_per_s": 1e6 / period if period > 0 else 0.0,
        "steady_throughput_per_s": (n - 1 - skip) * 1e6 / span if span > 0 else 0.0,
        "latency_median_us": median(lat),
        "latency_p90_us": lat[max(1, math.ceil(0.9 * len(lat))) - 1] if lat else 0.0,
        "wall_us": done[-1] - min(starts),
    }


def main():
    opt = parse(sys.argv[1:])
    n = opt["n"]
    load = os.getloadavg()[0]
    starts = [0.0] * n
    ends = [0.0] * n
    if opt["config"] == "one2":
        s = session(opt["model"], 2)
        feeds = feeds_of(s, opt)
        names = [o.name for o in s.get_outputs()]
        for _ in range(opt["warmup"]):
            s.run(names, feeds)
        t0 = time.perf_counter_ns()
        for i in range(n):
            starts[i] = (time.perf_counter_ns() - t0) / 1e3
            s.run(names, feeds)
            ends[i] = (time.perf_counter_ns() - t0) / 1e3
    else:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            die(2, "two1 needs two CPUs")
        sessions = [session(opt["model"], 1) for _ in range(2)]
        feeds = feeds_of(sessions[0], opt)
        names = [o.name for o in sessions[0].get_outputs()]
        lock = threading.Lock()
        nxt = [0]
        ready = threading.Barrier(3)
        t0 = [0]
        errors = []

        def worker(k):
            try:
                os.sched_setaffinity(0, {cpus[k]})  # 0: the calling thread, on Linux
                for _ in range(opt["warmup"]):
                    sessions[k].run(names, feeds)
                ready.wait()
                ready.wait()  # the clock has started
                while True:
                    with lock:
                        i = nxt[0]
                        nxt[0] += 1
                        if i < n:
                            starts[i] = (time.perf_counter_ns() - t0[0]) / 1e3
                    if i >= n:
                        return
                    sessions[k].run(names, feeds)
                    ends[i] = (time.perf_counter_ns() - t0[0]) / 1e3
            except Exception as e:  # reported after the join
                errors.append(str(e))
                ready.abort()

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        for th in threads:
            th.start()
        try:
            ready.wait()
            t0[0] = time.perf_counter_ns()
            ready.wait()
        except threading.BrokenBarrierError:
            pass
        for th in threads:
            th.join()
        if errors:
            die(2, f"{opt['model']}: {errors[0]}")
    out = {"model": os.path.basename(opt["model"]), "config": opt["config"], "inferences": n,
           "ort_version": ort.__version__, "load_average": load}
    out.update(stats(starts, ends))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
