#!/usr/bin/env bash
# Smoke test of the default start: no DATABASE_URL, so Tollgate starts its embedded PostgreSQL.
# Starts the built service, waits for /readyz, creates an app through GraphQL with the printed admin
# token, stops it with SIGTERM and checks that it exited cleanly and left no PostgreSQL behind.
set -euo pipefail
cd "$(dirname "$0")/.."

data_dir="$PWD/.data/smoke-$$"
log="$(mktemp)"
trap 'rm -rf "$data_dir" "$log"' EXIT

env -u DATABASE_URL -u ADMIN_TOKEN DATA_DIR="$data_dir" PORT=0 STRIPE_EMULATOR_PORT=0 LOG_LEVEL=warn \
  node dist/src/main.js serve >"$log" 2>&1 &
pid=$!

base=""
for _ in $(seq 1 240); do
  base=$(grep -oE 'REST API +http://[^ ]+/v1' "$log" | grep -oE 'http://[^ ]+' | sed 's#/v1$##' || true)
  if [ -n "$base" ] && curl -fsS "$base/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "smoke: service exited during start-up"; cat "$log"; exit 1; fi
  sleep 0.5
done
[ -n "$base" ] || { echo "smoke: no banner within 120 s"; cat "$log"; kill "$pid"; exit 1; }
echo "smoke: ready at $base"

token=$(grep -oE 'Admin token +[^ ]+' "$log" | awk '{print $3}')
grep -q 'A demo app was created' "$log" || { echo "smoke: no demo app in the banner"; cat "$log"; exit 1; }

created=$(curl -fsS "$base/graphql" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"query":"mutation { createApp(input: {name: \"smoke\"}) { apiKey app { id } } }"}')
echo "$created" | grep -q '"apiKey":"tg_sk_' || { echo "smoke: createApp failed: $created"; exit 1; }
echo "smoke: app created"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 0 ] || { echo "smoke: exit status $status"; cat "$log"; exit 1; }
if pgrep -f "postgres -D $data_dir/postgres" >/dev/null; then echo "smoke: PostgreSQL still running"; exit 1; fi
echo "smoke: stopped cleanly (exit 0), embedded PostgreSQL stopped"
