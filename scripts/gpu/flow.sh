#!/bin/bash
# scripts/gpu/flow.sh CLI MODELS_DIR OUTDIR: the default measured flow of a user with a GPU (issue 25's
# prediction goal), on the GPU machine:
#   partex-cli platforms --show this-machine --json      (probe + calibration, the GPU included; cached)
#   the this-machine platform cut to its gpu, cpu-parallel and host (cpu-serial) devices (the 16
#     per-core devices of the device machine would multiply the profiling time by ten)
#   for each model: profile --devices gpu,cpu-parallel,cpu-serial; schedule --algo best, heft and single on the gpu;
#     execute each plan; record predicted and measured makespans
#   the modelled costs before profiling: schedule single-on-gpu without a profile, execute it.
# Writes OUTDIR/flow.json (one record per model and plan) and prints a table. Exit 125: no gpu device.
set -u
CLI=$1 MODELS=$2 OUT=$3
W=$(mktemp -d /tmp/partex-flow.XXXX)
# The accelerator's device id (a CPU core stands in for it to check this script without a GPU).
ACC=${FLOW_ACCEL:-gpu}
MODELS_LIST=${FLOW_MODELS:-"light_resnet50 light_squeezenet light_inception_v1 light_densenet121 light_bvlc_alexnet yolox_nano"}
echo "flow: work $W"
"$CLI" platforms --show this-machine --json > "$W/this-machine.json" || { echo "platforms failed"; exit 1; }
python3 - "$W/this-machine.json" "$W/tm.json" "$ACC" <<'PY' || exit 125
import json, sys
p = json.load(open(sys.argv[1]))
acc = sys.argv[3]
# The host (cpu-serial) stays: every transfer is staged through its memory, and the platform's links
# are the host's.
keep = {acc, "cpu-parallel", p.get("host", "cpu-serial")}
ids = [d["id"] for d in p["devices"]]
if acc not in ids:
    print("flow: this-machine has no %s device: %s" % (acc, ", ".join(ids))); sys.exit(1)
p["devices"] = [d for d in p["devices"] if d["id"] in keep]
p["links"] = [l for l in p.get("links", []) if l["from"] in keep and l["to"] in keep]
groups = []
for g in p.get("exclusive_groups", []):
    devs = [d for d in g["devices"] if d in keep]
    if len(devs) > 1: groups.append(dict(g, devices=devs))
p["exclusive_groups"] = groups
p["name"] = "this-machine-" + acc
json.dump(p, open(sys.argv[2], "w"), indent=1)
dev = [d for d in p["devices"] if d["id"] == acc][0]
print("flow: %s device:" % acc, json.dumps({k: dev[k] for k in dev if k not in ("supported_ops", "unsupported_ops")})[:600])
print("flow: links:", json.dumps(p["links"]))
PY
cp "$W/tm.json" "$OUT/platform.json"  # the calibrated platform the predictions used
echo "[" > "$OUT/flow.json"
first=1
record() {  # model algo profiled exec_json_file
  local j; j=$(cat "$4" 2>/dev/null || echo '{}')
  [ $first = 1 ] || echo "," >> "$OUT/flow.json"; first=0
  printf '{"model": "%s", "algo": "%s", "profiled": %s, "exec": %s}\n' "$1" "$2" "$3" "${j:-{\}}" >> "$OUT/flow.json"
}
# Generated models with parallel branches, where a CPU beside the GPU can pay off (DUET's case):
# written by partex-cli itself (no download), with seeded weights.
GENERATED=${FLOW_GENERATED:-"widedeep multitower inception"}
for k in $GENERATED; do
  "$CLI" generate "$k" --weights -o "$W/gen_$k.onnx" > /dev/null 2>&1 || "$CLI" generate "$k" -o "$W/gen_$k.onnx" > /dev/null \
    || echo "flow: generate $k failed"
done
for m in $MODELS_LIST $(for k in $GENERATED; do echo "gen_$k"; done); do
  f="$MODELS/$m.onnx"; [ -f "$f" ] || f="$W/$m.onnx"
  [ -f "$f" ] || { echo "flow: no $m.onnx"; continue; }
  echo "=== $m"
  t0=$SECONDS
  # Modelled only (no profile): everything on the GPU, as the this-machine calibration predicts it.
  if "$CLI" schedule "$f" --platform "$W/tm.json" --algo single --param device=$ACC -o "$W/$m.model.plan.json" > /dev/null 2> "$W/$m.model.err"; then
    "$CLI" execute "$f" --platform "$W/tm.json" --plan "$W/$m.model.plan.json" --reps 20 --json > "$W/$m.model.exec.json" 2> "$W/$m.model.err" \
      || tail -2 "$W/$m.model.err"
    record "$m" "single-$ACC" false "$W/$m.model.exec.json"
  else
    echo "flow: schedule without a profile failed: $(tail -1 "$W/$m.model.err")"
  fi
  if ! "$CLI" profile "$f" --devices $ACC,cpu-parallel,cpu-serial --reps 5 --warmup 1 -q -o "$W/$m.profile.json" > "$W/$m.profile.out" 2> "$W/$m.profile.err"; then
    echo "flow: profile failed: $(tail -1 "$W/$m.profile.err")"; continue
  fi
  echo "   profiled in $((SECONDS - t0)) s"
  for algo in single best heft; do
    extra=(); [ $algo = single ] && extra=(--param device=$ACC)
    if "$CLI" schedule "$f" --platform "$W/tm.json" --profile "$W/$m.profile.json" --algo $algo "${extra[@]}" \
         -o "$W/$m.$algo.plan.json" > /dev/null 2> "$W/$m.$algo.err"; then
      "$CLI" execute "$f" --platform "$W/tm.json" --plan "$W/$m.$algo.plan.json" --profile "$W/$m.profile.json" --reps 20 \
        --json > "$W/$m.$algo.exec.json" 2>> "$W/$m.$algo.err" || tail -2 "$W/$m.$algo.err"
      record "$m" "$algo" true "$W/$m.$algo.exec.json"
    else
      echo "flow: schedule $algo failed: $(tail -1 "$W/$m.$algo.err")"
    fi
  done
