#!/usr/bin/env bash
# Make sure a Redis answers at $REDIS_URL (default redis://127.0.0.1:6379/0).
# If none does, start a private redis-server bound to 127.0.0.1 with its files under var/redis.
# If the binary is missing: install Debian's redis-server when root, else say what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
PY=${PYTHON:-.venv/bin/python}

ping() {
  "$PY" - "$URL" <<'PYEOF' >/dev/null 2>&1
import sys, redis
redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()
PYEOF
}

ping && exit 0
hostport=${URL#redis://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%%:*}; port=${hostport##*:}; [ "$port" = "$hostport" ] && port=6379
case "$host" in
  127.0.0.1|localhost) ;;
  *) echo "Redis at $URL does not answer, and it is not on this machine: start it there." >&2; exit 1 ;;
esac
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "redis-server is missing: installing Debian's redis-server" >&2
    (apt-get install -y -q redis-server || (apt-get update -q && apt-get install -y -q redis-server)) >/dev/null
  else
    echo "redis-server is missing. Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) or set REDIS_URL." >&2
    exit 1
  fi
fi
mkdir -p var/redis
echo "no Redis at $URL: starting a private redis-server on 127.0.0.1:$port (files in var/redis)" >&2
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$PWD/var/redis" \
  --pidfile "$PWD/var/redis/redis.pid" --logfile "$PWD/var/redis/redis.log" --save "" --appendonly no
for _ in $(seq 1 50); do ping && exit 0; sleep 0.1; done
echo "redis-server did not come up; see var/redis/redis.log" >&2
exit 1
