#!/usr/bin/env python3
"""bench/stream: which term of the stream model a stage's busy time misses (issue 29, item 4's
prediction error). Per model, one profile, then, interleaved `--reps` times, `execute --stream N` of:
  alone      every operator on core0, one context (--in-flight 1): the profile's own conditions
  contexts   the same plan, three contexts (--in-flight 3): each inference in other buffers, as a
             three-in-flight pipeline stage runs (cold caches for the stage's activations)
  both       the same plan replicated onto core1 (replicas [{"core0": "core1"}]): both cores run the
             same kernels at once (shared last-level cache and memory bandwidth)
and prints core0's busy time per inference (its kernels' summed time) against the profile's, with the
lanes' CPU share. On an idle machine, contexts/alone is the buffer-rotation term, both/alone the
two-cores-at-once term; under load the CPU share says how much of a ratio is other programs'. The last
column, busy x CPU share / profile, takes the other programs' share out (the busy time a lane was
running, cache and memory stalls included, not the time it waited for its core): the ratio to read
on a loaded machine.
Run from the repository root:
  python3 bench/stream/stage_terms.py [--n 100] [--reps 2] [--cli build/bin/partex-cli] [--work DIR] MODEL.onnx...
"""
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {last}")
    return p.stdout


def main():
    args = sys.argv[1:]
    n, reps, cli, work, models = 100, 2, "build/bin/partex-cli", None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--n", "--reps", "--cli", "--work") and i + 1 < len(args):
            v = args[i + 1]
            if a == "--n":
                n = int(v)
            elif a == "--reps":
                reps = int(v)
            elif a == "--cli":
                cli = v
            else:
                work = v
            i += 2
            continue
        if a.startswith("-"):
            sys.exit(f"stage_terms.py: unknown option {a}")
        models.append(a)
        i += 1
    if not models:
        sys.exit(__doc__)
    work = work or tempfile.mkdtemp(prefix="stage_terms.")
    os.makedirs(work, exist_ok=True)
    print("| model | run | load | cpu share | core0 busy us (median) | profile us | busy / profile | busy x share / profile |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for model in models:
        name = os.path.splitext(os.path.basename(model))[0]
        prof = os.path.join(work, name + ".prof.json")
        core0 = os.path.join(work, name + ".core0.plan.json")
        twin = os.path.join(work, name + ".twin.plan.json")
        run([cli, "profile", model, "-o", prof, "-q"])
        run([cli, "schedule", model, "-p", "this-machine", "--profile", prof, "--algo", "single", "--param",
             "device=core0", "-o", core0])
        with open(core0) as f:
            plan = json.load(f)
        plan["replicas"] = [{"core0": "core1"}]
        with open(twin, "w") as f:
            json.dump(plan, f)
        runs = [("alone", core0, ["--in-flight", "1"]), ("contexts", core0, ["--in-flight", "3"]),
                ("both", twin, [])]
        for _ in range(reps):
            for label, plan_file, extra in runs:
                load = os.getloadavg()[0]
                j = json.loads(run([cli, "execute", model, "-p", "this-machine", "--profile", prof, "--plan",
                                    plan_file, "--stream", str(n), "--json"] + extra))
                for s in j["stages"]:
                    if s["device"] != "core0":
                        continue
                    print(f"| {name} | {label} | {load:.2f} | {j['cpu_share']:.2f} | {s['measured_busy_us']:.1f} | "
                          f"{s['predicted_busy_us']:.1f} | {s['measured_busy_us'] / s['predicted_busy_us']:.2f} | "
                          f"{s['measured_busy_us'] * j['cpu_share'] / s['predicted_busy_us']:.2f} |",
                          flush=True)


if __name__ == "__main__":
    main()
