# usage: python3 rendezvous_skew.py TRACE.json[.gz]
# Per consumer warpgroup and (tile, block): spread of the 4 warps' mma span starts, and which warp is last.
import json, sys, gzip, collections, statistics as st
path = sys.argv[1]
op = gzip.open if path.endswith('.gz') else open
ev = json.load(op(path, 'rt'))['traceEvents']
starts = collections.defaultdict(dict)
for e in ev:
    if e.get('ph') != 'X' or e['name'] not in ('mma_qk', 'mma_pv'): continue
    a = e.get('args', {})
    key = (e['name'], e['pid'], e['tid'] // 4, a.get('tile'), a.get('block'))
    starts[key][e['tid']] = (e['ts'], e['dur'])
for opn in ('mma_qk', 'mma_pv'):
    sk, last, durs_first, durs_last = [], collections.Counter(), [], []
    for k, v in starts.items():
        if k[0] != opn or len(v) != 4: continue
        ts = sorted(v.items(), key=lambda x: x[1][0])
        sk.append((ts[-1][1][0] - ts[0][1][0]) * 1000)
        last[ts[-1][0] % 4] += 1
        durs_first.append(ts[0][1][1] * 1000); durs_last.append(ts[-1][1][1] * 1000)
    if sk:
        print(opn, 'groups', len(sk), 'skew ns median %.1f mean %.1f' % (st.median(sk), st.mean(sk)),
              'last warp smsp', dict(last), 'dur first-arriver %.1f last-arriver %.1f' % (st.median(durs_first), st.median(durs_last)))
