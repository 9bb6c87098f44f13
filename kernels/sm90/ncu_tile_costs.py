#!/usr/bin/env python3
"""Where the plain (uninstrumented) SM90 kernel's warps spend their time per work tile, from ncu's
per-instruction warp-state samples; with --against, a schedule change against its base, op by op.

Reads the source page of one profiled launch (`ncu --section SourceCounters --page source
--print-source sass --csv ... attnsim run ...`, the output of that command as is: attnsim's lines
first, then the kernel's table) of a persistent fa3_sm90 kernel (with or without pingpong and
intra-warpgroup overlap; of the dynamic scheduler's, the consumers only), and splits the samples
of the SASS into the regions the simulator has ops for:

- the load warp (the code between the producer warpgroup's `setmaxnreg` dealloc and the consumers'
  alloc): its tile bookkeeping (instructions run once per tile, outside its waits and copies), the
  pipeline_q.empty wait, the Q copy, and per KV block the pipeline_k/v.empty waits, the K and V
  copies and the loop's own instructions;
- a consumer warp's tile head (from the tile loop's top to the KV loop): the pipeline_q.full
  wait, and the rest, the peeled first KV block;
- its tile tail: the wait for the tile's last PV (the last WARPGROUP.DEPBAR between the KV loop
  and the O store; without overlap the loop's last step has it), final_o (row sums to the
  async-proxy fence), the named barrier after it, the O store, and the LSE and tile loop up to
  its back branch;
- its steady KV step (kv_loop): the pingpong turns, the k/v full waits, the QK and PV
  dispatches, the wgmma waits and the compute (softmax, rescale, pack, loop) between them, in
  the order ptxas laid them out.

A region's time per tile (per KV step: divided by the steps per tile) is its share of its warps'
samples times the CTA's time per tile (`--kernel-us` / `--tiles-per-cta`): ncu samples each
SMSP's resident warps in turn, so a warp's samples are proportional to its time, and a region's
share of them to the time the warp spends there. The samples of a try_wait loop fall on the
branch after its first try_wait (the waiting warp sleeps in it). Run without a GPU, on a CSV
already written.

Usage: kernels/sm90/ncu_tile_costs.py SRC.csv[.gz] [--kernel-us US] [--tiles-per-cta N]
           [--against BASE.csv[.gz] [--against-us US] | --predicted TRACE.json [--clock-ghz F]]

--kernel-us and --tiles-per-cta default to what `attnsim run` printed above the table (the launch's
time; the problem, the kernel's m_block and the CTAs). --predicted compares the consumers' regions
with the simulator's trace of the same problem, in cycles (the kernel's at the clock probed after
its launch, an unlocked one: indicative).
"""
import argparse
import csv
import functools
import gzip
import json
import re
import sys


