#!/usr/bin/env python3
"""ONNX Runtime side of bench_ops (bench/ops/main.cpp): times every single-operator model of a list in
one process, single-threaded (run it under `taskset -c 0`), and writes "ID<TAB>median microseconds" (or
"ID<TAB>error text") per model.

Usage: bench_ops.py MODELS.txt RESULTS.txt [--reps N] [--budget SECONDS]
MODELS.txt: one "ID<TAB>PATH" per line.

Activations are the models' graph inputs (random data here), weights and constants their initializers,
so graph optimisation (ORT_ENABLE_ALL, as a deployment uses) cannot fold the operator into a constant.
Inputs are bound once with IOBinding so that the Python side adds as little as possible per run.
"""
import sys
import time

import numpy as np
import onnxruntime as ort

TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(bool)": np.bool_,
}


def make_input(info, rng):
    shape = [d if isinstance(d, int) else 1 for d in info.shape]
    dt = TYPES.get(info.type)
    if dt is None:
        raise ValueError("input type " + info.type)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.floating):
        return rng.standard_normal(shape).astype(dt)
    # Integer activations: ones (valid indices for Gather*, Scatter*, OneHot on these shapes, and no
    # integer division by zero, which ONNX Runtime refuses).
    return np.ones(shape, dtype=dt)


def time_model(path, reps, budget):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    binding = sess.io_binding()
    for info in sess.get_inputs():
        binding.bind_cpu_input(info.name, make_input(info, rng))
    for o in sess.get_outputs():
        binding.bind_output(o.name)
    samples = []
    start = time.perf_counter()
    r = 0
    while True:
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        t1 = time.perf_counter()
        if r >= 2:
            samples.append((t1 - t0) * 1e6)
        r += 1
        if len(samples) >= reps or (len(samples) >= 3 and t1 - start > budget):
            break
    samples.sort()
    return samples[len(samples) // 2]


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    reps, budget = 20, 0.3
    if "--reps" in args:
        reps = int(args[args.index("--reps") + 1])
    if "--budget" in args:
        budget = float(args[args.index("--budget") + 1])
    with open(args[0]) as f:
        models = [line.rstrip("\n").split("\t", 1) for line in f if "\t" in line]
    with open(args[1], "w") as out:
        for mid, path in models:
            try:
                us = time_model(path, reps, budget)
                out.write("%s\t%.3f\n" % (mid, us))
            except Exception as e:  # one line per model: the bench reports it in that row
                out.write("%s\t%s\n" % (mid, " ".join(str(e).split())[:200]))
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
