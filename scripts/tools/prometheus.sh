#!/usr/bin/env bash
# Provide `prometheus` and `promtool` (Debian package `prometheus`) for tests/integration/test_alerts.py.
#
# Idempotent: when both binaries are on PATH it only prints their versions. As root with apt-get
# it installs the package (without recommends, so no node exporter) and keeps the package's
# service from starting: the tests start their own Prometheus on a free loopback port, and a
# packaged daemon on :9090 would only be in the way. Exits non-zero when it cannot provide them.
set -euo pipefail

have_tools() {
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1
}

if ! have_tools; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> promtool/prometheus missing: installing the Debian 'prometheus' package"
    # Forbid service starts during the install (policy-rc.d exit 101 = "action forbidden"),
    # unless the machine already has its own policy; removed again on exit.
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy"
      chmod 0755 "$policy"
      own_policy=1
    fi
    cleanup() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
    trap cleanup EXIT
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
    cleanup
    trap - EXIT
    # Belt and braces: if a packaged daemon was started anyway (systemd or sysv), stop it.
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    elif [ -x /etc/init.d/prometheus ]; then
      /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    fi
  else
    echo "ERROR: promtool and prometheus are not installed, and this is not root with apt-get." >&2
    echo "       Install them with: sudo apt-get install -y --no-install-recommends prometheus" >&2
    echo "       (or put the upstream release's prometheus and promtool on PATH)." >&2
    echo "       Without them tests/integration/test_alerts.py is skipped (a failure when CI=true)." >&2
    exit 1
  fi
fi

if ! have_tools; then
  echo "ERROR: the 'prometheus' package is installed but promtool/prometheus are not on PATH." >&2
  exit 1
fi
echo "promtool:   $(promtool --version 2>&1 | head -n 1)"
echo "prometheus: $(prometheus --version 2>&1 | head -n 1)"
