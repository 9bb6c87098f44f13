#!/bin/sh
# CUDA compiler launcher of the kernels library (kernels/sm90/CMakeLists.txt): runs the compile
# command it is given unchanged, passes its stderr through, and keeps a copy next to the object
# (<object>.ptxas.txt): for the SM100 instances that is ptxas's resource report (-Xptxas -v),
# read by the resource test (tests/gpu/sm100_resources.cpp). When the command keeps nvcc's
# intermediate files (--keep-dir=DIR), only the PTX is left in DIR afterwards.
obj=""
keep=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && obj="$a"
  case "$a" in --keep-dir=*) keep="${a#--keep-dir=}" ;; esac
  prev="$a"
done
[ -n "$obj" ] || exec "$@"
"$@" 2>"$obj.ptxas.tmp"
rc=$?
cat "$obj.ptxas.tmp" >&2
mv "$obj.ptxas.tmp" "$obj.ptxas.txt"
if [ -n "$keep" ] && [ "$rc" -eq 0 ]; then
  find "$keep" -maxdepth 1 -type f ! -name '*.ptx' -exec rm -f {} +
fi
exit $rc
