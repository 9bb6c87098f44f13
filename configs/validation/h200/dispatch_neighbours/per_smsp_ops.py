# Mean span per op of the consumer warps, by SMSP (warp index mod 4), and the load warp's spans
# (warps 0-3), from a measured chrome trace.
# usage: python3 per_smsp_ops.py TRACE.json[.gz]
import json, sys, gzip, collections, statistics as st
path = sys.argv[1]
op = gzip.open if path.endswith('.gz') else open
ev = [e for e in json.load(op(path, 'rt'))['traceEvents'] if e.get('ph') == 'X' and e.get('cat') != 'unit']
ctas = len(set(e['pid'] for e in ev))
consumer, producer = collections.defaultdict(list), collections.defaultdict(list)
for e in ev:
    if e['tid'] >= 4:
        consumer[(e['name'], e['tid'] % 4)].append(e['dur'] * 1000)
    else:
        producer[(e['name'], e['tid'])].append(e['dur'] * 1000)
print('%-40s' % 'consumer op, mean ns, by SMSP', ' '.join('%8d' % s for s in range(4)))
for n in sorted(set(k[0] for k in consumer)):
    print('%-40s' % n, ' '.join('%8.1f' % st.mean(consumer[(n, s)]) if consumer[(n, s)] else '       -' for s in range(4)))
print('load warp (%d CTAs)' % ctas)
for (n, w), v in sorted(producer.items(), key=lambda x: (x[0][1], x[0][0])):
    print('   w%d %-40s n=%d mean %.1f ns, %.0f us per CTA' % (w, n, len(v), st.mean(v), sum(v) / 1000 / ctas))
