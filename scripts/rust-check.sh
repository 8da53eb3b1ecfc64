#!/usr/bin/env bash
# The Rust workspace's checks, as CI runs them: format, clippy with warnings as errors, docs with
# warnings as errors (doctests run under cargo test), then every test (the shared vectors included).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
cargo test --workspace --locked
