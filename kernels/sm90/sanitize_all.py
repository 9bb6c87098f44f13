#!/usr/bin/env python3
"""compute-sanitizer on a small problem of every kernel compiled into an attnsim build.

Lists the kernels (`attnsim run --list`), and for each one this GPU can run (sm_90a: kernels/sm90,
kernels/fa2, kernels/blackflash) derives a problem that selects it from the first schedule it was
compiled for (schedule, variant, head_dim, causal, short or long seqlen_k), checks that `attnsim
run` does pick that kernel, then runs `attnsim run ... --check` under each compute-sanitizer tool,
plain and traced (`--trace`, every tile recorded). Prints one line per run and a summary; exits 1
if any run reports an error, a hazard or a failed check, or picks another kernel than intended; a
failed run's line is followed by the first lines of the sanitizer's report, indented.

Problems: batch 4, 16 heads (8 K/V heads: GQA; the FA2-style kernels batch 1, 2 heads, 1 K/V
head, seqlen_q 200 against seqlen_k 300), seqlen_q 700 (384 tiles of 128 rows: a persistent CTA
runs two or three, and the last m-block is a tail) against seqlen_k 500 for kernels compiled
for short sequences (fa3::kShortSeqlenK = 512; causal ones 500 against 500, since a causal
problem needs seqlen_q <= seqlen_k) and 1408 for the others (the wide K/V blocks, 176, 128 or 80
keys, pad it by less than 10%, so the auto tile keeps them). Without a GPU, `--dry-run` only
checks that each problem selects its kernel.

Usage (on a GPU machine, from the repository root):
  kernels/sm90/sanitize_all.py [--attnsim build/attnsim] [--tools memcheck,racecheck,synccheck]
      [--no-traced] [--filter TEXT] [--exclude TEXT] [--shard I/N] [--timeout S] [--skip-ok LOG ...] [--dry-run]
--skip-ok leaves out the runs an earlier output (LOG, this script's stdout) reports as passed, so
that a coverage cut short by a machine's time goes on where it stopped; only logs of the same
kernels' code count (configs/validation/<gpu>/sanitize_all keeps them with their commits).
"""
import argparse
import re
import subprocess
import sys


def kernels(attnsim):
    """(knobs, first 'schedules/X.json variant hdD [causal] [seqlen 512]') of each sm_90a kernel."""
    out = subprocess.run([attnsim, "run", "schedules/fa3_sm90.json", "--list"], capture_output=True, text=True,
                         check=True).stdout
    found = []
    for line in out.splitlines()[1:]:
        # (one space only before "needs" where a long name fills its column)
        m = re.match(r"\s+(\S.*?)\s+needs (sm_\d+a)\s+(.*)$", line)
        if not m or m.group(2) != "sm_90a":
            continue
        found.append((m.group(1), m.group(3).split("; ")[0]))
    return found


def passed_runs(logs):
    """(tool, 'plain'|'traced', knobs) of every run the logs report as passed."""
    done = set()
    for path in logs:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"ok\s+(\w+)\s+(plain|traced)\s+\[(.*?)\]:", line)
                if m:
                    done.add((m.group(1), m.group(2), m.group(3)))
    return done


