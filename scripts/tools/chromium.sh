#!/usr/bin/env bash
# chromium: headless browser for tests/integration/test_report_browser.py, which opens the inspector's HTML
# report (screenshot, DOM after the scripts ran, console errors). Installs the Debian package
# when missing and we are root with apt-get; otherwise warns (fails when CI=true): the browser
# tests then skip. Idempotent. Prints the binary's version on a line `chromium: ...`.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> chromium missing: installing the Debian 'chromium' package"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
    command -v chromium >/dev/null
  else
    echo "WARNING: chromium is not on PATH, and not running as root with apt-get," >&2
    echo "         so not installing it. Install with: sudo apt-get install -y chromium" >&2
    echo "         Without it the browser tests of the HTML report are skipped" >&2
    echo "         (a failure when CI=true)." >&2
    [ "${CI:-}" = true ] && exit 1
    exit 0
  fi
fi
# Debian's /usr/bin/chromium wrapper may print shell noise on stderr; keep only the version.
if ! version="$(chromium --version 2>/dev/null)"; then
  echo "ERROR: $(command -v chromium) does not run" >&2
  exit 1
fi
echo "chromium: $version"
