#!/usr/bin/env python3
"""Runs every model of the public suite (scripts/models/fetch_suite.sh) on Partex's CPU runtime on one
core and on ONNX Runtime with one thread on the same core, on the same inputs, and reports per model:
operators, whether Partex imports and executes it (the error if not), the largest relative difference
of the outputs, both times, and Partex's slowest operators where it is more than 1.25x ONNX Runtime.
A diagnostic for finding what breaks, not the benchmark: bench_ort --suite DIR is that.

Needs the ONNX Runtime venv's python (onnxruntime, onnx, numpy):
  ~/.local/share/partex/ort-venv/bin/python scripts/models/run_suite.py [--suite DIR] [--cli PATH]
      [--models a,b] [--reps 9] [--warmup 2] [--work DIR] [--json FILE] [--markdown FILE]

Per model, in --work DIR/NAME: in/*.npy (the inputs, seeded), ort/*.npy and partex/*.npy (the outputs),
plan.json, execute.json. Inputs follow the manifest: `dims` bind the symbolic sizes; `input_files`
(written by fetch_suite.sh from suite.json's `inputs`) feed the inputs where random values would be
meaningless; the other inputs are uniform in [-1, 1).
Relative difference of an element: |partex - ort| / max(|partex|, |ort|, max |ort| over the output),
the rule execute's own output check uses; the suite's bar is 1e-4 for float32. Beside it, the same
measure between ONNX Runtime with and without its graph optimisations: where that is large too, the
output is ill-conditioned on these inputs (a sigmoid deep in saturation), not wrongly computed.
Partex: partex-cli schedule MODEL -p this-machine --algo single --param device=core0, then
partex-cli execute with that plan. ONNX Runtime: intra- and inter-op threads 1, sequential, pinned to
CPU 0, default graph optimisations.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

ONNX_TO_NP = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32, onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.BOOL: np.bool_,
}


def safe_name(name):
    """execute --outputs' file naming: characters outside [A-Za-z0-9_.-] become _."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def parse_dims(dims):
    named, axes = {}, {}
    for d in dims:
        key, _, value = d.rpartition("=")
        m = re.fullmatch(r"(.+):(\d+)", key)
        if m:
            axes[(m.group(1), int(m.group(2)))] = int(value)
        else:
            named[key] = int(value)
    return named, axes


def model_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def make_inputs(model, entry, folder, seed, suite):
    named, axes = parse_dims(entry.get("dims", []))
    rules = entry.get("inputs", {})
    rng = np.random.default_rng(seed)
    feeds = {}
    os.makedirs(folder, exist_ok=True)
    for k, vi in enumerate(model_inputs(model)):
        t = vi.type.tensor_type
        shape = []
        for ax, d in enumerate(t.shape.dim):
            if (vi.name, ax) in axes:
                shape.append(axes[(vi.name, ax)])
            elif d.HasField("dim_value") and d.dim_value > 0:
                shape.append(d.dim_value)
            elif d.dim_param and d.dim_param in named:
                shape.append(named[d.dim_param])
            else:
                raise ValueError("input %s axis %d is not bound by the manifest's dims" % (vi.name, ax))
        dt = ONNX_TO_NP.get(t.elem_type)
        if dt is None:
            raise ValueError("input %s: dtype %d not handled" % (vi.name, t.elem_type))
        rule = rules.get(vi.name, {})
        given = entry.get("input_files", {}).get(vi.name)
        if given:
            arr = np.load(os.path.join(suite, given))
            if list(arr.shape) != shape or arr.dtype != dt:
                raise ValueError("%s: %s %s, the model wants %s %s" % (given, arr.dtype, list(arr.shape),
                                                                        np.dtype(dt), shape))
        elif "value" in rule:
            arr = np.full(shape, rule["value"], dtype=dt)
        elif "int_range" in rule:
            lo, hi = rule["int_range"]
            arr = rng.integers(lo, hi, size=shape).astype(dt)
        elif np.issubdtype(dt, np.floating):
            arr = rng.uniform(-1.0, 1.0, size=shape).astype(dt)
        elif dt == np.bool_:
            arr = np.ones(shape, dtype=dt)
        else:
            arr = rng.integers(0, 2, size=shape).astype(dt)
        feeds[vi.name] = arr
        np.save(os.path.join(folder, "%d.npy" % k), arr)
    return feeds


def run_ort(path, feeds, outdir, reps, warmup):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    all_cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        for _ in range(warmup):
            outs = sess.run(None, feeds)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            outs = sess.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
    finally:
        os.sched_setaffinity(0, all_cpus)
    os.makedirs(outdir, exist_ok=True)
    for n, o in zip(names, outs):
        np.save(os.path.join(outdir, safe_name(n) + ".npy"), np.asarray(o))
    return statistics.median(times), dict(zip(names, outs))