def problem(desc):
    """attnsim run arguments that select the kernel compiled for `desc`."""
    if re.match(r"configs/sweeps/\S+\.json candidate ", desc):
        return None  # compiled for a sweep's candidate only (-DATTNSIM_KERNEL_SWEEPS): no schedule entry
    m = re.match(r"(schedules/\S+\.json) (\(base\)|\S+) hd(\d+)( causal)?( non-causal)?( seqlen 512)?$", desc)
    if not m:
        raise ValueError(f"cannot read the kernel's schedule entry: {desc!r}")
    args = [m.group(1)]
    if m.group(2) != "(base)":
        args += ["--variant", m.group(2)]
    args += ["--head-dim", m.group(3), "--causal" if m.group(4) else "--non-causal"]
    # Short-sequence kernels need seqlen_k <= 512; a causal problem needs seqlen_q <= seqlen_k.
    seqlen_k = "500" if m.group(6) else "1408"
    seqlen_q = seqlen_k if m.group(6) and m.group(4) else "700"
    # The FA2-style kernels stage every operand through shared memory per thread, so racecheck
    # runs for minutes on the common problem (over 200 s on an H200 even at 1 x 4 heads): 1 x 2
    # heads (1 K/V head: GQA) of seqlen_q 200 against seqlen_k 300 there, still ragged tails of
    # both (64-row m-blocks, 64-key blocks) and several blocks per tile.
    batch, heads, kv_heads = ("1", "2", "1") if "fa2_sm80" in m.group(1) else ("4", "16", "8")
    if "fa2_sm80" in m.group(1):
        seqlen_q, seqlen_k = "200", "300"
    args += ["--batch", batch, "--heads", heads, "--kv-heads", kv_heads, "--seqlen", seqlen_q, "--seqlen-k", seqlen_k]
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attnsim", default="build/attnsim")
    ap.add_argument("--tools", default="memcheck,racecheck,synccheck")
    ap.add_argument("--no-traced", action="store_true", help="only the plain kernels")
    ap.add_argument("--filter", default="", help="only kernels whose knobs contain this text")
    ap.add_argument("--exclude", default="", help="leave out kernels whose knobs contain this text")
    ap.add_argument("--shard", default="1/1", help="I/N: the I-th of N equal shares of the kernels")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per run")
    ap.add_argument("--skip-ok", nargs="*", default=[], metavar="LOG",
                    help="leave out the runs these earlier outputs report as passed")
    ap.add_argument("--dry-run", action="store_true", help="check the kernel selection only (no GPU needed)")
    a = ap.parse_args()
    shard, shards = (int(x) for x in a.shard.split("/"))
    todo = [k for k in kernels(a.attnsim) if a.filter in k[0] and not (a.exclude and a.exclude in k[0])]
    todo = todo[shard - 1::shards]
    fixed = ["--reps", "1", "--launches", "1", "--warmup", "0", "--precondition-ms", "0", "--min-timed-ms", "0"]
    done = passed_runs(a.skip_ok)
    failures, runs, to_go = 0, 0, 0
    for knobs, desc in todo:
        args = problem(desc)
        if args is None:
            print(f"skip [{knobs}]: compiled for a sweep candidate only ({desc})")
            continue
        # The kernel `run` picks for this problem (printed before it runs, or in its SKIPPED line).
        probe = subprocess.run([a.attnsim, "run", *args, *fixed], capture_output=True, text=True)
        picked = re.search(r"\[([^\]]+)\]", probe.stdout)
        if not picked or picked.group(1) != knobs:
            print(f"WRONG KERNEL [{knobs}] <- {' '.join(args)}: picked [{picked.group(1) if picked else '?'}]")
            failures += 1
            continue
        plan = [(tool, traced) for tool in a.tools.split(",") for traced in ([False] if a.no_traced else [False, True])
                if (tool, "traced" if traced else "plain", knobs) not in done]
        if a.dry_run:
            left = f" ({len(plan)} runs to go)" if a.skip_ok else ""
            print(f"ok   [{knobs}] <- {' '.join(args)}{left}")
            to_go += len(plan)
            continue
        for tool, traced in plan:
            cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", a.attnsim, "run", *args, "--check",
                   *fixed]
            if traced:
                cmd += ["--trace", "/tmp/sanitize_all_trace.json", "--trace-sample", "1"]
            runs += 1
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                text = r.stdout + r.stderr
                check = re.search(r"correctness \([^)]*\): (pass|FAIL)", text)
                summary = f"check {check.group(1) if check else 'not run'}; " + " ".join(
                    re.findall(r"(?:ERROR|RACECHECK) SUMMARY: [^\n]*", text))
                ok = r.returncode == 0 and check is not None and check.group(1) == "pass"
            except subprocess.TimeoutExpired:
                summary, ok, text = f"timed out after {a.timeout:g} s", False, ""
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {tool:9s} {'traced' if traced else 'plain ':6s} [{knobs}]: {summary}",
                  flush=True)
            if not ok:  # the report's first findings, indented (--skip-ok reads only the "ok" lines)
                for line in [x for x in text.splitlines() if x.startswith("=========")][:24]:
                    print("    " + line)
    left = f", {to_go} runs to go after --skip-ok" if a.dry_run and a.skip_ok else ""
    print(f"{len(todo)} kernels, {runs} sanitizer runs, {failures} failures{left}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
