#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a replay left unallocated, recounted from `xpool sim --export DIR`'s files alone (not the
simulator's counters): the free GPU milli by piece size, the partly used GPUs by what they hold
(and the points of the cluster each kind of GPU leaves free), the pods that fit nowhere by
request, where the small shares went, and a ceiling for better packing of the shares: the shares
the replay placed packed again offline onto as few GPUs as first-fit decreasing finds (no CPU,
memory, node or arrival order), the GPUs that saves given to the one-GPU pods it dropped
(optimistic: it ignores every constraint but the GPUs' 1000 milli and the arrival order)
(docs/simulator.md, "What is left, and what was tried").

  bench/sim_leftover.py DIR [TOP]

TOP (25) bounds each list."""
import collections
import csv
import json
import sys


def gpu_request(pod):
    """The pod's nvidia.com/gpu request as written (`460m`, `2`), None without one."""
    got = None
    for c in pod['spec']['containers']:
        res = c.get('resources', {})
        got = (res.get('requests') or res.get('limits') or {}).get('nvidia.com/gpu', got)
    return got


def first_fit_decreasing(shares):
    """The GPUs (their milli used) the shares take packed largest first, each on the first GPU
    with room."""
    gpus = []
    for m in sorted(shares, reverse=True):
        for i, used in enumerate(gpus):
            if used + m <= 1000:
                gpus[i] += m
                break
        else:
            gpus.append(m)
    return gpus


def print_repack_ceiling(held, dropped, total):
    """The allocation if the placed shares were packed first-fit decreasing and the GPUs that
    frees took one-GPU pods the replay dropped."""
    used = sum(sum(on) for on in held.values())
    shared = [on for on in held.values() if any(m < 1000 for m in on)]
    shares = [m for on in shared for m in on]
    repacked = first_fit_decreasing(shares)
    saved = len(shared) - len(repacked)
    print('allocated: %.3f %%; GPUs holding shares: %d (%d shares, %.3f points free on them)'
          % (100 * used / total, len(shared), len(shares),
             100 * (1000 * len(shared) - sum(shares)) / total))
    print('the same shares first-fit decreasing: %d GPUs (%.3f points free), 810m alone %d -> %d'
          % (len(repacked), 100 * (1000 * len(repacked) - sum(shares)) / total,
             sum(1 for on in shared if on == [810]), sum(1 for g in repacked if g == 810)))
    whole = dropped.get('1', 0)
    print('GPUs saved: %d; one-GPU pods dropped: %d; ceiling: %.3f %%'
          % (saved, whole, 100 * (used + 1000 * min(saved, whole)) / total))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit('usage: sim_leftover.py DIR [TOP]')
    d = sys.argv[1]
    top = sys.argv[2] if len(sys.argv) == 3 else '25'
    if not top.isdigit() or int(top) < 1:
        sys.exit('sim_leftover.py: TOP: a count of 1 or more, not %r' % top)
    top = int(top)
    with open(d + '/nodes.json') as f:
        nodes = json.load(f)['items']
    with open(d + '/pods.json') as f:
        pods = {p['metadata']['name']: gpu_request(p) for p in json.load(f)['items']}
    gpus = {n['metadata']['name']: int(n['status']['allocatable'].get('nvidia.com/gpu', '0'))
            for n in nodes}
    held, dropped = collections.defaultdict(list), collections.Counter()
    with open(d + '/placements.csv') as f:
        for row in csv.DictReader(f):
            if not row['node']:
                dropped[pods[row['pod']]] += 1
                continue
            for part in filter(None, row['devices'].split(';')):
                index, milli = part.split(':')
                held[(row['node'], int(index))].append(int(milli))
    total = 1000 * sum(gpus.values())
    pieces, kinds = collections.Counter(), collections.Counter()
    for node, n in gpus.items():
        for i in range(n):
            on = sorted(held.get((node, i), []), reverse=True)
            left = 1000 - sum(on)
            if left > 0:
                pieces[left // 10 * 10] += left
            if 0 < left < 1000:
                kinds[tuple(on)] += 1
    print('free: %.3f %% of %d GPUs' % (100 * sum(pieces.values()) / total, total // 1000))
    for k in sorted(pieces):
        print('  pieces of %d-%d milli: %.3f points' % (k, k + 9, 100 * pieces[k] / total))
    print('partly used GPUs by what they hold (count, points left free):')
    for k, v in kinds.most_common(top):
        print('  %-24s %5d %.3f' % ('+'.join(map(str, k)), v, 100 * v * (1000 - sum(k)) / total))
    print('fit nowhere, by GPU request:', ', '.join('%s %d' % kv for kv in dropped.most_common(top)))
    small = collections.Counter()
    for on in held.values():
        for m in on:
            if m < 200:
                small['%d on %s' % (m, '+'.join(map(str, sorted(on, reverse=True))))] += 1
    print('shares below 200 milli, with what they share a GPU with:',
          ', '.join('%s: %d' % kv for kv in small.most_common(top)))
    print_repack_ceiling(held, dropped, total)


if __name__ == '__main__':
    try:
        main()
    except OSError as e:
        sys.exit('sim_leftover.py: %s: %s (DIR is what `xpool sim --export DIR` wrote)'
                 % (e.filename, e.strerror))
    except (ValueError, KeyError) as e:
        sys.exit('sim_leftover.py: not an export of `xpool sim` (%s: %s)'
                 % (type(e).__name__, e))
