#!/usr/bin/env python3
"""best (a 2 s time limit) on WfCommons workflows (github.com/wfcommons/WfInstances) against the
makespan the file records for its real execution: a Markdown table, one row per file.
Usage: scripts/instances/wfinstances_vs_recorded.py build/bin/partex-cli [--saga] FILE...
(--saga: SAGA's reading, one processor per machine: partex-cli --wf-one-per-machine)"""
import json, subprocess, sys, time, os
cli = sys.argv[1]
extra = []
files = sys.argv[2:]
if files and files[0] == '--saga':
    extra = ['--wf-one-per-machine']; files = files[1:]
print('| workflow | tasks | machines | processors | recorded s | sum of runtimes s | best s | best / recorded | wall s |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
for f in files:
    j = json.load(open(f))
    wf = j['workflow']; ex = wf.get('execution', {})
    tasks = wf['specification']['tasks'] if 'specification' in wf else wf['tasks']
    rec = ex.get('makespanInSeconds', wf.get('makespanInSeconds'))
    ms = ex.get('machines', wf.get('machines', []))
    seen = {}
    for m in ms: seen[m['nodeName']] = m.get('cpu', {}).get('coreCount', 1)
    procs = sum(min(c, len(tasks)) for c in seen.values()) if not extra else len(seen)
    sumrt = sum(t.get('runtimeInSeconds', 0) for t in ex.get('tasks', tasks))
    t0 = time.time()
    r = subprocess.run([cli, 'schedule', f, '--algo', 'best', '--time-limit', '2', '--json'] + extra, capture_output=True, text=True)
    wall = time.time() - t0
    name = os.path.basename(f).replace('.json', '')
    if r.returncode != 0:
        print(f'| {name} | {len(tasks)} | {len(seen)} | {procs} | {rec} | {sumrt:.0f} | error: {r.stderr.strip()[:120]} | | {wall:.1f} |'); continue
    out = json.loads(r.stdout)
    best = out['makespan_us'] / 1e6
    print(f'| {name} | {len(tasks)} | {len(seen)} | {procs} | {rec:.0f} | {sumrt:.0f} | {best:.1f} | {best/rec:.2f} | {wall:.1f} |', flush=True)
