#!/usr/bin/env python3
"""Independent check of Partex's reading of SAGA instances (issue 28): N random SAGA problem instances
(fork-joins, out-trees, layered graphs; 2-4 nodes; written as SAGA's JSON), a plan of each by every list
heuristic and best (partex-cli schedule --time-limit 2 -o), each plan's makespan recomputed here in
SAGA's model (ANRGUSC/saga, src/saga/__init__.py, Schedule.get_earliest_start_time: the data of each
dependency arrives at parent.end + size / speed(link), one transfer per dependency; a node runs its
tasks in the plan's order) and compared with the makespan the plan file reports (rounded to 1e-3);
and best against every heuristic. No Partex code is used here.
Usage: scripts/instances/saga_model_check.py build/bin/partex-cli N"""
import json, random, subprocess, sys, os, tempfile
cli, N = sys.argv[1], int(sys.argv[2])
algos = ['heft', 'cpop', 'peft', 'minmin', 'maxmin', 'sufferage', 'mct', 'met', 'olb', 'duplex', 'etf', 'hbmct', 'best']
tmp = tempfile.mkdtemp()
worst_dev = 0.0; losses = 0; plans = 0
for k in range(N):
    rng = random.Random(k)
    kind = ['fork-join', 'layered', 'out-tree'][k % 3]
    tasks, deps = [], []
    if kind == 'fork-join':
        w = rng.randint(3, 8); n = w + 2
        for i in range(1, w + 1): deps += [(0, i), (i, n - 1)]
    elif kind == 'out-tree':
        n = 15; deps = [((i - 1) // 2, i) for i in range(1, n)]
    else:
        n = 16
        for l in range(1, 4):
            for x in range(4):
                for f in set(rng.randrange(4) + 4 * (l - 1) for _ in range(rng.randint(1, 3))): deps.append((f, 4 * l + x))
    nodes = [('N%d' % d, round(rng.uniform(0.5, 2), 3)) for d in range(rng.randint(2, 4))]
    edges = [{'source': a, 'target': b, 'speed': (round(rng.uniform(0.2, 3), 3) if a != b else None)}
             for i, (a, _) in enumerate(nodes) for (b, _) in nodes[i:]]
    inst = {'name': 'r%d' % k, 'task_graph': {'tasks': [{'name': 't%02d' % i, 'cost': round(rng.uniform(1, 10), 3)} for i in range(n)],
            'dependencies': [{'source': 't%02d' % a, 'target': 't%02d' % b, 'size': round(rng.uniform(1, 10) * (0.3 if k % 2 else 3), 3)} for a, b in deps]},
            'network': {'nodes': [{'name': a, 'speed': s} for a, s in nodes], 'edges': edges}}
    path = os.path.join(tmp, 'r%d.json' % k); json.dump(inst, open(path, 'w'))
    cost = {t['name']: t['cost'] for t in inst['task_graph']['tasks']}
    speed = dict(nodes); link = {}
    for e in edges:
        link[(e['source'], e['target'])] = link[(e['target'], e['source'])] = e['speed']
    res = {}
    for a in algos:
        plan = os.path.join(tmp, 'r%d.%s.plan.json' % (k, a))
        r = subprocess.run([cli, 'schedule', path, '--algo', a, '--time-limit', '2', '-o', plan, '--json'], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        p = json.load(open(plan)); plans += 1
        dev = {o['name']: o['device'] for o in p['operators']}
        order = {}
        for o in sorted(p['operators'], key=lambda o: o['order']): order.setdefault(o['device'], []).append(o['name'])
        end = {}; pos = {d: 0 for d in order}; free = {d: 0.0 for d in order}
        while len(end) < n:
            moved = False
            for d, ts in order.items():
                while pos[d] < len(ts):
                    t = ts[pos[d]]
                    ins = [x for x in inst['task_graph']['dependencies'] if x['target'] == t]
                    if any(x['source'] not in end for x in ins): break
                    st = free[d]
                    for x in ins:
                        s = dev[x['source']]
                        arr = end[x['source']] + (0 if s == d else x['size'] / link[(s, d)])
                        st = max(st, arr)
                    end[t] = st + cost[t] / speed[d]; free[d] = end[t]; pos[d] += 1; moved = True
            assert moved, 'deadlock'
        mk = max(end.values())
        dev_ = abs(mk - p['makespan_us']); worst_dev = max(worst_dev, dev_)
        res[a] = mk
    if res['best'] > min(v for a, v in res.items() if a != 'best') * (1 + 1e-9): losses += 1; print('best worse on', path, res)
print(f'{N} instances, {plans} plans: largest |reported - SAGA model| = {worst_dev:.2e} time units (plan files round to 1e-3); best worse than a heuristic on {losses}')