@functools.lru_cache(maxsize=None)
def read_lines(path):
    """The file's lines, gzip or not; read once per path (the page's header and its table are
    parsed apart, a base page is read for its time and its split)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def page_facts(path):
    """What `attnsim run` printed above ncu's table: (the launch's time in us, the SM clock probed
    right after it in GHz, the work tiles per CTA: ceil(seqlen_q / m_block) x batch x heads over
    the CTAs), each None where the page does not say."""
    text = "\n".join(l for l in read_lines(path) if not l.startswith('"'))
    found = lambda pattern: re.search(pattern, text)
    us, clock = found(r"measured\s+([\d.]+) us"), found(r"SM clock\s+([\d.]+) GHz")
    shape, tile, ctas = found(r" b(\d+) h(\d+)/\d+ sq(\d+)"), found(r"\bm(\d+) n\d+"), found(r"; (\d+) CTAs\)")
    tiles = None
    if shape and tile and ctas:
        batch, heads, seqlen = (int(g) for g in shape.groups())
        tiles = -(-seqlen // int(tile.group(1))) * batch * heads / int(ctas.group(1))
    return (float(us.group(1)) if us else None, float(clock.group(1)) if clock else None, tiles)


def read_sass(path):
    """(index, executed, samples, sass, address, barrier samples) per instruction of the kernel's
    table; the last: its samples whose stall reason is a barrier (0 where the page has no
    stall_barrier column)."""
    lines = read_lines(path)
    head = [i for i, l in enumerate(lines) if l.startswith('"Address"')]
    if not head:
        sys.exit(f"{path}: no ncu source table (a line starting with \"Address\")")
    rows = list(csv.reader(lines[head[0]:]))
    cols = rows[0]
    try:
        src, samples, executed, address = (cols.index(c) for c in (
            "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed", "Address"))
    except ValueError as e:
        sys.exit(f"{path}: {e} (expected ncu's SourceCounters source page)")
    barrier = cols.index("stall_barrier") if "stall_barrier" in cols else None
    out = []
    for i, r in enumerate(rows[1:]):
        if len(r) > max(src, samples, executed, address):
            out.append((i, int(r[executed] or 0), int(r[samples] or 0), r[src].strip(), r[address],
                        int(r[barrier] or 0) if barrier is not None and len(r) > barrier else 0))
    return out


def first(rows, text, after=-1):
    for r in rows:
        if r[0] > after and text in r[3]:
            return r[0]
    sys.exit(f"no instruction with {text!r} after {after}: not an fa3_sm90 kernel's SASS?")


def split(path, kernel_us, tiles_per_cta):
    """The kernel's time per region: (header line, [(section, what its figures are, [(name, ns,
    share of the section's samples, ns per KV block or None)])], the KV step's order of regions)."""
    rows = read_sass(path)
    dealloc = first(rows, "USETMAXREG.DEALLOC")
    alloc = first(rows, "USETMAXREG.TRY_ALLOC", dealloc)
    load = [r for r in rows if dealloc < r[0] < alloc]
    cons = [r for r in rows if r[0] >= alloc]
    us_per_tile = kernel_us / tiles_per_cta

    header = f"{path}: {kernel_us:.1f} us, {tiles_per_cta:.2f} tiles per CTA ({us_per_tile:.2f} us each)"
    sections = [load_warp(load, alloc, us_per_tile)]

    # A consumer warp's tile tail.
    ctotal = sum(r[2] for r in cons)
    store = first(cons, "UTMASTG")
    bounds = kv_loop_bounds(cons)
    _, loop_lo, loop_hi = bounds
    # The tile's last PV wait, after the KV loop; without intra-warpgroup overlap the loop's own
    # last step waits for it (no such row then).
    pv_waits = [r[0] for r in cons if "WARPGROUP.DEPBAR" in r[3] and loop_hi < r[0] < store]
    pv_wait = pv_waits[-1] if pv_waits else loop_hi
    fence = first(cons, "FENCE.VIEW.ASYNC", pv_wait)
    bar = first(cons, "BAR.SYNC", fence)
    last_store = max(r[0] for r in cons if "UTMASTG" in r[3])
    loop_end = max(r[0] for r in cons if r[0] > last_store and r[1] > 0 and "BRA" in r[3] and r[2] > 0)
    tail = ((("wait for the last PV", pv_wait, pv_wait),) if pv_waits else ()) + (
        ("final_o", pv_wait + 1, fence), ("wait bar.epilogue", fence + 1, bar + 1),
        ("store_o", bar + 2, last_store + 3), ("LSE and tile loop", last_store + 4, loop_end))
    # The tile's head: from the tile loop's top (the target of its back branch) to the KV loop: the
    # wait for the tile's Q (its first try_wait to the branch after it, and its retry loop) and the
    # rest, the peeled first KV block with its own waits and GEMMs.
    by_address = {r[4]: r[0] for r in cons}
    tops = [by_address[r[3].split()[-1]] for r in cons
            if "BRA" in r[3] and r[0] > loop_hi and by_address.get(r[3].split()[-1], loop_lo) < loop_lo]
    head_rows = []
    if tops:
        top = min(tops)
        q_full = first(cons, "TRYWAIT", top - 1)
        q_end = first(cons, "BRA", q_full)
        at = {r[0]: r for r in cons}
        while q_end + 1 in at and at[q_end + 1][1] != at[q_full][1]:
            q_end += 1
        q_wait = sum(r[2] for r in cons if q_full <= r[0] <= q_end)
        first_block = sum(r[2] for r in cons if top <= r[0] < loop_lo) - q_wait
        for name, s in (("wait pipeline_q.full", q_wait), ("first KV block (peeled)", first_block)):
            head_rows.append((name, 1000 * us_per_tile * s / ctotal, s / ctotal, None))
    sections.append(("consumer warps, the tile's head", f"{ctotal} samples: ns per tile", head_rows))
    tail_rows = []
    for name, lo, hi in tail:
        s = sum(r[2] for r in cons if lo <= r[0] <= hi)
        tail_rows.append((name, 1000 * us_per_tile * s / ctotal, s / ctotal, None))
    sections.append(("consumer warps, the tile's tail", f"{ctotal} samples: ns per tile", tail_rows))
    title, step_rows, order, steps = kv_loop(cons, us_per_tile, ctotal, bounds)
    sections.append(("consumer KV loop", title, step_rows))
    # What the regions account for: a consumer warp's tile is its head, its steps and its tail;
    # the rest of its samples (the prologue, code outside these regions) is the difference.
    step_ns = next(ns for name, ns, _, _ in step_rows if name == "step")
    parts = sum(ns for _, ns, _, _ in head_rows + tail_rows) + steps * step_ns
    sections.append(("consumer warps, the whole tile", "ns per tile", [
        ("head + steps x step + tail", parts, parts / (1000 * us_per_tile), None),
        ("the CTA's time per tile", 1000 * us_per_tile, 1.0, None)]))
    return header, sections, order


def load_warp(load, alloc, us_per_tile):
    """The load warp's section: per copy (Q once per tile, then K and V per KV block, in that
    order), the wait before it (its first try_wait to the back branch of its retry loop) and the
    copy itself (the arrive.expect_tx, the UTMALDGs, up to the last of their elect loops); the
    rest split into what runs once per tile and once per KV block. A load warp of another layout
    (the dynamic scheduler's, which peels the first K copy and publishes the tile slot) gives an
    empty section, named as such: the consumers' sections do not depend on it."""
    tiles = min(r[1] for r in load if "UTMALDG" in r[3])
    blocks = max(r[1] for r in load if "UTMALDG" in r[3])
    total = sum(r[2] for r in load)
    arrives = [r[0] for r in load if "SYNCS.ARRIVE" in r[3]]
    if len(arrives) != 3:
        return ("load warp", f"not split: {len(arrives)} arrive.expect_tx where a static kernel's has 3 "
                f"(Q, K, V): ns per tile", [])
    regions, covered, prev_end = {}, set(), load[0][0]
    for name, arrive in zip(("q", "k", "v"), arrives):
        w0 = first(load, "TRYWAIT", prev_end)
        w1 = max(r[0] for r in load if r[0] < arrive and "BRA" in r[3])
        nxt = next((r[0] for r in load if r[0] > arrive and "TRYWAIT" in r[3]), alloc)
        c1 = max(r[0] for r in load if arrive < r[0] < nxt and "BRA.U.ANY" in r[3])
        regions[f"wait pipeline_{name}.empty"] = sum(r[2] for r in load if w0 <= r[0] <= w1)
        regions[f"load_{name}"] = sum(r[2] for r in load if w1 < r[0] <= c1)
        covered.update(range(w0, c1 + 1))
        prev_end = c1
    regions["tile bookkeeping"] = sum(r[2] for r in load if r[0] not in covered and r[1] and r[1] <= tiles)
    regions["KV loop bookkeeping"] = sum(r[2] for r in load if r[0] not in covered and r[1] > tiles)
    per_block = blocks / tiles
    rows = []
    for name, s in regions.items():
        ns = 1000 * us_per_tile * s / total
        once_a_block = name not in ("wait pipeline_q.empty", "load_q", "tile bookkeeping")
        rows.append((name, ns, s / total, ns / per_block if once_a_block else None))
    return ("load warp", f"{total} samples, {blocks // tiles} KV blocks per tile: ns per tile, and per KV "
            "block for what runs once a block", rows)


def print_split(header, sections, order):
    """One kernel's split (what split() returns): each region's ns, its share of its section's
    samples and, for what the load warp runs once a KV block, its ns per block."""
    print(header)
    for section, title, rows in sections:
        print(f"{section} ({title})")
        for name, ns, share, per_block in rows:
            print(f"  {name:32s} {ns:8.0f}   ({100 * share:5.2f}%)" +
                  (f"   {per_block:6.0f} per block" if per_block is not None else ""))
    print("  order of the KV step: " + ", ".join(order))


def print_against(this, base):
    """Two kernels of one problem side by side (a schedule change against its base): each
    region's ns in both and the difference."""
    print(this[0])
    print("against " + base[0])
    base_rows = {(section, name): ns for section, _, rows in base[1] for name, ns, _, _ in rows}
    for section, title, rows in this[1]:
        names = [name for name, *_ in rows]
        names += [n for (t, n) in base_rows if t == section and n not in names]
        ns_of = {name: ns for name, ns, _, _ in rows}
        print(f"{section} ({title.split(': ', 1)[-1]}): this / base / difference")
        if not rows or not any(t == section for t, _ in base_rows):
            print("  (not split in both kernels)")
            continue
        for name in names:
            a, b = ns_of.get(name, 0.0), base_rows.get((section, name), 0.0)
            print(f"  {name:32s} {a:8.0f} {b:8.0f} {a - b:+8.0f}")
    print("  order of the KV step: " + ", ".join(this[2]))
    print("  base's order:         " + ", ".join(base[2]))


def model_region(span):
    """The region of this script that a span of the simulator's trace falls in: ("step", name)
    for what a consumer warp does per KV block, ("tile", name) per work tile, None otherwise."""
    name = re.sub(r"\[\d+\]( phase \d+)?$", "", span)
    step = {"softmax_max": "compute", "softmax_exp": "compute", "rescale_o": "compute", "loop_control": "compute",
            "mma_qk": "mma_qk (dispatch)", "mma_pv": "mma_pv (dispatch)", "wait bar.pingpong": "wait bar.pingpong (turn)",
            "wait pipeline_k.full": "wait pipeline_k.full", "wait pipeline_v.full": "wait pipeline_v.full",
            "wait wgmma.wait_group": "wait wgmma"}
    tile = {"wait pipeline_q.full": "wait pipeline_q.full", "final_o": "final_o", "wait bar.epilogue": "wait bar.epilogue",
            "store_o": "store_o", "tile_control": "tile control"}
    return ("step", step[name]) if name in step else ("tile", tile[name]) if name in tile else None


def model_split(path):
    """The simulator's Chrome trace of the same problem (`attnsim simulate ... --trace T --full-trace`,
    or `attnsim run ... --predicted-trace T`): its consumer warps' spans per KV step (over its
    mma_qk spans: the peeled first block and the tile's last PV wait included) and per tile (over its
    final_o spans), in cycles at the trace's clock. Returns (clock GHz, {(kind, region): cycles})."""
    try:
        doc = json.loads("\n".join(read_lines(path)))
    except (ValueError, UnicodeDecodeError) as e:
        sys.exit(f"{path}: not a JSON trace ({e})")
    clock = doc.get("otherData", {}).get("clock_ghz") if isinstance(doc, dict) else None
    if not clock:
        sys.exit(f"{path}: no otherData.clock_ghz (expected a trace attnsim simulate or run wrote)")
    events = doc["traceEvents"]
    consumers = {e["tid"] for e in events if e.get("name") == "thread_name" and e["args"]["name"].startswith("consumer")}
    spans = [e for e in events if e.get("ph") == "X" and e.get("tid") in consumers]
    steps = sum(e["name"] == "mma_qk" for e in spans)
    tiles = sum(e["name"] == "final_o" for e in spans)
    if not steps or not tiles:
        sys.exit(f"{path}: no consumer warp's mma_qk and final_o spans (a trace of an fa3_sm90 prediction, --full-trace?)")
    out = {}
    for e in spans:
        region = model_region(e["name"])
        if region:
            out[region] = out.get(region, 0.0) + e["dur"] * 1000 * clock / (steps if region[0] == "step" else tiles)
    return clock, out


def print_against_model(this, clock, model_clock, model, trace):
    """This kernel's consumer regions beside the model's, in cycles (the kernel's ns at the clock
    probed after its launch, the model's at its own) and as shares of the step or the tile, which
    need no clock."""
    print(this[0])
    print(f"against the model ({trace}, {model_clock:.3f} GHz); this kernel's ns at the {clock:.3f} GHz "
          "probed after its launch: cycles")
    rows = {(section, name): ns * clock for section, _, part in this[1] for name, ns, _, _ in part}
    wgmma = sum(v for (sec, n), v in rows.items() if sec == "consumer KV loop" and n.startswith("wait wgmma"))
    step_names = ["compute", "wait bar.pingpong (turn)", "wait pipeline_k.full", "mma_qk (dispatch)",
                  "wait pipeline_v.full", "mma_pv (dispatch)", "wait wgmma"]
    for title, kind, section, names in (
            ("consumer KV step (cycles per step; the model's wgmma waits include the tile's last PV wait)",
             "step", "consumer KV loop", step_names),
            ("consumer tile (cycles per tile; tile control: the kernel's LSE and tile loop)", "tile", None,
             ["wait pipeline_q.full", "final_o", "wait bar.epilogue", "store_o", "tile control"])):
        pairs = []
        for name in names:
            if kind == "step":
                k = wgmma if name == "wait wgmma" else rows.get((section, name), 0.0)
            else:
                k = next((v for (sec, n), v in rows.items()
                          if sec.startswith("consumer warps") and n == ("LSE and tile loop" if name == "tile control" else name)), 0.0)
            pairs.append((name, k, model.get((kind, name), 0.0)))
        total_k, total_m = sum(k for _, k, _ in pairs), sum(m for _, _, m in pairs)
        print(f"{title}: kernel / model / model over kernel / kernel's and model's shares of the sum")
        for name, k, m in pairs + [("sum", total_k, total_m)]:
            print(f"  {name:32s} {k:8.0f} {m:8.0f}   " + (f"{m / k:5.2f}" if k > 0 else "    -") +
                  f"   {100 * k / total_k:5.1f}% {100 * m / total_m:5.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--kernel-us", type=float,
                    help="the profiled launch's time, us (default: the time attnsim run printed on the page)")
    ap.add_argument("--tiles-per-cta", type=float,
                    help="work tiles / CTAs of the launch (default: from the problem and kernel attnsim run printed)")
    other = ap.add_mutually_exclusive_group()
    other.add_argument("--against", metavar="BASE_CSV",
                       help="another kernel's page on the same problem (the base schedule): print both and the difference")
    ap.add_argument("--against-us", type=float, help="with --against: that launch's time, us (default: its page's)")
    other.add_argument("--predicted", metavar="TRACE_JSON",
                       help="the simulator's Chrome trace of the same problem: print the consumers' regions beside "
                            "the model's, in cycles")
    ap.add_argument("--clock-ghz", type=float,
                    help="with --predicted: the launch's SM clock (default: the one probed after it, on the page)")
    a = ap.parse_args()
    us, clock, tiles = page_facts(a.csv)
    kernel_us, tiles_per_cta = a.kernel_us or us, a.tiles_per_cta or tiles
    if kernel_us is None or tiles_per_cta is None:
        ap.error(f"{a.csv}: the page does not say the launch's time and tiles per CTA: give --kernel-us and --tiles-per-cta")
    this = split(a.csv, kernel_us, tiles_per_cta)
    if a.predicted:
        clock = a.clock_ghz or clock
        if clock is None:
            ap.error(f"{a.csv}: the page does not say the SM clock: give --clock-ghz")
        print_against_model(this, clock, *model_split(a.predicted), a.predicted)
    elif a.against is None:
        print_split(*this)
    else:
        against_us = a.against_us or page_facts(a.against)[0]
        if against_us is None:
            ap.error("--against: its page does not say the launch's time: give --against-us")
        print_against(this, split(a.against, against_us, tiles_per_cta))


def kv_loop_bounds(cons):
    """(executions per instruction, first index, last index) of the consumers' KV loop: the
    instructions run as often as its HGMMAs."""
    per_block = max(r[1] for r in cons if "HGMMA" in r[3])
    loop = [r[0] for r in cons if r[1] == per_block]
    return per_block, loop[0], loop[-1]


def kv_loop(cons, us_per_tile, ctotal, bounds):
    """The steady KV loop of a consumer warp (the instructions run as often as its HGMMAs), cut at
    its landmarks in SASS order: each wait is its waiting instruction (a try_wait with the branch
    after it; a named barrier's BAR.SYNC; WARPGROUP.DEPBAR), and the code after a wait belongs to
    what follows it: after a K or V full wait, the GEMM's dispatch (mma_qk: both operands from
    shared memory; mma_pv: P from registers) up to the next wait; after a wgmma wait or a pingpong
    turn, the softmax, rescale, pack and the loop's own instructions ("compute"). With
    intra-warpgroup overlap the step is turn, k full, QK, v full, PV, wait 1 (QK done), softmax,
    wait 0 (PV done; ptxas may sink it into the softmax), rest; without it, or without pingpong,
    the same landmarks in their own order. A try_wait's retry loop (the instructions not run once
    per step, wherever ptxas placed them) is part of its wait, and samples stalled on a named
    barrier after a BAR.SYNC (which defers its blocking) are part of the turn. `ctotal`: the
    consumers' samples; `bounds`: kv_loop_bounds(cons). Returns (title,
    [(region, ns per step, share of the consumers' samples, None)], the step's order of regions,
    KV steps per tile and warp)."""
    per_block, lo, hi = bounds
    body = [r for r in cons if lo <= r[0] <= hi]
    # Executions per tile and warp: the async-proxy fence ends final_o once per tile in every warp.
    tile_warps = next(r[1] for r in cons if "FENCE.VIEW.ASYNC" in r[3])
    steps = per_block / tile_warps
    rs = lambda sass: re.search(r"HGMMA\S* R\d+, R\d+, gdesc", sass) is not None
    runs, label, order, ns, last_wait = [], "compute", [], {}, None
    i = 0
    while i < len(body):
        sass, n = body[i][3], 1
        if body[i][1] != per_block and last_wait:
            seg = last_wait  # a try_wait's retry loop, wherever ptxas placed it: still waiting
        elif "TRYWAIT" in sass:
            gemm = next((r[3] for r in body[i:] if "HGMMA" in r[3]), "")
            op = "mma_pv" if rs(gemm) else "mma_qk"
            seg, label, n = f"wait pipeline_{'v' if op == 'mma_pv' else 'k'}.full", f"{op} (dispatch)", 2
            last_wait = seg
        elif "BAR.SYNC" in sass:
            seg, label = "wait bar.pingpong (turn)", "compute"
        elif "WARPGROUP.DEPBAR" in sass:
            older = sass.rstrip().endswith("0x1")
            done = runs[-2] if older and len(runs) > 1 else runs[-1] if runs else "?"
            seg, label = f"wait wgmma ({done} done)", "compute"
        else:
            seg = label
            # A GEMM's first HGMMA sets or predicates its accumulate flag (`!UPT`, `!UP0`).
            if "HGMMA" in sass and (not runs or runs[-1] != ("PV" if rs(sass) else "QK") or "!U" in sass):
                runs.append("PV" if rs(sass) else "QK")
        # BAR.SYNC.DEFER_BLOCKING lets the warp run on to its next instruction that needs the
        # barrier (the K wait's try_wait, a MUFU): the samples stalled on a barrier there are the
        # pingpong turn's. A WARPGROUP.DEPBAR's barrier stalls are its own (the wgmma wait).
        turn = sum(r[5] for r in body[i:i + n] if "DEPBAR" not in r[3] and "BAR.SYNC" not in r[3])
        if turn:
            ns["wait bar.pingpong (turn)"] = ns.get("wait bar.pingpong (turn)", 0) + turn
        ns[seg] = ns.get(seg, 0) + sum(r[2] for r in body[i:i + n]) - turn
        if body[i][1] == per_block and (not order or order[-1] != seg):
            order.append(seg)
        i += n
    title = f"{per_block} executions of each instruction, {steps:.2f} per tile and warp: ns per step"
    scale = 1000 * us_per_tile / steps / ctotal
    rank = lambda seg: order.index(seg) if seg in order else len(order)
    rows = [(seg, scale * ns[seg], ns[seg] / ctotal, None) for seg in sorted(ns, key=rank)]
    rows.append(("step", scale * sum(ns.values()), sum(ns.values()) / ctotal, None))
    return title, rows, order, steps


if __name__ == "__main__":
    main()
