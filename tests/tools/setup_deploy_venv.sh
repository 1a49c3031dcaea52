#!/usr/bin/env bash
# A virtualenv for the deployment file checks (tests/deploy/): PyPI's
# kubernetes-validate (it ships the Kubernetes OpenAPI schemas, so the checks
# run offline once installed) and jsonschema, pinned; plus the compose
# specification's JSON schema, taken from the docker-compose 1.29.2 wheel
# (compose/config/compose_spec.json, checked by its SHA-256; the wheel is
# downloaded without its dependencies, nothing of it is installed). Idempotent.
#
#   tests/tools/setup_deploy_venv.sh PYTHON VENV_DIR
set -euo pipefail
PYTHON=${1:?usage: setup_deploy_venv.sh PYTHON VENV_DIR}
VENV=${2:?usage: setup_deploy_venv.sh PYTHON VENV_DIR}
KUBERNETES_VALIDATE_VERSION=1.37.0
JSONSCHEMA_VERSION=4.26.0
COMPOSE_WHEEL_VERSION=1.29.2
COMPOSE_SPEC_SHA256=0dc04bd346dcfee1b1419628fff79937bbf076925f298f272a2b490e2b112bac
SCHEMA="$VENV/share/compose_spec.json"

if [ -x "$VENV/bin/python" ] && [ -f "$SCHEMA" ] &&
   [ "$("$VENV/bin/python" -c 'import kubernetes_validate.version as v; print(v.__version__)' 2>/dev/null)" \
     = "$KUBERNETES_VALIDATE_VERSION" ]; then
  exit 0
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
offline() {
  echo "setup_deploy_venv: PyPI unreachable ($1); the deployment checks will be skipped" >&2
  rm -rf "$VENV"
  exit 0
}
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "jsonschema==$JSONSCHEMA_VERSION" ||
  offline "pip install"
wheel_dir=$(mktemp -d)
trap 'rm -rf "$wheel_dir"' EXIT
"$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
  --only-binary=:all: -d "$wheel_dir" "docker-compose==$COMPOSE_WHEEL_VERSION" ||
  offline "pip download docker-compose"
mkdir -p "$VENV/share"
"$VENV/bin/python" - "$wheel_dir"/docker_compose-*.whl "$SCHEMA" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    open(sys.argv[2], "wb").write(wheel.read("compose/config/compose_spec.json"))
PY
echo "$COMPOSE_SPEC_SHA256  $SCHEMA" | sha256sum --check --quiet ||
  { echo "setup_deploy_venv: compose_spec.json has an unexpected SHA-256" >&2; rm -rf "$VENV"; exit 1; }
