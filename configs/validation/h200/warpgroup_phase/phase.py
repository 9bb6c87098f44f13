# usage: python3 phase.py TRACE.json[.gz] [WARP_A WARP_B] [--steps N]
# The relative phase of two consumer warpgroups in a measured or model chrome trace, through one
# warp of each (default warps 4 and 8): for every KV step of warp A, d = the time from A's PV
# completing (the end of its second wgmma.wait_group after the PV) to warp B's next mma_qk start
# (negative: B issued its QK while A's PV was still running). Prints, per CTA, the median d each
# way; then, pooled over the CTAs, A's chain (PV done -> its next QK) and its softmax spans by
# quintile of d; and with --steps N, the first N steps of the first CTA in order.
import json, gzip, bisect, collections, statistics as st

import argparse
ap = argparse.ArgumentParser()
ap.add_argument('trace')
ap.add_argument('warps', nargs='*', type=int, default=[4, 8])
ap.add_argument('--steps', type=int, default=0)
opt = ap.parse_args()
path, (wa, wb), steps_shown = opt.trace, opt.warps, opt.steps
opener = gzip.open if path.endswith('.gz') else open
events = [e for e in json.load(opener(path, 'rt'))['traceEvents'] if e.get('ph') == 'X' and e.get('cat') != 'unit']


def spans_of(pid, warp):
    return sorted((e['ts'] * 1000, (e['ts'] + e['dur']) * 1000, e['name'].split('[')[0]) for e in events
                  if e['pid'] == pid and e['tid'] == warp)


def steps_of(spans):
    """Per KV step with a PV: (QK start, PV done, the spans from PV done to the next QK start)."""
    qk = [i for i, s in enumerate(spans) if s[2] == 'mma_qk']
    out = []
    for i, k in zip(qk, qk[1:]):
        waits = [s for s in spans[i:k] if s[2] == 'wait wgmma.wait_group']
        if any(s[2] == 'mma_pv' for s in spans[i:k]) and len(waits) >= 2:
            done = waits[1][1]
            out.append((spans[i][0], done, spans[k][0], [s for s in spans[i:k] if s[0] >= done]))
    return out


rows, seq = [], []
for n, pid in enumerate(sorted(set(e['pid'] for e in events))):
    line = []
    for a, b in ((wa, wb), (wb, wa)):
        b_qk = [s[0] for s in spans_of(pid, b) if s[2] == 'mma_qk']
        ds = []
        for qk_start, done, next_qk, after in steps_of(spans_of(pid, a)):
            k = bisect.bisect_left(b_qk, qk_start + 1)  # B's first QK after A's own QK started
            if k == len(b_qk): continue
            d = b_qk[k] - done
            ds.append(d)
            dur = collections.Counter()
            for s in after: dur[s[2]] += s[1] - s[0]
            rows.append((d, next_qk - done, dur['softmax_max'], dur['softmax_exp'], dur['rescale_o'],
                         dur['wait bar.pingpong']))
            if n == 0: seq.append((qk_start, a, d))
        if ds: line.append('w%d -> w%d: d median %+.0f ns (%d steps)' % (a, b, st.median(ds), len(ds)))
    if line: print('CTA %s: %s' % (pid, ' | '.join(line)))

if rows:
    rows.sort()
    print('\nwarp A\'s chain from its PV done to its next QK, by quintile of d (ns, means)')
    print('%-18s %5s %7s %7s %7s %7s %9s' % ('d', 'steps', 'chain', 'max', 'exp', 'rescale', 'pingpong'))
    for q in range(5):
        part = rows[q * len(rows) // 5:(q + 1) * len(rows) // 5]
        if part:
            print('%+7.0f .. %+7.0f %5d ' % (part[0][0], part[-1][0], len(part)) +
                  ' '.join('%7.0f' % st.mean(r[j] for r in part) for j in range(1, 6)))
if steps_shown:
    print('\nfirst CTA, steps in order: d after each warp\'s PV (ns)')
    for _, a, d in sorted(seq)[:steps_shown]:
        print('  w%d -> w%d  %+6.0f' % (a, wb if a == wa else wa, d))
