#!/usr/bin/env python3
"""bench/stream: Partex's best pipelined plan on a stream of inferences against ONNX Runtime on the same
stream (issue 29, item 4), through partex-cli and scripts/ort/stream.py as a user would run them.
Per model, in one run, side by side:
  Partex       partex-cli profile MODEL -o prof.json
               partex-cli schedule MODEL -p this-machine --profile prof.json --algo best
                          --objective throughput -o plan.json
               partex-cli execute MODEL -p this-machine --plan plan.json --profile prof.json --stream N --json
  ORT 2 thr    PYTHON scripts/ort/stream.py MODEL --config one2 --n N   (one session, two intra-op threads)
  ORT 2x1 thr  PYTHON scripts/ort/stream.py MODEL --config two1 --n N   (two one-thread sessions side by side)
Prints a Markdown table: measured throughput (completions after the warm-up over their span), the
simulator's predicted throughput and its error, latency medians, ORT's two configurations and the ratio
of Partex to the better one, with geometric means; the 1-minute load average before each model; the
median time per inference execute spent checking outputs on its lanes (in its measured period, not in
the simulator's: ONNX Runtime's stream checks nothing).
Run with the ORT venv's interpreter (scripts/ort/install.sh), from the repository root:
  ~/.local/share/partex/ort-venv/bin/python bench/stream/stream_vs_ort.py [--n 200] [--cli build/bin/partex-cli]
      [--work DIR] [--timeout S] [--dispatch round-robin|next-free] MODEL.onnx...
--dispatch is passed to `execute` for plans with replicas (next-free: each inference to the replica free
first, as ONNX Runtime's two sessions take them; needs replicas on disjoint CPUs).
A MODEL may be a workload file (partex-workload JSON): Partex takes it as it takes a model (one round of
the workload as one graph, problem/workloadgraph.h); ONNX Runtime gets the same round as one ONNX model,
the copies merged side by side with onnx.compose under the same "NAME#c/" prefixes (written to the work
folder), so both stream whole rounds; the Partex rows are then followed by each model's figures.
--baseline-cli PATH also runs another build's schedule and execute on the same profile, each model's two
streams one after the other (baseline first), and adds its columns: a before/after of a change to the
simulator or the executor, side by side in one run and against the same ONNX Runtime rows.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

# The --dim bindings the shared models need (their README; the same table as bench/ort/main.cpp's).
SHARED_DIMS = {
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": ["x:0=1", "x:2=48", "x:3=192"],
    "ch_PP-OCRv4_det_infer.onnx": ["x:0=1", "x:2=640", "x:3=640"],
}


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0,):
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}")
    return p.stdout


def workload_onnx(path, out):
    """One round of the workload at `path` as one ONNX model (each rate-driven model batch * rate / the
    slowest rate times, a triggered one per_inference times per copy of its trigger), written to `out`."""
    import onnx
    from onnx import compose
    w = json.load(open(path))
    models = w["models"]
    slowest = min(m["rate"] for m in models if "rate" in m)
    copies = {}
    for m in models:
        if "rate" in m:
            copies[m["name"]] = round(m["rate"] * m.get("batch", 1) / slowest)
    while len(copies) < len(models):
        for m in models:
            t = m.get("trigger")
            if m["name"] not in copies and t and t["model"] in copies:
                copies[m["name"]] = copies[t["model"]] * t["per_inference"]
    merged = None
    for m in models:
        file = m["model"] if os.path.isabs(m["model"]) else os.path.join(os.path.dirname(path), m["model"])
        for c in range(copies[m["name"]]):
            part = compose.add_prefix(onnx.load(file), f"{m['name']}#{c}/")
            merged = part if merged is None else compose.merge_models(merged, part, io_map=[])
    onnx.save(merged, out)
    return out


def main():
    args = sys.argv[1:]
    n, cli, work, timeout, dispatch, baseline, models = 200, "build/bin/partex-cli", None, 900, None, None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--n", "--cli", "--work", "--timeout", "--dispatch", "--baseline-cli"):
            v = args[i + 1]
            i += 1
            if a == "--n":
                n = int(v)
            elif a == "--cli":
                cli = v
            elif a == "--work":
                work = v
            elif a == "--dispatch":
                dispatch = v
            elif a == "--baseline-cli":
                baseline = v
            else:
                timeout = int(v)
        else:
            models.append(a)
        i += 1
    if not models:
        sys.exit("usage: stream_vs_ort.py [--n N] [--cli PATH] [--work DIR] [--timeout S] [--dispatch D] "
                 "[--baseline-cli PATH] MODEL.onnx...")
    work = work or tempfile.mkdtemp(prefix="partex-stream-")
    os.makedirs(work, exist_ok=True)  # a --work folder that does not exist yet (every row failed without it)
    ort_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "ort", "stream.py")
    rows = []
    for model in models:
        base = os.path.splitext(os.path.basename(model))[0]
        load = os.getloadavg()[0]
        prof = os.path.join(work, base + ".prof.json")
        plan = os.path.join(work, base + ".tput.plan.json")
        row = {"model": base, "load": load}
        dims = [a for d in SHARED_DIMS.get(os.path.basename(model), []) for a in ("--dim", d)]
        try:
            run([cli, "profile", model, "-o", prof, "-q"] + dims, timeout)
            def stream(c, plan_file):
                run([c, "schedule", model, "-p", "this-machine", "--profile", prof, "--algo", "best", "--objective",
                     "throughput", "-o", plan_file] + dims, timeout)
                return json.loads(run([c, "execute", model, "-p", "this-machine", "--plan", plan_file, "--profile",
                                       prof, "--stream", str(n), "--json"] + dims +
                                      (["--dispatch", dispatch] if dispatch else []), timeout))
            if baseline:
                row["baseline"] = stream(baseline, os.path.join(work, base + ".baseline.tput.plan.json"))
            row["partex"] = stream(cli, plan)
            px = row["partex"]
            ort_model = model
            if model.endswith(".json"):
                ort_model = workload_onnx(model, os.path.join(work, base + ".round.onnx"))
            for cfg in ("one2", "two1"):
                row[cfg] = json.loads(run([sys.executable, ort_script, ort_model, "--config", cfg, "--n", str(n)] + dims,
                                          timeout))
        except Exception as e:  # reported in the row; the benchmark goes on
            row["error"] = str(e)
        rows.append(row)
        sys.stderr.write(f"{base}: done\n")
    with open(os.path.join(work, "rows.json"), "w") as f:
        json.dump(rows, f)
    print(f"Stream of {n} inferences; throughput = completions after the warm-up over their span (inferences/s)\n")
    extra_head = " baseline plan | baseline /s | baseline predicted /s | baseline pred. error | baseline / better ORT |" if baseline else ""
    print("| model | load | Partex plan | in flight | Partex /s | predicted /s | pred. error | Partex latency ms (p90) "
          "| ORT 2 thr /s | ORT 2x1 thr /s | ORT 2x1 latency ms | Partex / better ORT | outputs | Partex cpu share "
          "| Partex check us |" + extra_head)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" * 5 if baseline else ""))
    base_ratios, base_errors = [], []
    ratios, errors = [], []
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['load']:.2f} | error: {r['error']} |||||||||||||")
            continue
        px, a, b = r["partex"], r["one2"], r["two1"]
        meas = px["measured_steady_throughput_per_s"]
        pred = px["predicted_throughput_per_s"]
        err = (pred - meas) / meas if meas > 0 else 0
        better = max(a["steady_throughput_per_s"], b["steady_throughput_per_s"])
        ratio = meas / better if better > 0 else 0
        ratios.append(ratio)
        errors.append(abs(err))
        # A replicated plan (sim/plan.h): each device with its replica, "core0 r0, core1 r1".
        reps = px.get("replicas", 1)
        stages = ", ".join(s["device"] + (f" r{s.get('replica', 0)}" if reps > 1 else "") for s in px.get("stages", []))
        extra = ""
        if "baseline" in r:
            bx = r["baseline"]
            bmeas, bpred = bx["measured_steady_throughput_per_s"], bx["predicted_throughput_per_s"]
            berr = (bpred - bmeas) / bmeas if bmeas > 0 else 0
            bratio = bmeas / better if better > 0 else 0
            base_ratios.append(bratio)
            base_errors.append(abs(berr))
            breps = bx.get("replicas", 1)
            bstages = ", ".join(s["device"] + (f" r{s.get('replica', 0)}" if breps > 1 else "") for s in bx.get("stages", []))
            extra = f" {bstages} | {bmeas:.2f} | {bpred:.2f} | {berr * 100:+.1f}% | {bratio:.2f}x |"
        print(f"| {r['model']} | {r['load']:.2f} | {stages} | {px['in_flight']} | {meas:.2f} | {pred:.2f} | "
              f"{err * 100:+.1f}% | {px['measured_latency_median_us'] / 1e3:.1f} ({px['measured_latency_p90_us'] / 1e3:.1f}) | "
              f"{a['steady_throughput_per_s']:.2f} | {b['steady_throughput_per_s']:.2f} | "
              f"{b['latency_median_us'] / 1e3:.1f} | {ratio:.2f}x | "
              f"{'match' if px['outputs_match'] else 'DIFFER'} | {px['cpu_share']:.2f} | "
              f"{px.get('measured_check_median_us', float('nan')):.0f} |" + extra)
    for r in rows:
        for k in ("baseline", "partex"):
            for m in r.get(k, {}).get("workload_models", []):
                print(f"\n{r['model']} ({k}): {m['model']} x{m['copies_per_round']} per round: measured "
                      f"{m['measured_throughput_per_s']:.2f}/s, latency median {m['measured_latency_median_us'] / 1e3:.2f} ms; "
                      f"predicted {m['predicted_throughput_per_s']:.2f}/s, latency {m['predicted_latency_us'] / 1e3:.2f} ms", end="")
    print()
    if ratios:
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\nGeometric mean Partex / better ORT: {g:.2f}x (goal >= 1.1x); largest |predicted error| "
              f"{max(errors) * 100:.1f}% (goal <= 10%)")
    if base_ratios:
        g = math.exp(sum(math.log(x) for x in base_ratios) / len(base_ratios))
        print(f"Baseline: geometric mean / better ORT {g:.2f}x; largest |predicted error| {max(base_errors) * 100:.1f}%")


if __name__ == "__main__":
    main()
