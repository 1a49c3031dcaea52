#!/usr/bin/env bash
# A virtualenv with the `gguf` package (llama.cpp's Python GGUF reader and
# dequantizer) and NumPy, for the reference tests. Debian's python3 with its
# system packages (grpcio, protobuf, jinja2) visible. Idempotent.
#
#   tests/tools/setup_reference_venv.sh VENV_DIR
set -euo pipefail
VENV=${1:?usage: setup_reference_venv.sh VENV_DIR}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import gguf, numpy" 2>/dev/null; then
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$VENV"
# Offline, the tests that need the venv skip themselves (exit 77) when it is missing.
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
     "gguf==0.19.0" "numpy<2.3"; then
  echo "setup_reference_venv: PyPI unreachable; the reference tests will be skipped" >&2
  rm -rf "$VENV"
fi
