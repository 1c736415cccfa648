#!/bin/sh
# One device call (issue 15, third pass), run from a copy of the repository's estimator/, specs/ and benchmarks/
# with the wheels of tests/data/measured/README.md installed: `estimator calibrate` (which now measures the host's
# cost per operation) first, as a user would; a fresh set of random architectures (seed 4, held out: no constant
# was set from it); a memory-history trace of gpt2-xl's prefill peak; `estimator calibrate` again at the end, to
# show how far the host's speed moved within the call. Writes into $OUT.
set -u
: "${OUT:?set OUT to the folder the results go to}"
python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())'
python3 -m estimator calibrate --out "$OUT/calibration.yaml"
python3 benchmarks/measure_random.py --out "$OUT" --seed 4 --budget-s 300 --inference 24 --train 18
python3 benchmarks/trace_moe_peak.py --model gpt2-xl --layers 2 --prompt 1024 > "$OUT/gpt2-xl-trace.json"
python3 -m estimator calibrate --out "$OUT/calibration-end.yaml"
