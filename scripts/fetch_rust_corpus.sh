#!/usr/bin/env bash
# Fetch real crates built on candle from crates.io into DEST/<crate>-<version>/ (default:
# ./.corpus-rust): the crates tests/rust_truth.json was hand-checked against. Versions and sha256
# are pinned, so that file:line in the ground truth stays right. Nothing is built.
#   candle-transformers 0.11.0  candle's own model zoo (211 files), Cargo.lock on candle 0.11.0
#   moshi 0.6.4                 kyutai's speech model, Cargo.lock on candle 0.9.1 (renamed `candle`)
#   candle-crf 0.8.8            a CRF layer on candle 0.8.x: no candle call that cannot train
set -euo pipefail
dest=${1:-.corpus-rust}
mkdir -p "$dest/.crates"
crates=(
  "candle-transformers 0.11.0 3bcbbf7ff00ff6fe2af22b93600195917fe90e90ff48424a140d1a926c44b1c1"
  "moshi 0.6.4 5153be1c62a5f77bf31797931c5df6f155ad2df2f95c6f241720132046ed2259"
  "candle-crf 0.8.8 6651bbcb8c753dcbe9ad05a12007ecd29b0d495a603764576e0e9cb2bab07f68"
)
for entry in "${crates[@]}"; do
  read -r name version sum <<< "$entry"
  [ -d "$dest/$name-$version" ] && continue
  file="$dest/.crates/$name-$version.crate"
  if [ ! -f "$file" ]; then
    curl -sSfL --retry 3 -o "$file.tmp" "https://static.crates.io/crates/$name/$name-$version.crate"
    mv "$file.tmp" "$file"
  fi
  echo "$sum  $file" | sha256sum --check --quiet -
  rm -rf "$dest/.unpack" && mkdir -p "$dest/.unpack"
  tar xzf "$file" -C "$dest/.unpack"
  mv "$dest/.unpack/$name-$version" "$dest/$name-$version"
done
rm -rf "$dest/.unpack"
echo "rust corpus ready in $dest: $(ls "$dest" | tr '\n' ' ')"
