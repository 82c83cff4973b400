#!/usr/bin/env bash
# The layering rules the redesign established, checked on the sources (label unit):
#   1. model/ issues no collective and names no group: the decoder composes the parallel layers of parallel/,
#      which alone talk over the grid (docs/ARCHITECTURE.md, "Where a collective may be called");
#   2. nothing outside kernels/ includes kernels/cpu/ or kernels/cuda/: what only one backend knows is asked
#      through Backend (kernels/backend.h) or kernels/attention_plan.h.
# Prints every offending line and exits 1; exits 0 when both hold.
#   tests/structure/layering_rules.sh SRC_DIR      (SRC_DIR: the repository's src/)
set -uo pipefail
src=${1:?usage: layering_rules.sh SRC_DIR}
[[ -d $src/axonn/model && -d $src/axonn/kernels ]] || { echo "layering_rules: $src holds no axonn sources" >&2; exit 2; }
status=0

collectives=$(grep -rnE '\bcomm\(|Communicator|\ball_reduce|\ball_gather|\breduce_scatter|\bMPI_[A-Z][a-z]' \
                  "$src/axonn/model" --include='*.h' --include='*.cpp')
if [[ -n $collectives ]]; then
    echo "layering_rules: model/ calls a collective or names a group (move it into parallel/):" >&2
    echo "$collectives" >&2
    status=1
fi

backend_internals=$(grep -rnE '#include "axonn/kernels/(cpu|cuda)/' "$src/axonn" --include='*.h' --include='*.cpp' \
                        --include='*.cu' --include='*.cuh' | grep -v "^$src/axonn/kernels/")
if [[ -n $backend_internals ]]; then
    echo "layering_rules: a file outside kernels/ includes a backend's own kernels (ask through Backend):" >&2
    echo "$backend_internals" >&2
    status=1
fi
exit $status
