# Mean span per op of the consumer warps, by SMSP (warp index mod 4), and the load warp's spans, from a measured chrome trace.
# usage: python3 per_smsp_ops.py TRACE.json.gz
import json, sys, gzip, collections, statistics as st
ev = json.load(gzip.open(sys.argv[1], 'rt'))['traceEvents']
d = collections.defaultdict(list)
for e in ev:
    if e.get('ph') != 'X' or e.get('cat') == 'unit' or e['tid'] < 4: continue
    d[(e['name'], e['tid'] % 4)].append(e['dur'] * 1000)
names = sorted(set(k[0] for k in d))
print('%-28s' % 'op (mean ns) SMSP', ' '.join('%8d' % s for s in range(4)))
for n in names:
    print('%-28s' % n[:28], ' '.join('%8.1f' % st.mean(d[(n, s)]) if d[(n, s)] else '       -' for s in range(4)))
# load warp ops
d0 = collections.defaultdict(list)
for e in ev:
    if e.get('ph') == 'X' and e.get('cat') != 'unit' and e['tid'] < 4: d0[(e['name'], e['tid'])].append(e['dur'] * 1000)
for k, v in sorted(d0.items()): print('producer w%d %-24s n=%d mean %.1f ns sum/CTA-ish %.0f us' % (k[1], k[0], len(v), st.mean(v), sum(v) / 1000 / 2))
