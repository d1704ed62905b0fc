#!/usr/bin/env python3
"""Runs an ONNX model with ONNX Runtime (the onnxruntime wheel from PyPI, CPU execution provider): the
yardstick of Partex's CPU runtime, for benchmarks and output checks only (the product never depends on it).

  PYTHON scripts/ort/run.py MODEL [--input NAME=FILE.npy]... [--dim NAME=V | --dim INPUT:AXIS=V]...
         [--seed S] [--outputs DIR] [--threads N] [--reps N] [--warmup N]
         [--opt all|extended|basic|disabled]

PYTHON is the virtual environment's interpreter that scripts/ort/install.sh makes
(~/.local/share/partex/ort-venv/bin/python, or $PARTEX_ORT_VENV/bin/python).
Inputs: .npy files (C or Fortran order, any dtype NumPy reads); inputs not given are seeded random
floats in [-1, 1) (integers 0, booleans false) with their symbolic dims bound by --dim, by the dim's
name or, as partex-cli also accepts, by INPUT:AXIS (which wins over the name).
Session: intra_op_num_threads = --threads (default 1), inter_op_num_threads = 1, sequential execution,
graph optimisation level --opt (default all = ORT_ENABLE_ALL).
Prints one JSON object: model, threads, runs_ms, median_ms (the upper median of the timed runs),
peak_rss_bytes (this process: interpreter, NumPy and ONNX Runtime), outputs (name -> dims).
--outputs DIR writes every output as DIR/NAME.npy (characters outside [A-Za-z0-9_.-] become '_').
Exit 3 when onnxruntime (or NumPy) cannot be imported, 2 on bad arguments, files or models.
"""
import json
import os
import re
import resource
import sys
import time


def die(code, msg):
    sys.stderr.write(f"ort/run.py: {msg}\n")
    sys.exit(code)


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ONNX Runtime first, before the arguments: without a model the script exits 3 when it is missing and
# 2 ("no model given") when it is there, which is how bench_ort and tst_ort_outputs probe for it.
try:
    import numpy as np
    import onnxruntime as ort
except Exception as e:  # ImportError, or a wheel that does not load on this machine
    die(3, f"onnxruntime is not importable by {sys.executable} (run scripts/ort/install.sh): {first_line(e)}")

OPT_LEVELS = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}

# ONNX Runtime's input type strings -> NumPy dtypes of the random inputs.
ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16, "tensor(int8)": np.int8,
    "tensor(uint64)": np.uint64, "tensor(uint32)": np.uint32, "tensor(uint16)": np.uint16,
    "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_,
}


def parse_int(option, text, minimum=None):
    try:
        v = int(text, 10)
    except ValueError:
        die(2, f"{option} '{text}': not an integer")
    if minimum is not None and v < minimum:
        die(2, f"{option} '{text}': must be at least {minimum}")
    return v


def parse_args(argv):
    opt = {"inputs": {}, "dims": {}, "seed": 1, "outputs": None, "threads": 1, "reps": 1, "warmup": 0,
           "opt": "all", "model": None}
    i = 0
    while i < len(argv):
        a = argv[i]

        def value():
            nonlocal i
            if i + 1 >= len(argv):
                die(2, f"{a} needs a value")
            i += 1
            return argv[i]

        if a == "--input":
            spec = value()
            name, eq, path = spec.partition("=")
            if not eq or not name or not path:
                die(2, f"--input '{spec}': expected NAME=FILE.npy")
            if name in opt["inputs"]:
                die(2, f"--input '{spec}': input '{name}' is given twice")
            opt["inputs"][name] = path
        elif a == "--dim":
            spec = value()
            key, eq, v = spec.rpartition("=")
            if not eq or not key:
                die(2, f"--dim '{spec}': expected NAME=VALUE or INPUT:AXIS=VALUE")
            opt["dims"][key] = parse_int("--dim", v, 1)
        elif a == "--seed":
            opt["seed"] = parse_int(a, value(), 0)
        elif a == "--outputs":
            opt["outputs"] = value()
        elif a == "--threads":
            opt["threads"] = parse_int(a, value(), 0)  # 0: ONNX Runtime's default (one per core)
        elif a == "--reps":
            opt["reps"] = max(1, parse_int(a, value(), 0))
        elif a == "--warmup":
            opt["warmup"] = parse_int(a, value(), 0)
        elif a == "--opt":
            opt["opt"] = value()
            if opt["opt"] not in OPT_LEVELS:
                die(2, f"--opt '{opt['opt']}': expected one of {', '.join(OPT_LEVELS)}")
        elif a.startswith("--"):
            die(2, f"unknown option {a}")
        elif opt["model"] is not None:
            die(2, f"two models given: {opt['model']} and {a}")
        else:
            opt["model"] = a
        i += 1
    if opt["model"] is None:
        die(2, "no model given")
    return opt


