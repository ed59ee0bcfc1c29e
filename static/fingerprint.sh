#!/usr/bin/env bash
# After editing an asset: renames static/assets/NAME.<old hash>.EXT to the
# hash of its new content and updates the pages that load it (the ranking
# page and the console). The test `static_assets_are_fingerprinted` fails
# until this has been run.
set -euo pipefail
cd "$(dirname "$0")"
for file in assets/*.*.*; do
  stem="${file%%.*}"; ext="${file##*.}"
  hash="$(sha256sum "$file" | cut -c1-10)"
  target="$stem.$hash.$ext"
  if [ "$file" != "$target" ]; then
    mv "$file" "$target"
    sed -i "s#/$file#/$target#" index.html admin/index.html
    echo "$file -> $target"
  fi
done
