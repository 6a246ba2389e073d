#!/usr/bin/env bash
# npm packages for the Grafana dashboard type check (tests/integration/test_grafana_dashboard.py):
# typescript and @grafana/schema, pinned in dashboards/grafana/check/package-lock.json.
# Runs `npm ci` when node_modules is missing or was installed from another lockfile; otherwise does
# nothing. Exits non-zero (loudly) when node or npm is missing or the install fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
check="$root/dashboards/grafana/check"
stamp="$check/node_modules/.installed-lock-sha256"

if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "grafana-schema: installing Debian packages nodejs and npm"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ERROR: '$tool' not found: the Grafana dashboard type check needs Node.js >= 18 and npm." >&2
    echo "       Install them (Debian: apt-get install -y nodejs npm) and re-run $0." >&2
    exit 1
  fi
done

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 18 ]; then
  echo "ERROR: Node.js $(node --version) is too old for the Grafana dashboard type check (need >= 18)." >&2
  exit 1
fi

want="$(sha256sum "$check/package-lock.json" | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [ "$want" = "$have" ] && [ -x "$check/node_modules/.bin/tsc" ] \
  && [ -f "$check/node_modules/@grafana/schema/package.json" ]; then
  echo "grafana-schema: node_modules up to date (typescript $(node -p "require('$check/node_modules/typescript/package.json').version")," \
    "@grafana/schema $(node -p "require('$check/node_modules/@grafana/schema/package.json').version"))"
  exit 0
fi

echo "grafana-schema: npm ci in ${check#"$root"/} (node $(node --version), npm $(npm --version))"
(cd "$check" && npm ci --no-audit --no-fund)
echo "$want" >"$stamp"
echo "grafana-schema: installed typescript $(node -p "require('$check/node_modules/typescript/package.json').version")," \
  "@grafana/schema $(node -p "require('$check/node_modules/@grafana/schema/package.json').version")"
