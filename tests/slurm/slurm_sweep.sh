#!/usr/bin/env bash
# A real single-node Slurm on localhost runs a small sweep as a job array (partex-cli sweep --slurm) and
# its merged table must equal a local run of the same sweep. Starts munged (its own key and socket),
# slurmctld and slurmd (a slurm.conf in a temporary folder: SlurmctldHost=localhost, NodeName=localhost
# CPUs=2, one default partition, proctrack/linuxproc, task/none, no accounting; SlurmUser is the user
# running the test, root in CI), and stops them at the end. Then removes one shard's results (a failed
# array task), checks that `sweep status` names that task with its log, and that re-submitting runs an
# array of that one shard only and gives the same table again.
# Exits 77 (ctest SKIP_RETURN_CODE) only where the daemons cannot be started.
# Usage: slurm_sweep.sh PARTEX_CLI SHARED_MODELS_DIR
set -uo pipefail

CLI=${1:?partex-cli path}
MODELS=${2:-}
SKIP=77
say() { echo "slurm_sweep: $*"; }
skip() { say "SKIP: $*"; exit $SKIP; }
die() { say "FAIL: $*"; exit 1; }

for c in munged munge slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$c" >/dev/null || skip "'$c' is not installed (scripts/deps.sh installs slurmctld, slurmd, slurm-client and munge)"
done

D=$(mktemp -d /tmp/partex-slurm.XXXXXX) || die "mktemp"
chmod 755 "$D"   # munged needs every folder above its socket to be searchable by all
mkdir -p "$D/munge" "$D/state" "$D/spool" && chmod 755 "$D/munge"
USER_NAME=$(id -un)

