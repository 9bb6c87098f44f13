# usage: python3 neighbours_in_dispatch.py TRACE.json[.gz]
# For each consumer warp's dispatch span (mma_qk / mma_pv) in a measured chrome trace: what the
# other warps of its SMSP (same CTA, warp % 4 equal) were doing meanwhile, time-weighted.
import json, sys, gzip, collections, statistics as st
path = sys.argv[1]
op = gzip.open if path.endswith('.gz') else open
ev = json.load(op(path, 'rt'))['traceEvents']
spans = collections.defaultdict(list)  # (pid, tid) -> [(ts, end, name)]
for e in ev:
    if e.get('ph') != 'X' or e.get('cat') == 'unit': continue
    spans[(e['pid'], e['tid'])].append((e['ts'], e['ts'] + e['dur'], e['name']))
for k in spans: spans[k].sort()
occ = {d: collections.defaultdict(float) for d in ('mma_qk', 'mma_pv')}
tot = {d: 0.0 for d in occ}
by_busy = {d: collections.defaultdict(list) for d in occ}
for (pid, tid), ss in spans.items():
    nbs = [k for k in spans if k[0] == pid and k[1] % 4 == tid % 4 and k[1] != tid]
    for (a, b, n) in ss:
        if n not in occ or b <= a: continue
        tot[n] += b - a
        busy = 0.0
        for k in nbs:
            for (c, d, m) in spans[k]:
                if d <= a: continue
                if c >= b: break
                o = min(b, d) - max(a, c)
                if o > 0:
                    key = 'wait' if m.startswith('wait') else m
                    occ[n][key] += o
                    if key != 'wait': busy += o
        by_busy[n][round(busy / (b - a) * 2) / 2].append(b - a)
for n in occ:
    print(n, 'total us', round(tot[n], 1), 'spans', sum(len(v) for v in by_busy[n].values()))
    for k, v in sorted(occ[n].items(), key=lambda x: -x[1]):
        print('   %-22s %.3f neighbours on average' % (k, v / tot[n]))
    for k in sorted(by_busy[n]):
        v = by_busy[n][k]
        print('   busy neighbours ~%.1f: n=%d median %.1f ns' % (k, len(v), st.median(v) * 1000))
