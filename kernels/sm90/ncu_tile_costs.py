#!/usr/bin/env python3
"""Where the plain (uninstrumented) SM90 kernel's warps spend their time per work tile, from ncu's
per-instruction warp-state samples.

Reads the source page of one profiled launch (`ncu --section SourceCounters --page source
--print-source sass --csv ... attnsim run ...`, the output of that command as is: attnsim's lines
first, then the kernel's table) of a static persistent fa3_sm90 kernel, and splits the samples of
the SASS into the regions the simulator has ops for:

- the load warp (the code between the producer warpgroup's `setmaxnreg` dealloc and the consumers'
  alloc): its tile bookkeeping (instructions run once per tile, outside its waits and copies), the
  pipeline_q.empty wait, the Q copy, and per KV block the pipeline_k/v.empty waits, the K and V
  copies and the loop's own instructions;
- a consumer warp's tile tail: the wait for the tile's last PV (the last WARPGROUP.DEPBAR before
  the O store), final_o (row sums to the async-proxy fence), the named barrier after it, the O
  store, and the LSE and tile loop up to its back branch;
- a consumer warp's steady KV step (kv_loop): the pingpong turn, the k/v full waits, the QK and PV
  dispatches, the two wgmma waits and the softmax around them.

A region's time per tile (per KV step: divided by the steps per tile) is its share of its warps'
samples times the CTA's time per tile (`--kernel-us` / `--tiles-per-cta`): ncu samples each
SMSP's resident warps in turn, so a warp's samples are proportional to its time, and a region's
share of them to the time the warp spends there. The samples of a try_wait loop fall on the branch after its first try_wait (the waiting
warp sleeps in it). Run without a GPU, on a CSV already written.

Usage: kernels/sm90/ncu_tile_costs.py SRC.csv[.gz] --kernel-us US --tiles-per-cta N
"""
import argparse
import csv
import gzip
import sys