def read_npy(path):
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as e:
        die(2, f"{path}: {first_line(e)}")
    if not isinstance(a, np.ndarray):
        die(2, f"{path}: not a .npy file")
    return np.ascontiguousarray(a)


def random_input(meta, index, opt):
    shape = []
    for axis, d in enumerate(meta.shape):
        if isinstance(d, int) and d >= 0:
            shape.append(d)
            continue
        by_axis = f"{meta.name}:{axis}"
        if by_axis in opt["dims"]:
            shape.append(opt["dims"][by_axis])
        elif isinstance(d, str) and d in opt["dims"]:
            shape.append(opt["dims"][d])
        else:
            die(2, f"input {meta.name} axis {axis} ({d if d is not None else 'unknown'}) needs --dim")
    dtype = ORT_TYPES.get(meta.type)
    if dtype is None:
        die(2, f"input {meta.name}: no random {meta.type} inputs; give --input")
    if np.issubdtype(dtype, np.floating):
        rng = np.random.default_rng(opt["seed"] + index)
        return (rng.random(shape, dtype=np.float64) * 2 - 1).astype(dtype)
    return np.zeros(shape, dtype=dtype)


def write_npy(path, array):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(array), allow_pickle=False)
    os.replace(tmp, path)


def main():
    opt = parse_args(sys.argv[1:])
    model = opt["model"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = opt["threads"]
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = OPT_LEVELS[opt["opt"]]
    so.log_severity_level = 3  # errors only: warnings would mix with the caller's stderr
    try:
        session = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    except Exception as e:
        die(2, f"{model}: {first_line(e)}")
    metas = session.get_inputs()
    names = [m.name for m in metas]
    for k in opt["inputs"]:
        if k not in names:
            die(2, f"the model has no input {k} (inputs: {', '.join(names)})")
    feeds = {}
    for idx, m in enumerate(metas):
        feeds[m.name] = read_npy(opt["inputs"][m.name]) if m.name in opt["inputs"] else random_input(m, idx, opt)
    output_names = [o.name for o in session.get_outputs()]
    try:
        out = None
        for _ in range(opt["warmup"]):
            out = session.run(output_names, feeds)
        runs = []
        for _ in range(opt["reps"]):
            t0 = time.perf_counter_ns()
            out = session.run(output_names, feeds)
            runs.append((time.perf_counter_ns() - t0) / 1e6)
    except Exception as e:
        die(2, f"{model}: {first_line(e)}")
    outputs = {name: [int(d) for d in np.shape(t)] for name, t in zip(output_names, out)}
    if opt["outputs"]:
        try:
            os.makedirs(opt["outputs"], exist_ok=True)
            for name, t in zip(output_names, out):
                write_npy(os.path.join(opt["outputs"], re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".npy"),
                          np.asarray(t))
        except OSError as e:
            die(2, f"{opt['outputs']}: {first_line(e)}")
    ordered = sorted(runs)
    print(json.dumps({
        "model": os.path.basename(model), "threads": opt["threads"], "runs_ms": runs,
        "median_ms": ordered[len(ordered) // 2],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "outputs": outputs,
    }, separators=(",", ":")))


if __name__ == "__main__":
    main()
