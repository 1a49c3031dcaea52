#!/usr/bin/env bash
# Creates (once) the virtualenv the GGUF differential test runs in: gguf-py
# (GGUFWriter, GGUFReader, the numpy dequantizers), numpy and the pinned
# Hugging Face `tokenizers`, all from PyPI. Exit 77 (ctest: skipped) when
# they cannot be installed, e.g. offline. Usage: setup_gguf_venv.sh PYTHON VENV_DIR
set -uo pipefail
python="$1"
venv="$2"
check='import gguf, numpy, tokenizers, importlib.metadata as m, sys; sys.exit(m.version("gguf") != "0.19.0" or tokenizers.__version__ != "0.23.2")'
if "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "gguf 0.19.0, numpy, tokenizers 0.23.2 already in $venv"
  exit 0
fi
"$python" -m venv "$venv" || exit 1
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "gguf==0.19.0" numpy "tokenizers==0.23.2"; then
  echo "SKIPPED: cannot install gguf/numpy/tokenizers from PyPI (offline?)"
  exit 77
fi
"$venv/bin/python" -c "$check" && echo "gguf venv ready in $venv"
