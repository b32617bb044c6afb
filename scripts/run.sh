#!/usr/bin/env bash
# `make run`: migrate, make sure Redis answers, load the demo, then start one Celery worker (with
# the beat scheduler that runs the reconciler) and gunicorn. Ctrl-C stops all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ADDR=${RUNLENS_ADDR:-127.0.0.1:8000}

REDIS_PID=var/redis/redis.pid
[ -f "$REDIS_PID" ] && had_redis=1 || had_redis=""
scripts/ensure-redis.sh
# A private redis-server started just now is ours to stop with the rest.
[ -z "$had_redis" ] && [ -f "$REDIS_PID" ] && private_redis=$(cat "$REDIS_PID") || private_redis=""
$PY manage.py migrate --noinput
$PY manage.py demo
# Without a C compiler at install the native scanner is not built: logs are still read, slower. Say so.
$PY -c 'from ingest.parsers import native; n = native.notice(); n and print("runlens:", n)'

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "stopping runlens (worker and web server)…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$private_redis" ]; then
    echo "stopping the private redis-server (pid $private_redis)"
    kill -TERM "$private_redis" 2>/dev/null || true
  fi
}
trap stop INT TERM EXIT
[ -n "$private_redis" ] && echo "(a private redis-server was started for this session; Ctrl-C stops it too)"

# SIGTERM = soft shutdown: running parses get RUNLENS_SOFT_SHUTDOWN_SECONDS, then go back to the queue.
REMAP_SIGTERM=SIGQUIT .venv/bin/celery -A webapp worker --beat --loglevel INFO --concurrency 1 \
  --schedule var/celerybeat-schedule --hostname "runlens@%h" &
pids+=($!)
# gunicorn, not runserver: a fixed pool of threads (so of database connections) and a real listen
# queue; bursts of CI uploads and page loads queue up instead of failing.
.venv/bin/gunicorn webapp.wsgi --bind "$ADDR" --workers 2 --threads 4 --backlog 2048 \
  --graceful-timeout 20 --access-logfile - &
pids+=($!)

cat <<MSG

  runlens is starting at http://$ADDR/
  log in as  demo / demo   (a dev-only user; the demo runs parse in the background)
  Ctrl-C stops the worker and the web server.

MSG
wait -n "${pids[@]}"
