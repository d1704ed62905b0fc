#!/usr/bin/env python3
"""Partex's CPU runtime against ONNX Runtime, operator by operator, single-threaded: how one finds where
a model loses (a cliff is one row far above the others' ratio).

  PYTHON scripts/ort/op_profile.py MODEL [--cli build/bin/partex-cli] [--reps N] [--plan PLAN.json]
         [--dim NAME=V]... [--all]

PYTHON is the virtual environment's interpreter that scripts/ort/install.sh makes (it has onnxruntime
and onnx). Partex: `partex-cli schedule MODEL -p this-machine --algo single --param device=core0` (unless
--plan is given), then `partex-cli execute MODEL --plan PLAN --reps N --json`: per operator, the
median measured time (a fused kernel's time sits on its last operator). ONNX Runtime: one intra-op and
one inter-op thread, ORT_ENABLE_ALL, pinned to CPU 0, its own profiler (enable_profiling), the median
of each node's kernel time over the runs after the first five.

Matching: ONNX Runtime's optimised graph (saved through optimized_model_filepath) renames what it
rewrites. Each of its nodes is matched to the Partex kernel that produces the same tensor: one of the
node's outputs by name, or, for the NCHWc nodes, the node's name without "_nchwc" (the NCHWc transformer
names a node after the output it replaces), or else a Partex operator of the node's name (a node kept
whose output was renamed) or of its name's first part before "/" (a fusion, "Mul_43/QuickGeluFusion/"). ONNX Runtime nodes that produce no tensor of the model
(ReorderInput/ReorderOutput of the NCHWc layout) are listed apart, as are Partex kernels with no ONNX
Runtime counterpart (an operator ONNX Runtime removed, e.g. Dropout).

Prints one row per Partex kernel: its operators, Partex us, ONNX Runtime us (summed over the nodes
matched to it), the ratio, and ONNX Runtime's node names; then the totals. Rows below 1% of the total
are folded into one unless --all. Exit 2 on bad arguments or files, 3 when onnxruntime is missing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def die(code, msg):
    sys.stderr.write(f"op_profile.py: {msg}\n")
    sys.exit(code)


try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except Exception as e:  # ImportError, or a wheel that does not load here
    die(3, f"onnxruntime/onnx not importable by {sys.executable} (run scripts/ort/install.sh): {e}")

TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
         "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
         "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def partex_ops(args, tmp):
    plan = args.plan
    if not plan:
        plan = os.path.join(tmp, "core0.plan.json")
        cmd = [args.cli, "schedule", args.model, "-p", "this-machine", "--algo", "single", "--param",
               "device=core0", "-o", plan] + sum((["--dim", d] for d in args.dim), [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            die(2, f"partex-cli schedule failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    cmd = [args.cli, "execute", args.model, "--plan", plan, "--reps", str(args.reps), "--json"] + \
        sum((["--dim", d] for d in args.dim), [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        die(2, f"partex-cli execute failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    j = json.loads(r.stdout)
    if "outputs" not in (j["ops"][0] if j["ops"] else {"outputs": 1}):
        die(2, "this partex-cli's execute --json gives no per-operator outputs (build a newer one)")
    return j


def ort_times(args, tmp):
    os.sched_setaffinity(0, {0})
    ort.set_default_logger_severity(3)  # not the warning about saving an NCHWc-optimised model
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tmp, "ortprof")
    so.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
    try:
        s = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    except Exception as e:
        die(2, f"{args.model}: onnxruntime cannot load it: {str(e).strip().splitlines()[0]}")
    dims = {}
    for d in args.dim:
        k, _, v = d.partition("=")
        dims[k] = int(v)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
        t = TYPES.get(i.type, np.float32)
        feeds[i.name] = (rng.random(shape) * 2 - 1).astype(t) if np.issubdtype(t, np.floating) else np.zeros(shape, t)
    for _ in range(args.reps + 5):
        s.run(None, feeds)
    f = s.end_profiling()
    with open(f) as fh:
        events = json.load(fh)
    per = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per.setdefault(e["name"][: -len("_kernel_time")], []).append((e["dur"], e["args"].get("op_name", "")))
    times = {k: (statistics.median([d for d, _ in v[5:]] or [d for d, _ in v]), v[0][1]) for k, v in per.items()}
    opt = onnx.load(so.optimized_model_filepath, load_external_data=False)
    return times, opt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--cli", default=os.path.join(here, "..", "..", "build", "bin", "partex-cli"))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--plan", default="")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        die(2, f"{args.model}: no such file")
    if not os.access(args.cli, os.X_OK):
        die(2, f"{args.cli}: not an executable partex-cli (--cli)")
    if args.reps < 1:
        die(2, "--reps must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        px = partex_ops(args, tmp)
        times, opt = ort_times(args, tmp)
    ops = px["ops"]
    # Partex kernels: the operator whose slot runs each operator (a fused group's last one).
    index = {o["name"]: i for i, o in enumerate(ops)}
    runner = [index.get(o["fused_into"], i) if o.get("fused_into") else i for i, o in enumerate(ops)]
    producer = {}
    for i, o in enumerate(ops):
        for name in o["outputs"]:
            if name:
                producer[name] = runner[i]
    by_name = {o["name"]: runner[i] for i, o in enumerate(ops)}
    kernels = {}
    for i, o in enumerate(ops):
        k = kernels.setdefault(runner[i], {"ops": [], "partex": 0.0, "ort": 0.0, "ort_nodes": []})
        k["ops"].append(o)
        k["partex"] += o["measured_us"]
    unmatched = []
    for node in opt.graph.node:
        if node.name not in times:
            continue
        us, _ = times[node.name]
        cands = list(node.output)
        if node.name.endswith("_nchwc"):
            cands.insert(0, node.name[: -len("_nchwc")])
        hit = next((producer[c] for c in cands if c in producer), None)
        # A node ONNX Runtime kept, its output renamed (NCHWc), or a fusion named after its first node
        # ("Mul_43/QuickGeluFusion/": x * Sigmoid(x)).
        for name in (node.name, node.name.split("/")[0]):
            if hit is None and name in by_name:
                hit = by_name[name]
        label = f"{node.name}({node.op_type})"
        if hit is None:
            unmatched.append((label, us))
        else:
            kernels[hit]["ort"] += us
            kernels[hit]["ort_nodes"].append(label)
    total_px = sum(k["partex"] for k in kernels.values())
    total_ort = sum(k["ort"] for k in kernels.values()) + sum(u for _, u in unmatched)
    print(f"# {os.path.basename(args.model)}: Partex {px['backend']} (plan {px['plan']}, median of {args.reps}) "
          f"against ONNX Runtime {ort.__version__} (1 thread, CPU 0, profiler); times in us")
    print(f"{'partex kernel':44s} {'partex':>9s} {'ort':>9s} {'ratio':>6s}  ort nodes")
    folded = [0.0, 0.0, 0]
    for r in sorted(kernels):
        k = kernels[r]
        if not args.all and max(k["partex"], k["ort"]) < 0.01 * max(total_px, total_ort):
            folded[0] += k["partex"]
            folded[1] += k["ort"]
            folded[2] += 1
            continue
        last = ops[r]
        name = last["name"] + "(" + "+".join(o["op_type"] for o in k["ops"]) + ")"
        ratio = f"{k['partex'] / k['ort']:6.2f}" if k["ort"] > 0 else "     -"
        print(f"{name[:44]:44s} {k['partex']:9.1f} {k['ort']:9.1f} {ratio}  {' '.join(k['ort_nodes']) or '(none: removed by ORT)'}")
    if folded[2]:
        print(f"{'(' + str(folded[2]) + ' kernels under 1% each)':44s} {folded[0]:9.1f} {folded[1]:9.1f}")
    for label, us in unmatched:
        print(f"{'(ORT only) ' + label:44s} {'':9s} {us:9.1f}")
    print(f"{'total of the operators':44s} {total_px:9.1f} {total_ort:9.1f} "
          f"{total_px / total_ort if total_ort else 0:6.2f}")
    print(f"Partex measured makespan {px['measured_makespan_us']:.1f} us; outputs match: {px['outputs_match']}")


if __name__ == "__main__":
    main()