def read_sass(path):
    """(index, executed, samples, sass) per instruction of the kernel's table."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    head = [i for i, l in enumerate(lines) if l.startswith('"Address"')]
    if not head:
        sys.exit(f"{path}: no ncu source table (a line starting with \"Address\")")
    rows = list(csv.reader(lines[head[0]:]))
    cols = rows[0]
    try:
        src, samples, executed = (cols.index(c) for c in (
            "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"))
    except ValueError as e:
        sys.exit(f"{path}: {e} (expected ncu's SourceCounters source page)")
    out = []
    for i, r in enumerate(rows[1:]):
        if len(r) > max(src, samples, executed):
            out.append((i, int(r[executed] or 0), int(r[samples] or 0), r[src].strip()))
    return out


def first(rows, text, after=-1):
    for r in rows:
        if r[0] > after and text in r[3]:
            return r[0]
    sys.exit(f"no instruction with {text!r} after {after}: not a static fa3_sm90 kernel's SASS?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--kernel-us", type=float, required=True, help="the profiled launch's time, us")
    ap.add_argument("--tiles-per-cta", type=float, required=True, help="work tiles / CTAs of the launch")
    a = ap.parse_args()
    rows = read_sass(a.csv)
    dealloc = first(rows, "USETMAXREG.DEALLOC")
    alloc = first(rows, "USETMAXREG.TRY_ALLOC", dealloc)
    load = [r for r in rows if dealloc < r[0] < alloc]
    cons = [r for r in rows if r[0] >= alloc]
    us_per_tile = a.kernel_us / a.tiles_per_cta

    # The load warp: per copy (Q once per tile, then K and V per KV block, in that order), the
    # wait before it (its first try_wait to the back branch of its retry loop) and the copy itself
    # (the arrive.expect_tx, the UTMALDGs, up to the last of their elect loops).
    tiles = min(r[1] for r in load if "UTMALDG" in r[3])
    blocks = max(r[1] for r in load if "UTMALDG" in r[3])
    total = sum(r[2] for r in load)
    arrives = [r[0] for r in load if "SYNCS.ARRIVE" in r[3]]
    if len(arrives) != 3:
        sys.exit(f"expected the load warp's three arrive.expect_tx (Q, K, V), found {len(arrives)}")
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
    per_tile_other = sum(r[2] for r in load if r[0] not in covered and r[1] and r[1] <= tiles)
    per_block_other = sum(r[2] for r in load if r[0] not in covered and r[1] > tiles)
    print(f"{a.csv}: {a.kernel_us:.1f} us, {a.tiles_per_cta:.2f} tiles per CTA ({us_per_tile:.2f} us each), "
          f"{blocks // tiles} KV blocks per tile")
    per_block = blocks / tiles
    print(f"load warp ({total} samples): ns per tile, and per KV block for what runs once a block")
    rows_out = list(regions.items()) + [("tile bookkeeping", per_tile_other), ("KV loop bookkeeping", per_block_other)]
    for name, s in rows_out:
        ns = 1000 * us_per_tile * s / total
        once_a_block = name not in ("wait pipeline_q.empty", "load_q", "tile bookkeeping")
        print(f"  {name:28s} {ns:8.0f}   ({100 * s / total:5.1f}%)" +
              (f"   {ns / per_block:6.0f} per block" if once_a_block else ""))

    # A consumer warp's tile tail.
    ctotal = sum(r[2] for r in cons)
    store = first(cons, "UTMASTG")
    pv_wait = [r[0] for r in cons if "WARPGROUP.DEPBAR" in r[3] and r[0] < store][-1]
    fence = first(cons, "FENCE.VIEW.ASYNC", pv_wait)
    bar = first(cons, "BAR.SYNC", fence)
    last_store = max(r[0] for r in cons if "UTMASTG" in r[3])
    loop_end = max(r[0] for r in cons if r[0] > last_store and r[1] > 0 and "BRA" in r[3] and r[2] > 0)
    print(f"consumer warps ({ctotal} samples): the tile's tail, ns per tile")
    for name, lo, hi in (("wait for the last PV", pv_wait, pv_wait), ("final_o", pv_wait + 1, fence),
                         ("wait bar.epilogue", fence + 1, bar + 1), ("store_o", bar + 2, last_store + 3),
                         ("LSE and tile loop", last_store + 4, loop_end)):
        s = sum(r[2] for r in cons if lo <= r[0] <= hi)
        print(f"  {name:28s} {1000 * us_per_tile * s / ctotal:8.0f}   ({100 * s / ctotal:5.2f}%)")
    kv_loop(cons, us_per_tile)


def kv_loop(cons, us_per_tile):
    """The steady KV loop of a consumer warp (the instructions run as often as its HGMMAs), split at
    its landmarks: the pingpong turn's BAR.SYNC, the pipeline_k.full wait, the QK wgmmas, the
    pipeline_v.full wait, the PV wgmmas up to the turn's BAR.ARV, wgmma.wait_group 1 (QK done),
    then the softmax up to wgmma.wait_group 0 (PV done; ptxas may sink it into the softmax), and
    the rest of the softmax, the rescale, the pack and the loop's own instructions."""
    ctotal = sum(r[2] for r in cons)
    per_block = max(r[1] for r in cons if "HGMMA" in r[3])
    loop = [r for r in cons if r[1] == per_block]
    lo, hi = loop[0][0], loop[-1][0]
    body = [r for r in cons if lo <= r[0] <= hi]
    # Executions per tile and warp: the async-proxy fence ends final_o once per tile in every warp.
    tile_warps = next(r[1] for r in cons if "FENCE.VIEW.ASYNC" in r[3])
    steps = per_block / tile_warps
    turn = first(body, "BAR.SYNC", lo - 1)
    k_full = first(body, "TRYWAIT", turn)
    v_full = first(body, "TRYWAIT", first(body, "HGMMA", k_full))
    arv = first(body, "BAR.ARV", v_full)
    qk_done = first(body, "DEPBAR.LE gsb0, 0x1", arv - 1)
    pv_done = first(body, "DEPBAR.LE gsb0, 0x0", qk_done)
    bounds = [("wait bar.pingpong (turn)", lo, k_full - 1), ("wait pipeline_k.full", k_full, k_full + 1),
              ("mma_qk (dispatch)", k_full + 2, v_full - 1), ("wait pipeline_v.full", v_full, v_full + 1),
              ("mma_pv (dispatch)", v_full + 2, qk_done - 1), ("wait wgmma (QK done)", qk_done, qk_done),
              ("softmax up to the PV's wait", qk_done + 1, pv_done - 1), ("wait wgmma (PV done)", pv_done, pv_done),
              ("softmax, rescale, pack, loop", pv_done + 1, hi)]
    print(f"consumer KV loop ({per_block} executions of each instruction: {steps:.2f} per tile and warp): ns per step")
    for name, a, b in bounds:
        s = sum(r[2] for r in body if a <= r[0] <= b)
        print(f"  {name:32s} {1000 * us_per_tile / steps * s / ctotal:8.0f}   ({100 * s / ctotal:5.1f}%)")


if __name__ == "__main__":
    main()
