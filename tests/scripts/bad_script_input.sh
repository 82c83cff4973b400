#!/usr/bin/env bash
# Bad input to the cluster, fuzzing and build scripts (label unit): each case must end with status 2 and one line
# on stderr that names the problem, before anything is started. Table: expected message fragment | command.
#   tests/scripts/bad_script_input.sh REPOSITORY
set -uo pipefail
repo=${1:?usage: bad_script_input.sh REPOSITORY}
failed=0
check() {
    local wanted=$1
    shift
    local errors status
    errors=$("$@" 2>&1 >/dev/null)
    status=$?
    if ((status != 2)) || [[ $errors != *"$wanted"* ]] || (($(wc -l <<<"$errors") != 1)); then
        echo "FAILED: $* -> status $status, stderr: $errors (wanted status 2 and one line with '$wanted')" >&2
        failed=1
    fi
}
elastic=$repo/scripts/elastic-train
slurm=$repo/scripts/local-slurm
check "no --hosts-from" "$elastic" -- axonn train --grid auto --resume latest --ckpt-dir d
check "no axonn command after --" "$elastic" --hosts-from true
check "must hold --grid auto" "$elastic" --hosts-from true -- axonn train --resume latest --ckpt-dir d
check "must hold --resume latest" "$elastic" --hosts-from true -- axonn train --grid auto --ckpt-dir d
check "must hold --ckpt-dir" "$elastic" --hosts-from true -- axonn train --grid auto --resume latest
check "--min-ranks must be a positive count" "$elastic" --hosts-from true --min-ranks 0 -- axonn
check "--max-restarts must be a count" "$elastic" --hosts-from true --max-restarts x -- axonn
check "unknown argument '--nodes'" "$elastic" --nodes 2
check "no action" "$slurm"
check "unknown action 'begin'" "$slurm" begin
check "--cpus must be a count from 1 to 1024" "$slurm" status --cpus 0
check "unknown argument '--port'" "$slurm" status --port 1
check "too long for munge's socket" "$slurm" status --dir "/tmp/$(printf 'x%.0s' {1..90})"
fuzz=$repo/scripts/fuzz
check "no command" "$fuzz"
check "unknown command 'fuzz'" "$fuzz" fuzz
check "run needs SECONDS" "$fuzz" run
check "run needs SECONDS" "$fuzz" run 0
check "--jobs must be a count" "$fuzz" build --jobs x
check "unknown argument '--seconds'" "$fuzz" run 5 --seconds 5
check "--quick is for build" "$fuzz" run 5 --quick
check "the only argument is --jobs N" "$repo/scripts/cuda-build" --jobs 0
check "--fuzz takes at most SECONDS" "$repo/scripts/test" --fuzz 1x
exit "$failed"
