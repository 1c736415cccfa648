#!/usr/bin/env bash
# One device call: HF's static-cache decode attention alone (repeat_kv + masked SDPA,
# lab/measure/hf_decode_attention.py), and the lean decode's attention kernel at the block counts in
# tests/data/measured/attention/wave-shapes.json (around one and two waves of the SMs; chosen, with the rule they
# check, before this was run). Writes $OUT/hf-attention.jsonl and $OUT/waves.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/gpu.txt"
python -m lab.measure.decode_attention --out "$OUT/waves.jsonl" --count 0 --gemvs 0 \
  --shapes tests/data/measured/attention/wave-shapes.json
python -m lab.measure.hf_decode_attention --out "$OUT/hf-attention.jsonl" --seed 9 --count 200
