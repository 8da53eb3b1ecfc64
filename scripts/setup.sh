#!/usr/bin/env bash
# Create (or reuse) the virtual environment and install candle-port with its test extras.
# torch is pinned to 2.13.0 first: that CPU wheel is local on this machine kind, while an unpinned
# torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CANDLE_PORT_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet torch==2.13.0
"$venv/bin/python" -m pip install --quiet -e ".[test]"
echo "candle-port installed in $venv"
