#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Held-out pod lists for `xpool sim`: drawn from the trace's default list the way its README
describes the published variants, with shares the data folder does not have, so xpool's policy
can be checked on workloads it was not tuned on (docs/simulator.md, "Held out").

  bench/sim_heldout.py DATA_DIR OUT_DIR

writes OUT_DIR/openb_pod_list_{gpushare60,multigpu50,gpuspec33,cpu250}.csv (seeded: the same
files each time). The kinds: gpushareXX, XX % of the GPU demand from pods sharing a GPU;
multigpuXX, XX % of the GPU demand from multi-GPU pods (the CPU-only pods kept, the GPU pods drawn
from the two pools by demand); gpuspecXX, XX % of GPU pods bound to models, their gpu_spec drawn
from the gpuspec20 list's; cpuXXX, XX.X % of the pods CPU-only
(drawn again), the GPU pods sampled without repeats."""
import csv
import os
import random
import sys


def demand(r):
    g = int(r['num_gpu'])
    return int(r['gpu_milli']) if g == 1 else 1000 * g


def by_demand(rng, cpu, a, b, frac, n):
    """n pods: the CPU-only pods, then GPU pods, pool a supplying frac of the GPU demand."""
    res, da, db = list(cpu), 0, 0
    while len(res) < n:
        if a and da <= frac * (da + db):
            r = rng.choice(a)
            da += demand(r)
        else:
            r = rng.choice(b)
            db += demand(r)
        res.append(r)
    return res


def variant(rows, specs, kind, pct, seed):
    rng = random.Random(seed)
    n = len(rows)
    gpu = [r for r in rows if int(r['num_gpu']) > 0]
    cpu = [r for r in rows if int(r['num_gpu']) == 0]
    if kind == 'gpushare':
        share = [r for r in gpu if int(r['num_gpu']) == 1 and int(r['gpu_milli']) < 1000]
        res = by_demand(rng, cpu, share, [r for r in gpu if r not in share], pct / 100, n)
    elif kind == 'multigpu':
        multi = [r for r in gpu if int(r['num_gpu']) > 1]
        res = by_demand(rng, cpu, multi, [r for r in gpu if int(r['num_gpu']) == 1], pct / 100, n)
    elif kind == 'gpuspec':
        res = []
        for r in rows:
            r = dict(r)
            if int(r['num_gpu']) > 0:
                r['gpu_spec'] = rng.choice(specs) if rng.random() < pct / 100 else ''
            res.append(r)
    else:
        k = int(n * pct / 100)
        res = [rng.choice(cpu) for _ in range(k)] + rng.sample(gpu, min(len(gpu), n - k))
    rng.shuffle(res)
    return res


def main():
    data, out = sys.argv[1], sys.argv[2]
    src = os.path.join(data, 'openb_pod_list_default.csv')
    rows = list(csv.DictReader(open(src)))
    specs = [r['gpu_spec'] for r in csv.DictReader(open(os.path.join(data, 'openb_pod_list_gpuspec20.csv')))
             if r['gpu_spec']]
    os.makedirs(out, exist_ok=True)
    for seed, (kind, pct, name) in enumerate([('gpushare', 60, 'gpushare60'), ('multigpu', 50, 'multigpu50'),
                                              ('gpuspec', 33, 'gpuspec33'), ('cpu', 25, 'cpu250')], 1):
        with open(os.path.join(out, 'openb_pod_list_%s.csv' % name), 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator='\n')
            w.writeheader()
            for i, r in enumerate(variant(rows, specs, kind, pct, seed)):
                w.writerow(dict(r, name='openb-pod-%04d' % i))


main()
