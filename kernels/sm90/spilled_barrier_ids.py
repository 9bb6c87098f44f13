#!/usr/bin/env python3
"""Named barriers whose id ptxas reloads from local memory, per fa3_forward instance.

A `bar.sync` / `bar.arrive` with a register id waits for that register; when ptxas has spilled
the id, an LDL right before the barrier puts a local-memory load (an L1 miss under the kernel's
load: hundreds of ns) on the path, and in a traced build between the clock reads around the
wait. Reads a `cuobjdump -sass` listing, prints per fa3_forward function its LDL count, its
barriers with a register id and how many of those ids were last written by an LDL, whether the
instance is traced (`Traits<..., kTrace = true, ...>`, the ninth template argument), then the
totals. Exits 2 when the file cannot be read, 1 when it holds no fa3_forward function. A report,
not a check: in the builds of 2026-11-30 (CUDA 13.0, cuobjdump on an H200) the traced head_dim
256 instances reload none (they read the ids afresh, Traits::kFreshBarrierIds), the traced static
192 x 128 pingpong instances at head_dim 64 reload 12 each, the traced dynamic no-pingpong hd64
one 4, the plain dynamic head_dim 256 ones 1-2.

Usage (on a GPU machine, where cuobjdump is, from the repository root):
    cuobjdump -sass -arch sm_90a build/attnsim > /tmp/sass.txt
    python3 kernels/sm90/spilled_barrier_ids.py /tmp/sass.txt
"""
import re
import sys

INSTRUCTION = re.compile(r'/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);')
# Itanium mangling of Traits<int, int, int, int, bool, bool, int, int, bool kTrace, ...>.
TRAITS_ARGS = re.compile(r'TraitsIL(.*?)EEE')


def traced(function: str) -> bool:
    """Whether a mangled fa3_forward<Traits<...>> is a traced instance (ninth argument true)."""
    m = TRAITS_ARGS.search(function)
    if not m:
        return False
    args = re.findall(r'L([ib])(n?\d+)E', 'L' + m.group(1) + 'E')
    return len(args) > 8 and args[8] == ('b', '1')


def spilled_ids(body: str) -> tuple[int, int, int]:
    """(LDL count, barriers with a register id, ids last written by an LDL) of one function."""
    code = [(m.group(3), m.group(4)) for m in INSTRUCTION.finditer(body)]
    ldl = sum(1 for op, _ in code if op.startswith('LDL'))
    bars = spilled = 0
    for i, (op, args) in enumerate(code):
        if not op.startswith(('BAR.SYNC', 'BAR.ARV')):
            continue
        reg = args.split(',')[0].strip()
        if not reg.startswith('R'):
            continue  # an immediate id
        bars += 1
        for j in range(i - 1, -1, -1):  # the last instruction that wrote it, in program order
            if code[j][1].split(',')[0].strip() == reg:
                spilled += code[j][0].startswith('LDL')
                break
    return ldl, bars, spilled


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            text = f.read()
    except OSError as e:
        print(f'spilled_barrier_ids.py: cannot read {sys.argv[1]}: {e.strerror}', file=sys.stderr)
        return 2
    parts = re.split(r'\n\s*Function : (\S+)', text)
    total = traced_total = functions = 0
    for name, body in zip(parts[1::2], parts[2::2]):
        if 'fa3_forward' not in name:
            continue
        functions += 1
        ldl, bars, spilled = spilled_ids(body)
        total += spilled
        traced_total += spilled if traced(name) else 0
        kind = 'traced' if traced(name) else 'plain'
        print(f'{name} ({kind}): LDL {ldl}, barriers with a register id {bars}, ids reloaded by LDL {spilled}')
    if functions == 0:
        print(f'spilled_barrier_ids.py: {sys.argv[1]}: no fa3_forward function (expected a cuobjdump -sass listing)',
              file=sys.stderr)
        return 1
    print(f'ids reloaded by LDL: {total} ({traced_total} in traced instances)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
