#!/usr/bin/env bash
# A virtualenv with the official `openai` Python package (pinned), for
# tests/openai_client_test.py. Isolated from the system's site-packages so
# that pip resolves openai's own dependencies (httpx, pydantic) without
# Debian's older copies in the way. Idempotent.
#
#   tests/tools/setup_openai_venv.sh PYTHON VENV_DIR
set -euo pipefail
PYTHON=${1:?usage: setup_openai_venv.sh PYTHON VENV_DIR}
VENV=${2:?usage: setup_openai_venv.sh PYTHON VENV_DIR}
OPENAI_VERSION=3.57.0
# jsonschema: the structured-output tests validate what the server returns.
JSONSCHEMA_VERSION=4.23.0
if [ -x "$VENV/bin/python" ] &&
   [ "$("$VENV/bin/python" -c 'import openai, jsonschema, importlib.metadata as m; print(openai.__version__, m.version("jsonschema"))' 2>/dev/null)" = "$OPENAI_VERSION $JSONSCHEMA_VERSION" ]; then
  exit 0
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# Offline, the test that needs the venv skips itself (exit 77) when it is missing.
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
     "openai==$OPENAI_VERSION" "jsonschema==$JSONSCHEMA_VERSION"; then
  echo "setup_openai_venv: PyPI unreachable; openai_client_test will be skipped" >&2
  rm -rf "$VENV"
fi
