#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan and runs them.
#
#   scripts/fuzz.sh [--build-dir DIR] [--seconds N] [--jobs N] [--opt O0|O1] [--build-only | --no-build] [TARGET...]
#
# TARGET: schedule, hardware, problem, sweep, simulate (default: all). For each: replays every input
# kept in fuzz/regressions/TARGET/ (inputs that once failed), then fuzzes for N seconds (default 60)
# from seeds taken from schedules/, configs/ and tests/, in N parallel jobs (default 1, at most 2),
# keeping the corpus in DIR/corpus/TARGET. A failing input is written to DIR/artifacts/TARGET/;
# copy it into fuzz/regressions/TARGET/ once fixed. Prints executions per target and in total;
# exits 1 when any input crashed, hung, leaked or tripped a sanitizer. --opt: the build's
# optimization, O1 (default, faster fuzzing) or O0 (half the compile time).
# The CTest tests fuzz.build (--opt O0) and fuzz.<target> run this script (a few seconds per target).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
seconds=60
jobs=1
opt=O1
mode=all
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --opt) opt="$2"; shift 2 ;;
    --build-only) mode=build; shift ;;
    --no-build) mode=run; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    schedule|hardware|problem|sweep|simulate) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(schedule hardware problem sweep simulate)
if [ "$jobs" -lt 1 ] || [ "$jobs" -gt 2 ]; then echo "fuzz.sh: --jobs must be 1 or 2" >&2; exit 2; fi
case "$opt" in O0|O1) ;; *) echo "fuzz.sh: --opt must be O0 or O1, not '$opt'" >&2; exit 2 ;; esac
cxx="${ATTNSIM_FUZZ_CXX:-$(command -v clang++ || true)}"

if [ "$mode" != run ]; then
  [ -n "$cxx" ] || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
  cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DATTNSIM_FUZZ=ON -DATTNSIM_CUDA=OFF \
    -DATTNSIM_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG= -DATTNSIM_FUZZ_OPT=-$opt >/dev/null
  cmake --build "$build" --target attnsim_fuzzers -j2
  [ "$mode" = build ] && exit 0
fi

# Seeds: files of the source tree the target reads (libFuzzer reads folders recursively).
seeds_of() {
  case "$1" in
    schedule|simulate) echo "$root/schedules $root/tests/schedules" ;;
    hardware) echo "$root/configs/hw" ;;
    problem) echo "$root/configs/problems $root/fuzz/seeds/problem" ;;
    sweep) echo "$root/configs/sweeps $root/tests/sweeps" ;;
  esac
}

total=0
failed=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: $bin is not built (run without --no-build)" >&2; exit 2; }
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  logs="$build/logs/$t"
  mkdir -p "$corpus" "$artifacts" "$logs"
  rm -f "$logs"/*.log
  opts=(-rss_limit_mb=2048 -timeout=20 -max_len=65536 -dict="$root/fuzz/json.dict" -artifact_prefix="$artifacts/")
  # Regressions first: each kept input must pass.
  shopt -s nullglob
  kept=("$root/fuzz/regressions/$t"/*)
  shopt -u nullglob
  if [ ${#kept[@]} -gt 0 ]; then
    if ! ATTNSIM_ROOT="$root" "$bin" "${opts[@]}" "${kept[@]}" >"$logs/regressions.log" 2>&1; then
      echo "fuzz $t: a kept regression input fails:"; tail -40 "$logs/regressions.log"; failed=1; continue
    fi
  fi
  before=$(ls "$artifacts" | wc -l)
  # shellcheck disable=SC2046
  (cd "$logs" && ATTNSIM_ROOT="$root" "$bin" "${opts[@]}" -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" \
     -print_final_stats=1 "$corpus" $(seeds_of "$t") >"$logs/main.log" 2>&1) || true
  runs=$(cat "$logs"/*.log | sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
  total=$((total + runs))
  after=$(ls "$artifacts" | wc -l)
  if [ "$after" -gt "$before" ] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:" "$logs"/*.log; then
    echo "fuzz $t: FAILED after $runs executions; inputs in $artifacts, logs in $logs:"
    grep -hE "ERROR:|runtime error:|SUMMARY|Test unit written" "$logs"/*.log | head -20
    failed=1
  else
    echo "fuzz $t: $runs executions in ${seconds} s ($jobs job(s)), ${#kept[@]} regression inputs replayed, no failure"
  fi
done
echo "fuzz: $total executions in total"
exit $failed
