#!/usr/bin/env python3
"""Pipe-it's heuristic (pipeit, reconstructed) against the pipeline programme and best under the
throughput objective, modelled: every ONNX model of a folder on the given presets. Prints a Markdown
table (docs/benchmarks.md, issue 29 item 2).

    bench/stream/pipeit_vs_best.py build/bin/partex-cli ../shared/models mobile-soc,cpu-npu [time-limit-s]
"""
import json
import math
import os
import subprocess
import sys


# The PaddleOCR models' symbolic dimensions, bound as the other benchmarks bind them (docs/benchmarks.md).
DIMS = {
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": ["--dim", "x:0=1", "--dim", "x:2=48", "--dim", "x:3=192"],
    "ch_PP-OCRv4_det_infer.onnx": ["--dim", "x:0=1", "--dim", "x:2=640", "--dim", "x:3=640"],
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr.strip()


def main():
    cli, models_dir, presets = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    limit = sys.argv[4] if len(sys.argv) > 4 else "2"
    models = sorted(f for f in os.listdir(models_dir) if f.endswith(".onnx"))
    print("| model | platform | pipeit period us | pipeline period us | best period us | best / pipeit | pipeit's stages (predicted) |")
    print("|---|---|---:|---:|---:|---:|---|")
    ratios = {p: [] for p in presets}
    for m in models:
        path = os.path.join(models_dir, m)
        for p in presets:
            dims = DIMS.get(m, [])
            rc, out, err = run([cli, "compare", path, "--platform", p, "--algos", "pipeit,pipeline,best", "--objective",
                                "throughput", "--time-limit", limit, "--json"] + dims)
            if rc != 0:
                print(f"| {m} | {p} | error: {err[:160]} | | | | |")
                continue
            rows = {x["algo"]: x for x in json.loads(out)}

            def period(a):
                x = rows.get(a, {})
                return x.get("period_us") if x.get("valid") else None

            rc, out, err = run([cli, "schedule", path, "--platform", p, "--algo", "pipeit", "--objective", "throughput",
                                "--json"] + dims)
            stages = json.loads(out).get("notes", ["?"])[0].replace("stages: ", "") if rc == 0 else "error: " + err[:80]
            pi, pl, be = period("pipeit"), period("pipeline"), period("best")
            ratio = pi / be if pi and be else float("nan")
            if not math.isnan(ratio):
                ratios[p].append(ratio)
            f = lambda v: f"{v:.1f}" if v else "-"
            print(f"| {m} | {p} | {f(pi)} | {f(pl)} | {f(be)} | {ratio:.3f}x | {stages} |")
    print()
    for p in presets:
        if ratios[p]:
            g = math.exp(sum(math.log(x) for x in ratios[p]) / len(ratios[p]))
            print(f"{p}: best's throughput over pipeit's, geometric mean {g:.3f}x, min {min(ratios[p]):.3f}x, "
                  f"max {max(ratios[p]):.3f}x over {len(ratios[p])} models")


if __name__ == "__main__":
    main()
