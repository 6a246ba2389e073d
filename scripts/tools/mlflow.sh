#!/usr/bin/env bash
# mlflow: a second real trace backend (OTLP/HTTP receiver, trace store, UI and REST API) for
# tests/integration/test_mlflow.py, which sends the library's spans from a real agent to `mlflow server`
# and reads them back through MLflow's own REST API and its UI in Chromium.
# tests/support/mlflow_server.py starts the server itself; this only installs it.
#
# MLflow goes into its OWN venv, .venv-mlflow/ (git-ignored), never into .venv: its
# dependencies (Flask, FastAPI, SQLAlchemy, alembic, pandas, numpy, pyarrow, scikit-learn,
# opentelemetry-* of its own choosing, ...) would shift the project's dev environment. The
# version is pinned (MLFLOW_VERSION overrides it).
#
# Idempotent and quick when the pinned version is already there (one version check).
# Exits non-zero when it cannot provide a working `mlflow` command. Prints its path and version
# on lines `mlflow: <path>` and `        <version>`.
set -euo pipefail

cd "$(dirname "$0")/../.."
VERSION="${MLFLOW_VERSION:-3.17.2}"
VENV=.venv-mlflow
PY="$VENV/bin/python"

installed_version() {
  "$PY" - <<'PYEOF' 2>/dev/null
from importlib.metadata import version

print(version("mlflow"))
PYEOF
}

if [ ! -x "$PY" ]; then
  echo "==> $VENV missing: creating it with $(python3 --version 2>&1)"
  python3 -m venv "$VENV"
  "$PY" -m pip install --quiet --upgrade pip
fi
if [ "$(installed_version || true)" != "$VERSION" ]; then
  echo "==> mlflow $VERSION missing from $VENV: installing it (about 850 MB, under a minute with a warm pip cache)"
  "$PY" -m pip install --quiet "mlflow==$VERSION"
fi
if [ "$(installed_version || true)" != "$VERSION" ]; then
  echo "ERROR: mlflow $VERSION is not importable from $PY" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/mlflow" ]; then
  echo "ERROR: $VENV/bin/mlflow not found after installing mlflow $VERSION" >&2
  exit 1
fi
echo "mlflow: $PWD/$VENV/bin/mlflow"
echo "        mlflow $VERSION"
