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
# Each stage says what it does; pip's own lines (one per package, a progress bar on a terminal)
# follow, so a first install (about 4 minutes, most of it torch) never looks like a hang.
stage() { echo "== setup: $*"; }
if [ ! -x "$venv/bin/python" ]; then
  stage "creating the virtual environment $venv"
  python3 -m venv "$venv"
fi
pip_install() { "$venv/bin/python" -m pip install --disable-pip-version-check "$@"; }
stage "upgrading pip"
pip_install --upgrade pip
stage "installing $torch_pin (a first install downloads about 3 GB on Linux)"
# shellcheck disable=SC2086  # the pin is a list of requirements
pip_install $torch_pin
stage "installing candle-port with its test extras (pip install -e \".[test]\")"
pip_install -e ".[test]"
# A real 3-D model for tests/verify/test_verify_nnunet.py: nnU-Net's U-Nets need only torch and
# numpy, so its declared dependencies (timm, einops) are not installed.
stage "installing dynamic-network-architectures (nnU-Net's U-Nets, for a test)"
pip_install --no-deps dynamic-network-architectures==0.4.4
echo "candle-port installed in $venv"
