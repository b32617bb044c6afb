#!/usr/bin/env bash
# `make run`: migrate, make sure Redis answers, load the demo, then start one Celery worker (with
# the beat scheduler that runs the reconciler) and Django's server. Ctrl-C stops all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ADDR=${RUNLENS_ADDR:-127.0.0.1:8000}

scripts/ensure-redis.sh
$PY manage.py migrate --noinput
$PY manage.py demo

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "stopping runlens (worker and web server)…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

.venv/bin/celery -A webapp worker --beat --loglevel INFO --concurrency 1 \
  --schedule var/celerybeat-schedule --hostname "runlens@%h" &
pids+=($!)
$PY manage.py runserver "$ADDR" --noreload &
pids+=($!)

cat <<MSG

  runlens is starting at http://$ADDR/
  log in as  demo / demo   (a dev-only user; the demo runs parse in the background)
  Ctrl-C stops the worker and the web server.

MSG
wait -n "${pids[@]}"
