#!/usr/bin/env bash
# jq: used by dashboards/honeycomb/create.sh, which the tests run against a stub curl.
set -euo pipefail
if command -v jq >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package jq"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq
  command -v jq >/dev/null
else
  echo "ERROR: jq is missing and cannot be installed here (not root or no apt-get)" >&2
  exit 1
fi
