#!/usr/bin/env bash
# The layering rules the redesign established, checked on the sources (label unit):
#   1. model/ issues no collective and names no group: the decoder composes the parallel layers of parallel/,
#      which alone talk over the grid (docs/ARCHITECTURE.md, "Where a collective may be called");
#   2. nothing outside kernels/ includes kernels/cpu/ or kernels/cuda/: what only one backend knows is asked
#      through Backend (kernels/backend.h) or kernels/attention_plan.h;
#   3. families/ and everything below it (model/, parallel/, kernels/, comm/, core/) include nothing of the layers
#      above (checkpoint/, train/, memorization/, cli/), and model/ and below nothing of families/: the decoder
#      knows a family only by the Architecture it declares;
#   4. checkpoint/ and cli/ include no one family's folder (families/<name>/): they ask the registry
#      (families/registry.h), so that a new family is its folder and one line in registry.cpp.
# Prints every offending line and exits 1; exits 0 when all hold.
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
# includes_in DIRS... -- PATTERN: the #include lines under those folders of src/axonn that match PATTERN.
includes_in() {
    local dirs=()
    while [[ $1 != -- ]]; do dirs+=("$src/axonn/$1"); shift; done
    grep -rnE "#include \"axonn/($2)/" "${dirs[@]}" --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh'
}

upward=$( { includes_in families model parallel kernels comm core -- 'checkpoint|train|memorization|cli'
            includes_in model parallel kernels comm core -- families; } )
if [[ -n $upward ]]; then
    echo "layering_rules: a file includes a layer above its own (docs/ARCHITECTURE.md, the layers):" >&2
    echo "$upward" >&2
    status=1
fi

one_family=$(includes_in checkpoint cli -- 'families/[a-z0-9_]+')
if [[ -n $one_family ]]; then
    echo "layering_rules: checkpoint/ or cli/ names one family's folder (ask families/registry.h):" >&2
    echo "$one_family" >&2
    status=1
fi
exit $status