def ort_unoptimised(path, feeds):
    """ONNX Runtime's outputs with its graph optimisations off: how far ORT moves from itself, the
    floor under which a difference says more about the model's conditioning than about a kernel."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def run_cli(args, timeout):
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    return r, None


def rel_diff(ref, got):
    ref = np.asarray(ref)
    got = np.asarray(got)
    if ref.shape != got.shape:
        return float("inf"), "shape %s, ORT %s" % (list(got.shape), list(ref.shape))
    if not np.issubdtype(ref.dtype, np.floating):
        bad = int(np.count_nonzero(ref != got))
        return (0.0 if bad == 0 else float("inf")), ("%d elements differ" % bad if bad else "")
    a = ref.astype(np.float64)
    b = got.astype(np.float64)
    if a.size == 0:
        return 0.0, ""
    finite = np.isfinite(a)
    scale = float(np.max(np.abs(a[finite]))) if finite.any() else 0.0
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    mag = np.maximum(np.maximum(np.abs(a), np.abs(b)), scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.where(mag > 0, mag, 1.0))
    rel = np.where(np.isnan(rel), np.inf, rel)
    return float(np.max(rel)), ""


def op_shapes(cli, path, dims, timeout):
    """Output shapes per operator from partex-cli inspect --json."""
    args = [cli, "inspect", path, "--json"] + sum([["--dim", d] for d in dims], [])
    r, err = run_cli(args, timeout)
    if err or r.returncode != 0:
        return {}
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return {}
    out = {}
    for n in j.get("nodes", j.get("ops", [])):
        out[n.get("name")] = n.get("output_shapes")
    return out


def input_shapes(model_path, feeds, names):
    """Input shapes of the named operators of the main graph: ONNX Runtime (optimisations off, so the
    values keep their names) runs the model once with those inputs as extra outputs."""
    m = onnx.load(model_path)
    known = {i.name: list(i.dims) for i in m.graph.initializer}
    outs = {o.name for o in m.graph.output}
    nodes = {n.name: n for n in m.graph.node if n.name in names}
    wanted = []
    for n in nodes.values():
        for x in n.input:
            if x and x not in known and x not in outs and x not in feeds and x not in wanted:
                wanted.append(x)
                m.graph.output.append(onnx.helper.make_empty_tensor_value_info(x))
    shapes = dict(known)
    shapes.update({k: list(v.shape) for k, v in feeds.items()})
    if wanted:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        try:
            sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            for x, v in zip(wanted, sess.run(wanted, feeds)):
                shapes[x] = list(np.asarray(v).shape)
        except Exception:  # noqa: BLE001 - shapes are a help to the reader, not a result
            pass
    return {k: [shapes.get(x, "?") for x in n.input if x] for k, n in nodes.items()}


def count_ops(model):
    def walk(g):
        c = 0
        for n in g.node:
            c += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    c += walk(a.g)
                for sg in a.graphs:
                    c += walk(sg)
        return c
    return len(model.graph.node), walk(model.graph)


def emit(row, path):
    print(json.dumps(row), flush=True)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--suite", default=os.environ.get("PARTEX_MODEL_SUITE",
                                                      os.path.expanduser("~/.cache/partex/model-suite")))
    ap.add_argument("--cli", default=os.path.join(here, "..", "..", "build", "bin", "partex-cli"))
    ap.add_argument("--models", default="")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per partex-cli call")
    ap.add_argument("--work", default="/tmp/partex-suite-run")
    ap.add_argument("--ort-only", action="store_true", help="run ONNX Runtime only (inputs and reference outputs)")
    ap.add_argument("--json", default="", help="append one JSON object per model to FILE")
    ap.add_argument("--markdown", default="", help="write the table to FILE")
    a = ap.parse_args()
    with open(os.path.join(a.suite, "manifest.json")) as f:
        manifest = json.load(f)
    wanted = set(filter(None, a.models.split(",")))
    rows = []
    for e in manifest["models"]:
        if wanted and e["name"] not in wanted:
            continue
        path = os.path.join(a.suite, e["file"])
        work = os.path.join(a.work, e["name"])
        os.makedirs(work, exist_ok=True)
        model = onnx.load(path)
        top, total = count_ops(model)
        row = {"name": e["name"], "task": e["task"], "control_flow": e["control_flow"], "nodes": top,
               "nodes_with_subgraphs": total}
        rows.append(row)
        try:
            feeds = make_inputs(model, e, os.path.join(work, "in"), a.seed, a.suite)
        except ValueError as err:
            row["error"] = "inputs: %s" % err
            emit(row, a.json)
            continue
        try:
            row["ort_ms"], ort_outs = run_ort(path, feeds, os.path.join(work, "ort"), a.reps, a.warmup)
        except Exception as err:  # noqa: BLE001 - ORT's own failure is a finding too
            row["ort_error"] = str(err).splitlines()[0][:300]
            ort_outs = None
        if ort_outs is not None:
            try:
                plain = ort_unoptimised(path, feeds)
                row["ort_self_diff"] = max([rel_diff(ort_outs[k], plain[k])[0] for k in ort_outs] or [0.0])
            except Exception:  # noqa: BLE001 - the floor is a help, not a result
                pass
        if a.ort_only:
            emit(row, a.json)
            continue
        dims = sum([["--dim", d] for d in e.get("dims", [])], [])
        plan = os.path.join(work, "plan.json")
        r, err = run_cli([a.cli, "schedule", path, "-p", "this-machine", "--algo", "single", "--param",
                          "device=core0", "-o", plan] + dims, a.timeout)
        if err or r.returncode != 0:
            row["partex_stage"] = "import/schedule"
            row["partex_error"] = err or last_line(r.stderr or r.stdout)
            emit(row, a.json)
            continue
        ins = sum([["--input", "%s=%s" % (vi.name, os.path.join(work, "in", "%d.npy" % k))]
                   for k, vi in enumerate(model_inputs(model))], [])
        pout = os.path.join(work, "partex")
        os.makedirs(pout, exist_ok=True)
        t0 = time.time()
        r, err = run_cli([a.cli, "execute", path, "--plan", plan, "--reps", str(a.reps), "--warmup",
                          str(a.warmup), "--outputs", pout, "--json"] + dims + ins, a.timeout)
        row["partex_wall_s"] = round(time.time() - t0, 1)
        j = None
        if not err and r.stdout.strip().startswith("{"):
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = None
        if j is None:
            row["partex_stage"] = "execute"
            row["partex_error"] = err or last_line(r.stderr or r.stdout)
            emit(row, a.json)
            continue
        with open(os.path.join(work, "execute.json"), "w") as f:
            json.dump(j, f)
        row["partex_ms"] = j["measured_makespan_us"] / 1e3
        row["disturbed"] = j.get("disturbed", False)
        row["self_check"] = j.get("outputs_match")
        if "ort_ms" in row:
            row["ratio"] = row["partex_ms"] / row["ort_ms"]
        if ort_outs is not None:
            worst, notes = 0.0, []
            for name, ref in ort_outs.items():
                f = os.path.join(pout, safe_name(name) + ".npy")
                if not os.path.exists(f):
                    worst, notes = float("inf"), notes + ["no output %s" % name]
                    continue
                d, why = rel_diff(ref, np.load(f))
                worst = max(worst, d)
                if why:
                    notes.append("%s: %s" % (name, why))
            row["max_rel_diff"] = worst
            if notes:
                row["diff_notes"] = "; ".join(notes)
        ops = sorted(j["ops"], key=lambda o: -o["measured_us"])
        # Time by operator type (a fused kernel's time counts for its last operator's type).
        by_type = {}
        for o in j["ops"]:
            t = by_type.setdefault(o["op_type"], [0, 0.0])
            t[0] += 1
            t[1] += o["measured_us"]
        row["by_type_us"] = {k: [n, round(us, 1)] for k, (n, us) in
                             sorted(by_type.items(), key=lambda kv: -kv[1][1])[:6]}
        if row.get("ratio", 0) > 1.25:
            outs = op_shapes(a.cli, path, e.get("dims", []), a.timeout)
            ins_shapes = input_shapes(path, feeds, {o["name"] for o in ops[:3]})
            # A fused kernel's time sits on its last operator: name the operators it ran.
            types = {o["name"]: o["op_type"] for o in j["ops"]}
            kernel_of = {k["ops"][-1]: [types.get(x, "?") for x in k["ops"]] for k in j.get("fused_kernels", [])}
            row["slowest"] = [{"name": o["name"], "op_type": o["op_type"], "us": round(o["measured_us"], 1),
                               "kernel": "+".join(kernel_of.get(o["name"], [o["op_type"]])),
                               "inputs": ins_shapes.get(o["name"], "?"), "outputs": outs.get(o["name"], "?")}
                              for o in ops[:3]]
        emit(row, a.json)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(rows))


def fmt_ms(v):
    return "" if v is None else ("%.3g" % v if v < 10 else "%.0f" % v)


def fmt_diff(d):
    return "" if d is None else ("%.1e" % d if d != float("inf") else "inf")


def markdown(rows):
    lines = ["| model | task | ops | Partex | max rel diff | ORT opt/unopt diff | Partex ms | ORT ms | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        status = "ok"
        if "partex_error" in r:
            status = "%s: %s" % (r["partex_stage"], r["partex_error"])
        elif "error" in r:
            status = r["error"]
        lines.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["task"], r["nodes"], status.replace("|", "/"), fmt_diff(r.get("max_rel_diff")),
            fmt_diff(r.get("ort_self_diff")), fmt_ms(r.get("partex_ms")),
            fmt_ms(r.get("ort_ms")), "%.2f" % r["ratio"] if "ratio" in r else ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
