#!/usr/bin/env bash
# Generate transpile's outputs of the real PolyBench/C 4.2.1 files for the side-by-side harness
# (CPU vs PPCG vs transpile, issue 39), following ../shared/side_by_side/README.md: copy the harness
# into the ignored folder .sbs of this checkout, then run its gen/gen.py with this checkout's
# transpile for LARGE and EXTRALARGE (writes .sbs/transpile/<SIZE>/*.cu and appends to
# .sbs/transpile/times.tsv).  The GPU runs are then made with the device tool (printed at the end).
#
#   bench/side_by_side.sh                       # both sizes, all 30 kernels
#   SIZES=LARGE bench/side_by_side.sh -k atax,durbin
#   SBS_SOURCE=/path/to/side_by_side bench/side_by_side.sh
#
# Arguments are passed to gen.py (e.g. -k KERNELS, --no-second to skip its --no-verify re-run).
# The copy is refreshed from the source each time (the generated .cu files are replaced).
set -euo pipefail

root=$(git rev-parse --show-toplevel)
cd "$root"
src=${SBS_SOURCE:-}
if [ -z "$src" ]; then
  for cand in "$root/../shared/side_by_side" "$root/../../shared/side_by_side"; do
    if [ -f "$cand/gen/gen.py" ]; then src=$cand; break; fi
  done
fi
if [ -z "$src" ] || [ ! -f "$src/gen/gen.py" ]; then
  echo "side_by_side.sh: no side_by_side folder (set SBS_SOURCE)" >&2
  exit 1
fi

export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
tp=$(command -v transpile || true)
if [ -z "$tp" ]; then
  echo "side_by_side.sh: no transpile on PATH (pip install -e . in this checkout)" >&2
  exit 1
fi
python3 -c "import transpile, sys; sys.exit(0 if transpile.__file__.startswith('$root/') else 1)" || {
  echo "side_by_side.sh: transpile does not import from $root (PYTHONPATH)" >&2
  exit 1
}

rm -rf .sbs
cp -r "$src" .sbs
rm -rf .sbs/transpile/LARGE .sbs/transpile/EXTRALARGE .sbs/transpile/times.tsv .sbs/build
excl=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$excl")"
grep -qx '/.sbs/' "$excl" 2>/dev/null || echo /.sbs/ >> "$excl"

logs=${SBS_LOGS:-/tmp/sbs-logs}
for size in ${SIZES:-LARGE EXTRALARGE}; do
  echo "== $size (transpile at $(git rev-parse --short HEAD))"
  python3 .sbs/gen/gen.py transpile --transpile "$tp" --size "$size" --logdir "$logs" "$@"
done

cat <<EOF

Generated: .sbs/transpile/{${SIZES:-LARGE EXTRALARGE}}/*.cu (times in .sbs/transpile/times.tsv, logs in $logs).
On the device (run tool), carry [".sbs"]:
  cd .sbs && ./run.sh LARGE "\$OUT"
  cd .sbs && ./run.sh EXTRALARGE "\$OUT" --no-cpu -k <kernels>
Host path: TRANSPILE_DROPIN_HOST=0 in the command's environment times the GPU path alone, =1 the host path.
EOF