done
echo "]" >> "$OUT/flow.json"
python3 - "$OUT/flow.json" "$ACC" <<'PY' | tee "$OUT/flow_summary.txt"
import json, sys, statistics, collections
rows = json.load(open(sys.argv[1]))
acc = sys.argv[2]
print("%-32s %-11s %9s %12s %12s %8s" % ("model", "plan", "profiled", "predicted ms", "measured ms", "error"))
errs = []
for r in rows:
    e = r.get("exec") or {}
    pred = e.get("predicted_us") or e.get("predicted_makespan_us"); meas = e.get("measured_us") or e.get("measured_makespan_us")
    if pred is None or meas is None:
        print("%-32s %-11s %9s   (no result: %s)" % (r["model"], r["algo"], r["profiled"], ",".join(sorted(e.keys()))[:80])); continue
    err = (pred - meas) / meas
    if r["profiled"] and r["algo"] == "best": errs.append(abs(err))
    print("%-32s %-11s %9s %12.3f %12.3f %+7.1f%%" % (r["model"], r["algo"], r["profiled"], pred / 1000, meas / 1000, 100 * err))
if errs:
    print("best plans, |error|: median %.1f%%, worst %.1f%%" % (100 * statistics.median(errs), 100 * max(errs)))
# Why: per plan, each device's operators and busy time (sum of operator times, predicted against
# measured), the run's conditions, and the operators the prediction misses most.
print()
for r in rows:
    e = r.get("exec") or {}
    ops = e.get("ops") or []
    if not ops: continue
    by = collections.OrderedDict()
    for o in ops:
        d = by.setdefault(o["device"], [0, 0.0, 0.0]); d[0] += 1; d[1] += o["predicted_us"]; d[2] += o["measured_us"]
    devs = "; ".join("%s %d ops %.0f/%.0f us" % (k, v[0], v[1], v[2]) for k, v in by.items())
    print("%s %s: %s | cpu_share %.2f sleeps %.1f switches %d discarded %d match %s%s" % (
        r["model"], r["algo"], devs, e.get("cpu_share", -1), e.get("sleeps_per_run", -1),
        e.get("mode_switches_per_run", -1), e.get("disturbed_runs_discarded", -1), e.get("outputs_match"),
        (" notes: " + " | ".join(e.get("notes"))[:200]) if e.get("notes") else ""))
    if r["algo"] in ("best", "single") and r["profiled"]:
        worst = sorted(ops, key=lambda o: -abs(o["measured_us"] - o["predicted_us"]))[:3]
        print("   most missed: " + "; ".join("%s@%s %.0f/%.0f" % (o["name"], o["device"], o["predicted_us"], o["measured_us"]) for o in worst))
    # The CPU kernels that read a tensor the accelerator wrote (row-major on the host; issue 25: they ran
    # 1.3-4x their profile), predicted/measured per kernel: a fused kernel's time sits on its last
    # operator, so a reader's kernel is the one it ran in (fused_into).
    dev_of = {}
    for o in ops:
        for v in o.get("outputs") or []: dev_of[v] = o["device"]
    kernels = collections.OrderedDict()
    for o in ops:
        if o["device"] == acc or not any(dev_of.get(v) == acc for v in o.get("inputs") or []): continue
        k = o.get("fused_into") or o["name"]
        if k in kernels: continue
        members = [x for x in ops if x["name"] == k or x.get("fused_into") == k]
        kernels[k] = ("%s %s" % (o["name"], o["op_type"]) + ("" if k == o["name"] else " in " + k), o["device"],
                      sum(x["predicted_us"] for x in members), sum(x["measured_us"] for x in members))
    if kernels:
        pred = sum(v[2] for v in kernels.values()); meas = sum(v[3] for v in kernels.values())
        print("   cpu readers of %s tensors: %d kernels, predicted %.0f us, measured %.0f us (%+.0f%%): %s" % (
            acc, len(kernels), pred, meas, 100 * (pred - meas) / meas if meas > 0 else 0,
            "; ".join("%s@%s %.0f/%.0f" % (v[0], v[1], v[2], v[3])
                      for k, v in sorted(kernels.items(), key=lambda kv: -abs(kv[1][3] - kv[1][2]))[:8])))
PY
