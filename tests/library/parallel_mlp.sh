#!/usr/bin/env bash
# The library as others use it: install the build into a fresh prefix, build examples/parallel_mlp against it with
# its own CMake project (find_package(axonn)), train it serially and on a 2×2 grid (y=2, x=2), and require every
# step's loss to agree within 1e-5 relative. Two ctest entries (label library), so that the one-core build runs
# beside other tests and only the 4-rank run takes the machine:
#   parallel_mlp.sh build WORK BUILD_DIR REPOSITORY_ROOT CMAKE CXX   the prefix and the example's build, in WORK
#                                                                     (emptied first)
#   parallel_mlp.sh run WORK MPIEXEC                                  the two runs, compared
# (ctest passes the build's own CMake, mpirun and compiler).
set -euo pipefail
mode=$1 work=$2
steps=30

if [[ $mode == build ]]; then
    build=$(realpath "$3")
    source=$(realpath "$4")
    cmake=$5 cxx=$6
    rm -rf "$work"
    mkdir -p "$work"
    "$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
    "$cmake" -S "$source/examples/parallel_mlp" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >/dev/null
    "$cmake" --build "$work/build" >/dev/null
    exit 0
fi

mpiexec=$3
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
