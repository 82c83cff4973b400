#!/usr/bin/env bash
# scripts/skipped-tests on a ctest log written for the purpose (label unit): a skip inside a multi-rank entry is
# counted once however many ranks printed it, a skip in an entry of its own is counted, a passed test is not, and
# each reason is listed with its source line and its tests.
#   tests/scripts/skipped_tests_list.sh REPOSITORY
set -euo pipefail
repo=${1:?usage: skipped_tests_list.sh REPOSITORY}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
mkdir -p "$build/Testing/Temporary"
# As ctest writes it: each entry's header, then its output; the mpi entry's two ranks print the same skip.
cat >"$build/Testing/Temporary/LastTest.log" <<'LOG'
Start testing: Dec 06 14:42 UTC
----------------------------------------------------------
12/40 Test: mpi_np2
Output:
----------------------------------------------------------
[ RUN      ] ModelOnGrid.Bf16MatchesSerial
/build/checkout/tests/mpi/test_model_grids.cpp:88: Skipped
needs a world of 4
[  SKIPPED ] ModelOnGrid.Bf16MatchesSerial (0 ms)
[ RUN      ] ModelOnGrid.Bf16MatchesSerial
/build/checkout/tests/mpi/test_model_grids.cpp:88: Skipped
needs a world of 4
[  SKIPPED ] ModelOnGrid.Bf16MatchesSerial (0 ms)
[ RUN      ] ModelOnGrid.Fp32MatchesSerial
[       OK ] ModelOnGrid.Fp32MatchesSerial (12 ms)
<end of output>
13/40 Test: Models/CudaModelAgainstCpu
Output:
----------------------------------------------------------
[ RUN      ] Models/CudaModelAgainstCpu.Same/gpt2_tiny_fp32
/home/ci/axonn/tests/gpu/test_cuda_model.cpp:100: Skipped
no CUDA GPU visible
[  SKIPPED ] Models/CudaModelAgainstCpu.Same/gpt2_tiny_fp32 (0 ms)
<end of output>
LOG
listed=$("$repo/scripts/skipped-tests" "$build")
expected="skipped tests: 2 (inside each ctest entry included), by reason:
  1 x needs a world of 4  (tests/mpi/test_model_grids.cpp:88)
      ModelOnGrid.Bf16MatchesSerial [in mpi_np2]
  1 x no CUDA GPU visible  (tests/gpu/test_cuda_model.cpp:100)
      Models/CudaModelAgainstCpu.Same/gpt2_tiny_fp32 [in Models/CudaModelAgainstCpu]"
if [[ $listed != "$expected" ]]; then
    printf 'FAILED: scripts/skipped-tests printed\n%s\nexpected\n%s\n' "$listed" "$expected" >&2
    exit 1
fi
