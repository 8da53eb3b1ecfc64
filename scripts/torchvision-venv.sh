#!/usr/bin/env bash
# A second venv in which timm and segmentation-models-pytorch can import: they need torchvision,
# and PyPI's torchvision does not import beside torch==2.13.0+cpu. torch==2.14.1 with
# torchvision==0.29.1 does (both from local disk here; about 5.5 GB). Prints its python's path.
# Used only by the corpus test that imports the rewritten timm/smp (tests/fix/test_fix_corpus.py).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CANDLE_PORT_TORCHVISION_VENV:-.venv-torchvision}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torchvision" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet torch==2.14.1 torchvision==0.29.1 1>&2
  "$venv/bin/python" -m pip install --quiet pyyaml "huggingface_hub>=0.24" safetensors pillow numpy tqdm 1>&2
fi
# The rewritten code imports candle_port.runtime (torch only).
"$venv/bin/python" -m pip install --quiet --no-deps -e . 1>&2
echo "$(pwd)/$venv/bin/python"
