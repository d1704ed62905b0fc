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
of Partex to the better one, with geometric means; the 1-minute load average before each model.
Run with the ORT venv's interpreter (scripts/ort/install.sh), from the repository root:
  ~/.local/share/partex/ort-venv/bin/python bench/stream/stream_vs_ort.py [--n 200] [--cli build/bin/partex-cli]
      [--work DIR] [--timeout S] [--dispatch round-robin|next-free] MODEL.onnx...
--dispatch is passed to `execute` for plans with replicas (next-free: each inference to the replica free
first, as ONNX Runtime's two sessions take them; needs replicas on disjoint CPUs).
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


def main():
    args = sys.argv[1:]
    n, cli, work, timeout, dispatch, models = 200, "build/bin/partex-cli", None, 900, None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--n", "--cli", "--work", "--timeout", "--dispatch"):
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
            else:
                timeout = int(v)
        else:
            models.append(a)
        i += 1
    if not models:
        sys.exit("usage: stream_vs_ort.py [--n N] [--cli PATH] [--work DIR] [--timeout S] [--dispatch D] MODEL.onnx...")
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
            run([cli, "schedule", model, "-p", "this-machine", "--profile", prof, "--algo", "best", "--objective",
                 "throughput", "-o", plan] + dims, timeout)
            px = json.loads(run([cli, "execute", model, "-p", "this-machine", "--plan", plan, "--profile", prof,
                                 "--stream", str(n), "--json"] + dims +
                                (["--dispatch", dispatch] if dispatch else []), timeout))
            row["partex"] = px
            for cfg in ("one2", "two1"):
                row[cfg] = json.loads(run([sys.executable, ort_script, model, "--config", cfg, "--n", str(n)] + dims,
                                          timeout))
        except Exception as e:  # reported in the row; the benchmark goes on
            row["error"] = str(e)
        rows.append(row)
        sys.stderr.write(f"{base}: done\n")
    with open(os.path.join(work, "rows.json"), "w") as f:
        json.dump(rows, f)
    print(f"Stream of {n} inferences; throughput = completions after the warm-up over their span (inferences/s)\n")
    print("| model | load | Partex plan | in flight | Partex /s | predicted /s | pred. error | Partex latency ms (p90) "
          "| ORT 2 thr /s | ORT 2x1 thr /s | ORT 2x1 latency ms | Partex / better ORT | outputs | Partex cpu share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, errors = [], []
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['load']:.2f} | error: {r['error']} ||||||||||||")
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
        print(f"| {r['model']} | {r['load']:.2f} | {stages} | {px['in_flight']} | {meas:.2f} | {pred:.2f} | "
              f"{err * 100:+.1f}% | {px['measured_latency_median_us'] / 1e3:.1f} ({px['measured_latency_p90_us'] / 1e3:.1f}) | "
              f"{a['steady_throughput_per_s']:.2f} | {b['steady_throughput_per_s']:.2f} | "
              f"{b['latency_median_us'] / 1e3:.1f} | {ratio:.2f}x | "
              f"{'match' if px['outputs_match'] else 'DIFFER'} | {px['cpu_share']:.2f} |")
    if ratios:
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\nGeometric mean Partex / better ORT: {g:.2f}x (goal >= 1.1x); largest |predicted error| "
              f"{max(errors) * 100:.1f}% (goal <= 10%)")


if __name__ == "__main__":
    main()
