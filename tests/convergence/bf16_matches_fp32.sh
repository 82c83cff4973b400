#!/usr/bin/env bash
# Mixed precision learns as well as fp32: the demo model (configs/demo.toml, gpt2-mini on Jane Austen) trains 300
# steps from the same seed and batches in fp32 and in bf16, and bf16's final validation loss must be within 2% of
# fp32's. Usage: bf16_matches_fp32.sh BUILD_DIR REPOSITORY_ROOT (ctest passes both). Needs the corpus that
# scripts/install-deps fetches. The text is read byte by byte (the byte tokenizer): with GPT-2's 50,257-word
# vocabulary the LM head made each run 5 times longer (9 minutes for the pair on 2 cores), and the bf16 path under
# test is the same. On a CPU without a native bf16 GEMM the bf16 run is emulated (bf16 operands, fp32 products and
# sums), which trains the same way.
set -euo pipefail
build=$(realpath "$1")
cd "$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/axonn" corpus janeausten --package data/corpus/janeaustenr --out "$work/text" >/dev/null
"$build/axonn" prepare --input "$work"/text/*.txt --out "$work/data" --tokenizer byte >/dev/null
for precision in fp32 bf16; do
    OMP_NUM_THREADS=1 "$build/axonn" train --config configs/demo.toml --data "$work/data" --tokenizer byte --steps 300 \
        --eval-every 300 --sample-tokens 0 --threads 1 --precision "$precision" \
        --metrics "$work/$precision.jsonl" >"$work/$precision.out" 2>"$work/$precision.err"
done

python3 - "$work/fp32.jsonl" "$work/bf16.jsonl" <<'PYTHON'
import json, sys

def final_validation_loss(path):
    losses = [record["val_loss"] for record in map(json.loads, open(path)) if "val_loss" in record]
    return losses[-1]

fp32, bf16 = (final_validation_loss(path) for path in sys.argv[1:3])
difference = abs(bf16 - fp32) / fp32
print(f"final validation loss after 300 steps: fp32 {fp32:.4f}, bf16 {bf16:.4f} ({100 * difference:.2f}% apart)")
sys.exit(0 if difference <= 0.02 else 1)
PYTHON
