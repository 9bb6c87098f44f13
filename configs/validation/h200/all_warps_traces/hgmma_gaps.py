# Per fa3_forward instance in a cuobjdump -sass listing (python3 hgmma_gaps.py listing.txt): the
# runs of HGMMAs of one kind (SS or RS, and the shape), the mean number of instructions between
# two consecutive HGMMAs of a run, and which kinds of instruction those are; one line an instance.
# Session 57 (2026-12-01), for kernels/microbench/README.md.
import re,sys,collections
cur=None; funcs=collections.OrderedDict()
for l in open(sys.argv[1]):
    m=re.search(r'Function : (\S+)',l)
    if m: cur=m.group(1); funcs[cur]=[]; continue
    if cur is None: continue
    m=re.match(r'\s+/\*[0-9a-f]+\*/\s+(.*?);',l)
    if m: funcs[cur].append(m.group(1).strip())
def traits(name):
    m=re.search(r'TraitsI(.*?)EEE',name)
    return re.sub(r'IL|Li|Lb','',m.group(1)) if m else name[-40:]
for f,ins in funcs.items():
    if 'fa3_forward' not in f: continue
    runs=[]; cur_run=None; between=[]
    for x in ins:
        op=x.split()[0] if not x.startswith('@') else x.split()[1]
        if op.startswith('HGMMA'):
            shape=op.split('.')[1]
            kind='RS' if re.search(r'HGMMA\S*\s+R\d+,\s*R\d+,',x) else 'SS'
            key=(kind,shape)
            if cur_run and cur_run['key']==key and len(between)<40:
                cur_run['n']+=1; cur_run['gap']+=len(between); cur_run['ops'].update(between)
            else:
                cur_run={'key':key,'n':1,'gap':0,'ops':collections.Counter()}; runs.append(cur_run)
            between=[]
        else:
            between.append(re.sub(r'\..*','',op))
    agg=collections.defaultdict(lambda:[0,0,0,collections.Counter()])
    for r in runs:
        if r['n']<3: continue
        a=agg[r['key']]; a[0]+=1; a[1]+=r['n']-1; a[2]+=r['gap']; a[3].update(r['ops'])
    s=' | '.join('%s %s x%d: %.1f between (%s)'%(k[0],k[1],a[1]//max(a[0],1)+1,a[2]/max(a[1],1),','.join('%s:%.1f'%(o,c/a[1]) for o,c in a[3].most_common(6))) for k,a in agg.items())
    print(('TRACED ' if 'ELb1EEEE' in f and False else '')+traits(f)+'  '+s)
