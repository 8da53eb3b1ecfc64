#!/usr/bin/env bash
# Create (or reuse) the virtual environment and install candle-port with its test extras.
# torch and torchvision are pinned first, as a pair that imports together: an unpinned torch (or
# one pulled by a dependency) would pick whatever PyPI serves. PyPI's Linux torch is a CUDA build
# (about 3 GB with its nvidia-* packages) that also runs on the CPU; where download.pytorch.org is
# reachable, CANDLE_PORT_TORCH="torch==2.14.1 torchvision==0.29.1 --index-url
# https://download.pytorch.org/whl/cpu" bash scripts/setup.sh installs the smaller CPU wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CANDLE_PORT_VENV:-.venv}
torch_pin=${CANDLE_PORT_TORCH:-torch==2.14.1 torchvision==0.29.1}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086  # the pin is a list of requirements
"$venv/bin/python" -m pip install --quiet $torch_pin
"$venv/bin/python" -m pip install --quiet -e ".[test]"
# A real 3-D model for tests/verify/test_verify_nnunet.py: nnU-Net's U-Nets need only torch and
# numpy, so its declared dependencies (timm, einops) are not installed.
"$venv/bin/python" -m pip install --quiet --no-deps dynamic-network-architectures==0.4.4
echo "candle-port installed in $venv"
