#!/usr/bin/env bash
# Measure candle's ops at other candle releases than the pinned one, and write one op table per
# release: src/candle_port/verify/candle_ops-<version>.json (the pinned 0.11.0 table stays
# candle_ops.json, written by scripts/gen_optable.py).
#
# For each version this copies crates/candle-port-ops and crates/candle-port-run (whose
# src/measure.rs holds the probes) into .candle-versions/<version>/ (git-ignored), pins
# candle-core and candle-nn to =<version> there, starts from this workspace's Cargo.lock (so
# every other dependency stays the locked one), builds candle-port-run in its own target dir
# (.candle-versions/<version>/target), runs `candle-port-run --measure-ops` and hands the records
# to `scripts/gen_optable.py --versioned`. A version whose probes do not compile is written as a
# table that says so, with cargo's first error, instead of stopping the other versions. Then it
# runs crates/candle-port-ops/tests/candle_native.rs and candle_releases.rs there, whose tests
# assert what candle 0.11.0 does (docs/candle-measured.md): a test that fails at another version
# is a behaviour that changed; the pass/fail list goes to .candle-versions/<version>/candle_tests.txt.
#
#     bash scripts/measure_candle_versions.sh [VERSION ...]    (default: 0.9.2 0.10.0 0.11.1)
#
# Each version builds candle from scratch (a few minutes on 2 cores); builds run under nice.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
VERSIONS=("$@")
if [ ${#VERSIONS[@]} -eq 0 ]; then
    VERSIONS=(0.9.2 0.10.0 0.11.1)
fi
status=0
for version in "${VERSIONS[@]}"; do
    work="$ROOT/.candle-versions/$version"
    mkdir -p "$work/crates"
    rm -rf "$work/crates/candle-port-ops" "$work/crates/candle-port-run"
    for crate in candle-port-ops candle-port-run; do
        mkdir -p "$work/crates/$crate"
        cp -r "crates/$crate/Cargo.toml" "crates/$crate/src" "$work/crates/$crate/"
        [ "$crate" = candle-port-ops ] && cp -r "crates/$crate/tests" "$work/crates/$crate/"
        [ -f "crates/$crate/README.md" ] && cp "crates/$crate/README.md" "$work/crates/$crate/"
        # benches/ are not built here; drop their [[bench]] targets with them
        sed -i '/^\[\[bench\]\]/,/^$/d' "$work/crates/$crate/Cargo.toml"
    done
    # the measurements name the candle they ran against (report.rs's constant names the pinned one)
    sed -i "s/^pub const CANDLE_VERSION: &str = .*/pub const CANDLE_VERSION: \&str = \"$version\";/" \
        "$work/crates/candle-port-run/src/report.rs"
    grep -q "CANDLE_VERSION: &str = \"$version\"" "$work/crates/candle-port-run/src/report.rs"
    # the workspace manifest with candle pinned to this version, everything else as here
    sed -e "s/^members = .*/members = [\"crates\/candle-port-ops\", \"crates\/candle-port-run\"]/" \
        -e "s/^candle-core = .*/candle-core = \"=$version\"/" \
        -e "s/^candle-nn = .*/candle-nn = \"=$version\"/" Cargo.toml >"$work/Cargo.toml"
    [ -f "$work/Cargo.lock" ] || cp Cargo.lock "$work/Cargo.lock"
    log="$work/build.log"
    echo "candle $version: building candle-port-run in $work (log: $log)" >&2
    if (cd "$work" && CARGO_TARGET_DIR="$work/target" nice -n 10 cargo build -p candle-port-run) >"$log" 2>&1; then
        (cd "$work" && "$work/target/debug/candle-port-run" --measure-ops "$work/measurements.json") >&2
        "$PYTHON" scripts/gen_optable.py --versioned --measurements "$work/measurements.json" --workspace "$work" \
            || status=1
    else
        echo "candle $version: the probes do not build; recording cargo's error" >&2
        "$PYTHON" scripts/gen_optable.py --versioned --build-log "$log" --workspace "$work" \
            --candle-version "$version" || status=1
    fi
    native="$work/candle_tests.txt"
    : >"$native"
    if (cd "$work" && CARGO_TARGET_DIR="$work/target" nice -n 10 cargo test -p candle-port-ops --test candle_native \
            --test candle_releases --no-fail-fast) >"$work/candle_tests.log" 2>&1; then
        echo "all candle_native and candle_releases tests pass" >"$native"
    fi
    grep -E '^test .* \.\.\. (ok|FAILED)$' "$work/candle_tests.log" | sort >>"$native" \
        || grep -m1 '^error' "$work/candle_tests.log" >>"$native" || echo "cargo test failed" >>"$native"
    echo "candle $version: candle_native + candle_releases: $(grep -c 'FAILED$' "$native" || true) failed (list: $native)" >&2
done
exit $status
