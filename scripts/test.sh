#!/usr/bin/env bash
# Set up (scripts/setup.sh), fetch the real corpus once (and the real projects of
# tests/truth/training_paths.jsonl: scripts/fetch-real-projects.sh), check and test the Rust crates (format,
# clippy, docs, cargo test), then run the whole Python test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv=${CANDLE_PORT_VENV:-.venv}
corpus=${CANDLE_PORT_CORPUS:-.corpus}
fetch=${CANDLE_PORT_SHARED:-../shared}/corpus/fetch.sh
if [ -f "$fetch" ]; then
  PATH="$venv/bin:$PATH" bash "$fetch" "$corpus" 2>&1 | grep -v '^WARNING: Location' || true
fi
real=${CANDLE_PORT_REAL_PROJECTS:-.real-projects}
PATH="$venv/bin:$PATH" bash scripts/fetch-real-projects.sh "$real" 2>&1 | grep -v '^WARNING: Location' || true
export CANDLE_PORT_CORPUS=$corpus CANDLE_PORT_REAL_PROJECTS=$real
# Crates built on candle, for port-check on Rust (tests/test_rust_corpus.py).
rust_corpus=${CANDLE_PORT_RUST_CORPUS:-.corpus-rust}
bash scripts/fetch_rust_corpus.sh "$rust_corpus" || echo "note: the Rust corpus could not be fetched" >&2
export CANDLE_PORT_RUST_CORPUS=$rust_corpus
if command -v cargo >/dev/null; then
  bash scripts/rust-check.sh
elif [ -n "${CANDLE_PORT_REQUIRE_CARGO:-}" ]; then
  echo "error: cargo not found; install Rust with https://rustup.rs" >&2
  exit 1
else
  echo "note: cargo not found, skipping the Rust crates (install Rust with https://rustup.rs)" >&2
fi
exec "$venv/bin/python" -m pytest -q "$@"
