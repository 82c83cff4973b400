#!/usr/bin/env bash
# The library as others use it: install the build into a fresh prefix, build examples/parallel_mlp against it with
# its own CMake project (find_package(axonn)), train it serially and on a 2×2 grid (y=2, x=2), and require every
# step's loss to agree within 1e-5 relative. Usage: parallel_mlp.sh BUILD_DIR REPOSITORY_ROOT CMAKE MPIEXEC CXX
# (ctest passes all five: the build's own CMake, mpirun and compiler).
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
cmake=$3 mpiexec=$4 cxx=$5
steps=30
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
"$cmake" -S "$source/examples/parallel_mlp" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/build" >/dev/null
export OMP_NUM_THREADS=1
"$mpiexec" --oversubscribe --allow-run-as-root -np 1 "$work/build/parallel_mlp" data=1 "$steps" >"$work/serial.jsonl"
"$mpiexec" --oversubscribe --allow-run-as-root -np 4 "$work/build/parallel_mlp" y=2,x=2 "$steps" >"$work/grid.jsonl"

# Each line is {"step": N, "loss": L}; pasted side by side and split on spaces and closing braces, the serial
# loss is field 4 and the grid's field 9. The loss must also fall.
paste -d ' ' "$work/serial.jsonl" "$work/grid.jsonl" | awk -F '[ }]' -v steps="$steps" '
    { serial = $4; grid = $9; difference = serial - grid; if (difference < 0) difference = -difference
      relative = difference / serial; if (relative > worst) worst = relative
      if (NR == 1) first = serial; last = serial }
    END {
      printf "%d steps, loss %.4f -> %.4f serial; grid y=2,x=2 within %.2g relative\n", NR, first, last, worst
      if (NR != steps || worst > 1e-5 || last >= first) exit 1 }'