cleanup() {
  if [ -f "$D/slurm.conf" ]; then
    SLURM_CONF="$D/slurm.conf" scontrol shutdown >/dev/null 2>&1
    for p in slurmd slurmctld; do
      [ -f "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null
    done
  fi
  [ -S "$D/munge/munge.sock" ] && munged --stop --socket="$D/munge/munge.sock" >/dev/null 2>&1
  sleep 1
  [ -f "$D/munge/munged.pid" ] && kill "$(cat "$D/munge/munged.pid")" 2>/dev/null
  if [ "${KEEP:-0}" = 1 ]; then say "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT

# ---- munge ----
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$D/munge/munge.key"
munged --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" --log-file="$D/munge/munged.log" \
       --pid-file="$D/munge/munged.pid" --seed-file="$D/munge/munged.seed" \
  || skip "munged did not start: $(tail -n 2 "$D/munge/munged.log" 2>/dev/null | tr '\n' ' ')"
munge -n -S "$D/munge/munge.sock" | unmunge -S "$D/munge/munge.sock" >/dev/null || skip "munge cannot encode and decode a credential"

# ---- slurm ----
free_port() {  # a TCP port nothing listens on, from $1 up
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
CTLD_PORT=$(free_port $((20000 + $$ % 20000)))
SLURMD_PORT=$(free_port $((CTLD_PORT + 1)))
cat >"$D/slurm.conf" <<CONF
ClusterName=partextest
SlurmctldHost=localhost
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmdSpoolDir=$D/spool
StateSaveLocation=$D/state
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
NodeName=localhost CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
slurmctld -i >/dev/null 2>&1 || skip "slurmctld did not start: $(tail -n 3 "$D/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
slurmd -N localhost >/dev/null 2>&1 || skip "slurmd did not start: $(tail -n 3 "$D/slurmd.log" 2>/dev/null | tr '\n' ' ')"
up=0
for _ in $(seq 1 60); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then up=1; break; fi
  sleep 0.5
done
[ $up = 1 ] || skip "the node did not become idle: $(sinfo -h -N -o '%T %E' 2>&1 | tr '\n' ' ') $(tail -n 3 "$D/slurmd.log" | tr '\n' ' ')"
say "Slurm up: slurmctld on port $CTLD_PORT, slurmd on $SLURMD_PORT, in $D"

# ---- the sweep: 2 models x 2 presets x 2 bandwidth scales x (3 deterministic algorithms + best) ----
MODEL_A="gen:random?nodes=40&seed=7"
if [ -n "$MODELS" ] && [ -f "$MODELS/light_squeezenet.onnx" ]; then MODEL_B="$MODELS/light_squeezenet.onnx"; else MODEL_B="gen:random?nodes=80&width=4&seed=3"; fi
cat >"$D/sweep.json" <<JSON
{
  "description": "tests/slurm: the Slurm sweep equals the local one",
  "models": ["$MODEL_A", "$MODEL_B"],
  "platforms": ["cpu-gpu-pcie", "mobile-soc"],
  "link_bandwidth_scale": [0.5, 2],
  "algorithms": ["heft", "peft", "cpop",
                 {"name": "best", "label": "best-fixed", "params": {"max_evals": 3000, "bnb_nodes": 2000}, "time_limit": 5}]
}
JSON

"$CLI" sweep "$D/sweep.json" --output "$D/local" --quiet || die "the local sweep failed"
[ -f "$D/local/results.csv" ] || die "the local sweep wrote no results.csv"

wait_jobs() {  # waits until none of the jobs is queued or running; $1 seconds at most
  local limit=$1; shift
  local ids; ids=$(IFS=,; echo "$*")
  for _ in $(seq 1 $((limit * 2))); do
    [ -z "$(squeue -h -j "$ids" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  squeue; return 1
}

submit() {
  local out
  out=$("$CLI" sweep "$D/sweep.json" --output "$D/slurm" --slurm --shards 4 --array-limit 2 --time 00:10:00) || die "sweep --slurm failed: $out"
  echo "$out" >&2
  echo "$out" | sed -n 's/^Submitted array job \([0-9]*\) and merge job \([0-9]*\).*/\1 \2/p'
}

# The tables' fields hold no comma here (no dims; best has a label), so awk splits the CSV on commas.
# Compare the tables but for the timing columns (sched_ms, time_limited). best's makespan is not compared:
# its portfolio members and its local search stop at wall-clock shares of its budget, so under a loaded
# machine (two array tasks on two CPUs) it may return another plan; its rows must exist and be valid.
normalise() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
           { out = "";
             for (i = 1; i <= NF; i++) {
               if (i == col["sched_ms"] || i == col["time_limited"]) continue;
               if ($col["algorithm"] ~ /^best/ && i != col["case"] && i != col["valid"] && i != col["tasks"]) continue;
               out = out "," $i }
             print out }' "$1"
}
compare_tables() {
  normalise "$D/local/results.csv" >"$D/local.norm"
  normalise "$D/slurm/results.csv" >"$D/slurm.norm"
  diff "$D/local.norm" "$D/slurm.norm" >"$D/diff.txt" || { head -20 "$D/diff.txt"; die "$1: the merged Slurm table differs from the local run"; }
  local rows; rows=$(wc -l <"$D/local.norm")
  [ "$rows" -eq 32 ] || die "$1: expected 32 cases, the table has $rows"
  grep -q ',false,' <(cut -d, -f1,14 "$D/slurm/results.csv" | tail -n +2) && die "$1: a case has no valid plan"
  awk -F, 'NR > 1 && $8 ~ /^best/ { n++ } END { exit n == 8 ? 0 : 1 }' "$D/slurm/results.csv" || die "$1: best's 8 rows are missing"
  say "$1: merged table equals the local run (32 cases; best compared for validity only)"
}

read -r ARRAY MERGE < <(submit) || die "no job ids"
[ -n "${MERGE:-}" ] || die "no job ids in the submission output"
grep -q '^#SBATCH --array=0-3%2$' "$D/slurm/slurm/sweep-array.sbatch" || die "the array script lacks --array=0-3%2"
wait_jobs 300 "$ARRAY" "$MERGE" || die "the jobs did not finish in 300 s"
[ -f "$D/slurm/results.csv" ] || { cat "$D/slurm/slurm/logs/"*.log; die "the merge job wrote no results.csv"; }
"$CLI" sweep status "$D/sweep.json" --output "$D/slurm" || die "sweep status reports missing cases after the merge"
compare_tables "first submission"

# ---- a failed array task: its shard's results are gone ----
rm "$D/slurm/shards/shard-2-of-4.jsonl" "$D/slurm/results.jsonl" "$D/slurm/results.csv"
status=$("$CLI" sweep status "$D/sweep.json" --output "$D/slurm" 2>&1) && die "sweep status should exit 1 with missing cases"
echo "$status" | grep -q "array task 2: 8 of 8 cases missing; log $D/slurm/slurm/logs/shard-2.log" \
  || die "sweep status does not name array task 2 and its log: $status"
read -r ARRAY2 MERGE2 < <(submit) || die "no job ids on re-submission"
grep -q '^#SBATCH --array=2%2$' "$D/slurm/slurm/sweep-array.sbatch" || die "the re-submitted array is not shard 2 alone: $(grep array= "$D/slurm/slurm/sweep-array.sbatch")"
wait_jobs 300 "$ARRAY2" "$MERGE2" || die "the re-submitted jobs did not finish in 300 s"
grep -q "8/8 cases" "$D/slurm/slurm/logs/shard-2.log" || die "shard 2's log does not show its 8 cases run again"
for i in 0 1 3; do
  [ "$(grep -c 'partex sweep: array task' "$D/slurm/slurm/logs/shard-$i.log")" -eq 1 ] || die "shard $i ran again"
done
compare_tables "re-submission"
say "PASS"
