#!/usr/bin/env bash
# Set up (scripts/setup.sh), fetch the real corpus once, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv=${CANDLE_PORT_VENV:-.venv}
corpus=${CANDLE_PORT_CORPUS:-.corpus}
fetch=${CANDLE_PORT_SHARED:-../shared}/corpus/fetch.sh
if [ -f "$fetch" ]; then
  PATH="$venv/bin:$PATH" bash "$fetch" "$corpus" 2>&1 | grep -v '^WARNING: Location' || true
fi
export CANDLE_PORT_CORPUS=$corpus
exec "$venv/bin/python" -m pytest -q "$@"
