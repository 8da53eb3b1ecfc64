#!/usr/bin/env bash
# Fetch the two real projects whose findings tests/truth/training_paths.jsonl labels on or off a
# training path (ultralytics 8.4.190, 1.4 MB; segment-anything 1.0, 40 kB) from PyPI into
# DEST/<package>/ (default: .real-projects), as ../shared/corpus/fetch.sh does for the dev corpus:
# only the wheels, unpacked, nothing installed. Pinned, so that file:line in the truth stays right.
# Not inside the dev corpus's folder: its tests check every file there against its own truth.
set -euo pipefail
dest=${1:-.real-projects}
mkdir -p "$dest/.wheels-real"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dest/.wheels-real" ultralytics==8.4.190 segment-anything==1.0
for whl in "$dest"/.wheels-real/*.whl; do
  name=$(basename "$whl" | cut -d- -f1)
  [ -d "$dest/$name" ] && continue
  python3 -m zipfile -e "$whl" "$dest/$name.tmp" && mv "$dest/$name.tmp" "$dest/$name"
done
echo "real projects ready in $dest: ultralytics segment_anything"
