#!/usr/bin/env bash
# Set up, then run the main job on the bundled example model: check it, show the fix as a diff,
# and verify that the fixed model computes the same outputs and gradients and trains in candle.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bin=${CANDLE_PORT_VENV:-.venv}/bin
echo; echo "== port-check examples/unet.py"
"$bin/port-check" examples/unet.py
echo; echo "== port-fix --diff examples/unet.py (writes nothing)"
"$bin/port-fix" --diff examples/unet.py
echo; echo "== candle-port verify examples/unet.py:UNet --input-shape 1,3,32,32"
"$bin/candle-port" verify examples/unet.py:UNet --input-shape 1,3,32,32
echo; echo "== examples/train_both.py: the fixed example trained in torch and in candle, 20 SGD steps side by side"
# Builds examples/unet-candle with cargo (without cargo it says how to get Rust and runs the torch part).
echo "(the first run builds examples/unet-candle and candle with cargo: about 15 minutes on 2 cores; cargo's progress follows)"
"$bin/python" examples/train_both.py --steps 20
