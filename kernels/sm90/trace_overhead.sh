#!/bin/bash
# Instrumentation overhead of the SM90 kernels on a GPU machine: the correctness test, then for the
# problems of kernels/sm90/overhead_problems.json (configs/validation/problems_sm90.json plus four
# short-sequence shapes) the base schedule's plain and traced kernels, both timed back to back
# (`attnsim validate --reps 20`: median of 20 repetitions of 10 launches, plain and traced
# repetitions interleaved), once per --trace-warps setting (CUDNN=--cudnn: cuDNN beside, first one).
# Usage: kernels/sm90/trace_overhead.sh BUILD_DIR OUT_DIR [TRACE_WARPS...]   (default: first all)
set -u
build=${1:?BUILD_DIR}; out=${2:?OUT_DIR}; shift 2
warps=("$@"); [ ${#warps[@]} -eq 0 ] && warps=(first all)
root=$(cd "$(dirname "$0")/../.." && pwd)
export ATTNSIM_ROOT=${ATTNSIM_ROOT:-$root}
mkdir -p "$out"
"$build/attnsim_kernel_tests" > "$out/kernel_tests.log" 2>&1
echo "attnsim_kernel_tests: exit $? ($(tail -1 "$out/kernel_tests.log"))"
for w in "${warps[@]}"; do
  "$build/attnsim" validate --problems "$root/kernels/sm90/overhead_problems.json" --variants base --trace-warps "$w" \
      --reps 20 --out "$out/validate_$w" $([ "$w" = "${warps[0]}" ] && echo "${CUDNN:-}") > "$out/validate_$w.log" 2>&1
  echo "validate --trace-warps $w: exit $?"
done
printf '\n%-22s' problem; for w in "${warps[@]}"; do printf ' %24s' "plain/traced us ($w)"; printf ' %8s' ovh; done; echo
csvcol() { python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); [print(x['problem'],x['measured_us'],x['traced_us'],x['trace_overhead_pct'],sep='|') for x in r]" "$1"; }
for w in "${warps[@]}"; do csvcol "$out/validate_$w/results.csv" > "$out/.cols_$w"; done
n=$(wc -l < "$out/.cols_${warps[0]}")
for i in $(seq 1 "$n"); do
  printf '%-22s' "$(sed -n ${i}p "$out/.cols_${warps[0]}" | cut -d'|' -f1)"
  for w in "${warps[@]}"; do
    IFS='|' read -r p m t o <<< "$(sed -n ${i}p "$out/.cols_$w")"
    printf ' %24s %7s%%' "$m / $t" "$o"
  done
  echo
done
rm -f "$out"/.cols_*
