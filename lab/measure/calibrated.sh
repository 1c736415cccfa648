#!/bin/sh
# One device call, run from a copy of the repository's estimator/, specs/ and
# lab/ with the wheels of tests/data/measured/README.md installed: `estimator calibrate` (which measures the
# host's cost per operation) first, as a user would; a fresh set of random architectures (held out: no constant is
# set from them); for seed 4, a memory-history trace of gpt2-xl's prefill peak; `estimator calibrate` again at the
# end, to show how far the host's speed moved within the call. Writes into $OUT.
#   seed 4:  sh lab/measure/calibrated.sh
#   seed 5: SEED=5 BUDGET=330 INFERENCE=22 TRAIN=16 sh lab/measure/calibrated.sh
set -u
: "${OUT:?set OUT to the folder the results go to}"
SEED="${SEED:-4}"
python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())'
python3 -m estimator calibrate --out "$OUT/calibration.yaml"
python3 -m lab.measure.random_architectures --out "$OUT" --seed "$SEED" --budget-s "${BUDGET:-300}" \
    --inference "${INFERENCE:-24}" --train "${TRAIN:-18}"
if [ "$SEED" = 4 ]; then
    python3 -m lab.measure.peak_trace --model gpt2-xl --layers 2 --prompt 1024 > "$OUT/gpt2-xl-trace.json"
fi
python3 -m estimator calibrate --out "$OUT/calibration-end.yaml"
