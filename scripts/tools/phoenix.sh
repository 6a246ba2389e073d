#!/usr/bin/env bash
# arize-phoenix: a real trace backend (OTLP receiver, trace store, UI and query API) for
# tests/integration/test_phoenix.py, which sends the library's spans from a real agent to it and reads them
# back through Phoenix's own REST API. tests/support/phoenix_server.py starts `phoenix serve` itself;
# this only installs it.
#
# Phoenix goes into its OWN venv, .venv-phoenix/ (git-ignored), never into .venv: its
# dependencies (FastAPI, Strawberry, SQLAlchemy, pandas, numpy, grpcio, ...) would shift the
# project's dev environment. The version is pinned (PHOENIX_VERSION overrides it).
#
# Idempotent and quick when the pinned version is already there (one `phoenix` import check).
# Exits non-zero when it cannot provide a working `phoenix` command. Prints its path and version
# on lines `phoenix: <path>` and `         <version>`.
set -euo pipefail

cd "$(dirname "$0")/../.."
VERSION="${PHOENIX_VERSION:-20.26.1}"
VENV=.venv-phoenix
PY="$VENV/bin/python"

installed_version() {
  "$PY" - <<'EOF' 2>/dev/null
from importlib.metadata import version

print(version("arize-phoenix"))
EOF
}

if [ ! -x "$PY" ]; then
  echo "==> $VENV missing: creating it with $(python3 --version 2>&1)"
  python3 -m venv "$VENV"
  "$PY" -m pip install --quiet --upgrade pip
fi
if [ "$(installed_version || true)" != "$VERSION" ]; then
  echo "==> arize-phoenix $VERSION missing from $VENV: installing it (a few hundred MB)"
  "$PY" -m pip install --quiet "arize-phoenix==$VERSION"
fi
if [ "$(installed_version || true)" != "$VERSION" ]; then
  echo "ERROR: arize-phoenix $VERSION is not importable from $PY" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/phoenix" ]; then
  echo "ERROR: $VENV/bin/phoenix not found after installing arize-phoenix $VERSION" >&2
  exit 1
fi
echo "phoenix: $PWD/$VENV/bin/phoenix"
echo "         arize-phoenix $VERSION"
