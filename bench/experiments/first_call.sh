#!/bin/sh
# On the GPU machine, after .sbs/run.sh built the LARGE binaries: each transpile binary run once a
# process under each first-call path (TRANSPILE_DROPIN_FIRST), REPS times, and the PPCG binary.
# Prints: kernel, path, PolyBench seconds of each run.   Usage: first_call.sh BUILD_DIR REPS K1 K2 ...
dir=$1; reps=$2; shift 2
for k in "$@"; do
  for path in ppcg full small pageable mixed auto; do
    line="$k $path"
    r=0
    while [ $r -lt "$reps" ]; do
      if [ $path = ppcg ]; then t=$(SBS_EXIT_AFTER_TIME=1 "$dir/ppcg_$k" 2>/dev/null | tail -1)
      elif [ $path = auto ]; then t=$(SBS_EXIT_AFTER_TIME=1 "$dir/transpile_$k" 2>/dev/null | tail -1)
      else t=$(SBS_EXIT_AFTER_TIME=1 TRANSPILE_DROPIN_FIRST=$path "$dir/transpile_$k" 2>/dev/null | tail -1); fi
      line="$line $t"
      r=$((r + 1))
    done
    echo "$line"
  done
done
