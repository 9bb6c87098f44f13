# usage: python3 step_spans.py TRACE.json[.gz] [WARP]
# The most common sequence of spans of one consumer warp (default 5) between two of its mma_qk
# spans, in the middle half of the first CTA's timeline, with each span's median duration.
import json, sys, gzip, collections, statistics as st
path = sys.argv[1]
warp = int(sys.argv[2]) if len(sys.argv) > 2 else 5
op = gzip.open if path.endswith('.gz') else open
ev = json.load(op(path, 'rt'))['traceEvents']
pid = sorted(set(e['pid'] for e in ev if e.get('ph') == 'X'))[0]
sp = sorted((e['ts'], e['dur'], e['name']) for e in ev
            if e.get('ph') == 'X' and e.get('cat') != 'unit' and e['tid'] == warp and e['pid'] == pid)
idx = [i for i, s in enumerate(sp) if s[2] == 'mma_qk']
mid = idx[len(idx) // 4:3 * len(idx) // 4]
pattern = collections.defaultdict(list)
for a, b in zip(mid, mid[1:]):
    chunk = sp[a:b]
    pattern[tuple(c[2] for c in chunk)].append(([c[1] * 1000 for c in chunk], (sp[b][0] - sp[a][0]) * 1000))
key, steps = max(pattern.items(), key=lambda x: len(x[1]))
print('warp %d: %d steps of this sequence, step median %.0f ns' % (warp, len(steps), st.median(s[1] for s in steps)))
for i, n in enumerate(key):
    print('   %-34s %7.1f ns' % (n, st.median(s[0][i] for s in steps)))
