#!/usr/bin/env bash
# Traceloop's LangChain instrumentation (OpenLLMetry's `opentelemetry-instrumentation-langchain`)
# for tests/integration/test_peers_autoload.py, which starts apps with `opentelemetry-instrument` in
# environments holding exactly a chosen set of the LangChain peers (tests/support/peer_envs.py).
#
# It goes into its OWN folder, .venv-traceloop/ (git-ignored; `pip install --target`), never into
# .venv: it registers the `opentelemetry_instrumentor` entry point `langchain`, like the two
# peers .venv already has, so in .venv `opentelemetry-instrument` would load it for every app.
# tests/support/peer_envs.py links this folder's packages into the environments that include Traceloop.
#
# Only what .venv lacks is installed (--no-deps): the instrumentation and
# opentelemetry-semantic-conventions-ai. Its other requirements (opentelemetry-api<2,>=1.38.0,
# opentelemetry-instrumentation>=0.59b0, opentelemetry-semantic-conventions>=0.63b1) are met by
# .venv's OpenTelemetry 1.45.2/0.66b2, checked below with pip's resolver view of .venv.
#
# Idempotent and quick when the pinned versions are there. Exits non-zero when it cannot provide
# them. Prints `traceloop: <folder>` and the versions.
set -euo pipefail

cd "$(dirname "$0")/../.."
VERSION="${TRACELOOP_LANGCHAIN_VERSION:-0.62.4}"
SEMCONV_AI_VERSION="${TRACELOOP_SEMCONV_AI_VERSION:-0.5.1}"
TARGET=.venv-traceloop
PY=.venv/bin/python

installed() {
  PYTHONPATH="$TARGET" "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version

print(version(sys.argv[1]))
PYEOF
}

if [ ! -x "$PY" ]; then
  echo "ERROR: $PY missing (make venv first)" >&2
  exit 1
fi
if [ "$(installed opentelemetry-instrumentation-langchain || true)" != "$VERSION" ] ||
  [ "$(installed opentelemetry-semantic-conventions-ai || true)" != "$SEMCONV_AI_VERSION" ]; then
  echo "==> Traceloop LangChain $VERSION missing from $TARGET: installing it (--target, no deps)"
  rm -rf "$TARGET"
  "$PY" -m pip install --quiet --no-deps --target "$TARGET" \
    "opentelemetry-instrumentation-langchain==$VERSION" \
    "opentelemetry-semantic-conventions-ai==$SEMCONV_AI_VERSION"
fi
# Its requirements that .venv provides must hold there (no downgrade was done to get them).
PYTHONPATH="$TARGET" "$PY" - <<'PYEOF'
from importlib.metadata import distribution, version

from packaging.requirements import Requirement

missing = []
for raw in distribution("opentelemetry-instrumentation-langchain").requires or []:
    req = Requirement(raw)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        have = version(req.name)
    except Exception:
        missing.append(f"{req} (not installed)")
        continue
    if not req.specifier.contains(have, prereleases=True):
        missing.append(f"{req} (have {have})")
if missing:
    raise SystemExit("ERROR: Traceloop's requirements unmet: " + "; ".join(missing))
PYEOF
echo "traceloop: $PWD/$TARGET"
echo "           opentelemetry-instrumentation-langchain $(installed opentelemetry-instrumentation-langchain)"
echo "           opentelemetry-semantic-conventions-ai $(installed opentelemetry-semantic-conventions-ai)"
