#!/bin/bash
# Interleaved A/B of two or more attnsim builds on a GPU machine, the method of the kernel changes
# in kernels/sm90/README.md: for each problem (one line of `attnsim run` problem flags in
# PROBLEMS_FILE), every binary's `attnsim run` in turn, for ROUNDS rounds, so that the binaries
# share the board's clock swings; each run after PRE_MS of untimed load, timed over at least
# MIN_MS (the medians of back-to-back launches that `attnsim run` prints). Prints each problem's
# times and the mean time of each binary over the first one's, then the geometric means; writes
# OUT_CSV (problem, round, binary, us).
# Usage: kernels/sm90/ab_binaries.sh PROBLEMS_FILE OUT_CSV ATTNSIM_A ATTNSIM_B [ATTNSIM_C...]
# Environment: SCHEDULE (schedules/fa3_sm90.json), ROUNDS (2), PRE_MS (1000), MIN_MS (1000).
set -u
problems=${1:?PROBLEMS_FILE}; csv=${2:?OUT_CSV}; shift 2
[ $# -ge 2 ] || { echo "usage: $0 PROBLEMS_FILE OUT_CSV ATTNSIM_A ATTNSIM_B [ATTNSIM_C...]" >&2; exit 2; }
bins=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
mapfile -t probs < <(grep -v '^\s*\(#\|$\)' "$problems")
echo "problem,round,binary,us" > "$csv"
for ((r = 1; r <= ${ROUNDS:-2}; ++r)); do
  for p in "${probs[@]}"; do
    for b in "${bins[@]}"; do
      # shellcheck disable=SC2086  # a problem line is a list of flags
      us=$(cd "$root" && "$b" run "${SCHEDULE:-schedules/fa3_sm90.json}" $p --precondition-ms "${PRE_MS:-1000}" \
           --min-timed-ms "${MIN_MS:-1000}" 2>&1 | awk '/^  measured/{print $2}')
      echo "$p,$r,$b,${us:-}" >> "$csv"
    done
  done
done
python3 - "$csv" "${bins[@]}" <<'PY'
import collections, csv, math, sys
path, bins = sys.argv[1], sys.argv[2:]
times = collections.defaultdict(lambda: collections.defaultdict(list))
for row in csv.DictReader(open(path)):
    if row["us"]:
        times[row["problem"]][row["binary"]].append(float(row["us"]))
ratios = collections.defaultdict(list)
for problem, t in times.items():
    line = f"{problem:55s}"
    for b in bins:
        line += " | " + " ".join(f"{x:8.1f}" for x in t[b])
    for b in bins[1:]:
        if t[b] and t[bins[0]]:
            r = (sum(t[b]) / len(t[b])) / (sum(t[bins[0]]) / len(t[bins[0]]))
            ratios[b].append(r)
            line += f" | {r:.3f}"
    print(line)
for b in bins[1:]:
    if ratios[b]:
        print(f"geometric mean {b} / {bins[0]}: {math.exp(sum(map(math.log, ratios[b])) / len(ratios[b])):.4f}")
    else:
        print(f"{b}: no problem timed on both sides (see {path})")
PY
