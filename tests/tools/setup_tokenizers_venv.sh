#!/usr/bin/env bash
# Creates (once) the virtualenv the tokenizer differential test runs in, with
# the pinned Python `tokenizers` from PyPI. Usage: setup_tokenizers_venv.sh PYTHON VENV_DIR
set -euo pipefail
python="$1"
venv="$2"
version=0.23.2
if "$venv/bin/python" -c "import tokenizers, sys; sys.exit(tokenizers.__version__ != '$version')" \
    2>/dev/null; then
  echo "tokenizers $version already in $venv"
  exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "tokenizers==$version"
"$venv/bin/python" -c "import tokenizers; print('tokenizers', tokenizers.__version__, 'in $venv')"
