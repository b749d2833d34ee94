#!/usr/bin/env bash
# Proves the image builds and runs without a Docker engine: reads the Dockerfile's instructions and
# replays them, in their order, in a clean temporary directory (one directory per stage, the build
# context as `docker build` would send it), then runs the last stage like a container would be run in
# production: the release step (migrations) against a scratch database on DATABASE_URL's server, then
# the image's CMD, which must answer /readyz with 200 and pass the image's HEALTHCHECK.
#
# Because the steps are read from the Dockerfile, this cannot drift from it; an instruction it does not
# know how to replay is an error, never skipped. Exits non-zero on the first failure.
#
# Usage: scripts/docker-replay.sh [--build-only]
#   DOCKERFILE   the file to replay (default: ./Dockerfile)
#   DATABASE_URL a PostgreSQL server to create the scratch database on (default: 127.0.0.1:5432)
#   KEEP_REPLAY=1 keeps the temporary directory for inspection
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dockerfile="${DOCKERFILE:-$repo/Dockerfile}"
build_only=false
[ "${1:-}" = "--build-only" ] && build_only=true

say() { printf 'replay: %s\n' "$*"; }
fail() {
  printf 'replay: FAILED: %s\n' "$*" >&2
  exit 1
}

work="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-replay.XXXXXX")"
server_pid=""
scratch_db=""
server_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
runtime_dir=""
cleanup() {
  local status=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -n "$scratch_db" ]; then
    (cd "$runtime_dir" && node --input-type=module -e "
      const { dropDatabase } = await import('./dist/src/infra/database-admin.js');
      await dropDatabase(process.argv[1], process.argv[2]);" "$server_url" "$scratch_db") ||
      echo "replay: could not drop scratch database $scratch_db" >&2
  fi
  if [ "${KEEP_REPLAY:-}" = "1" ]; then echo "replay: kept $work" >&2; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT

# --- The build context: the checkout as `docker build .` sends it, less what .dockerignore names. -----
context="$work/context"
mkdir -p "$context"
excludes=(--exclude=./.git)
if [ -f "$repo/.dockerignore" ]; then
  while IFS= read -r pattern || [ -n "$pattern" ]; do
    pattern="${pattern%%#*}"
    pattern="$(echo "$pattern" | xargs)"
    [ -z "$pattern" ] && continue
    case "$pattern" in '!'*) fail ".dockerignore exception patterns ($pattern) are not replayed" ;; esac
    excludes+=("--exclude=./${pattern#/}")
  done <"$repo/.dockerignore"
fi
tar -C "$repo" "${excludes[@]}" -cf - . | tar -C "$context" -xf -
say "context: $(find "$context" -type f | wc -l) files (.dockerignore applied)"

# --- Instructions: comments dropped, continuation lines joined. ---------------------------------------
instructions=()
current=""
while IFS= read -r line || [ -n "$line" ]; do
  if [ -z "$current" ]; then
    case "$line" in '' | '#'* | [[:space:]]'#'*) continue ;; esac
  fi
  if [[ "$line" =~ ^(.*)\\[[:space:]]*$ ]]; then
    current+="${BASH_REMATCH[1]}"
    continue
  fi
  current+="$line"
  instructions+=("$current")
  current=""
done <"$dockerfile"
[ -z "$current" ] || fail "the Dockerfile ends inside a continued line"

json_args() { node -e 'const a = JSON.parse(process.argv[1]); if (!Array.isArray(a)) process.exit(1); for (const s of a) process.stdout.write(`${s}\0`);' "$1"; }

node_major="$(node -p 'process.versions.node.split(".")[0]')"
declare -A stage_dir=()
stage=""
stage_root=""
workdir="/"
stage_env=()
cmd_json=""
healthcheck_json=""
user=""

in_stage() { [ -n "$stage" ] || fail "$1 before any FROM"; }
# The path a stage sees as `path` (absolute, or relative to its WORKDIR).
stage_path() { case "$1" in /*) printf '%s%s' "$stage_root" "$1" ;; *) printf '%s%s/%s' "$stage_root" "$workdir" "$1" ;; esac; }

for instruction in "${instructions[@]}"; do
  keyword="${instruction%%[[:space:]]*}"
  rest="$(echo "${instruction#"$keyword"}" | sed -e 's/^[[:space:]]*//')"
  case "${keyword^^}" in
  FROM)
    read -r image as name extra <<<"$rest"
    [ -z "${extra:-}" ] || fail "FROM with options is not replayed: $rest"
    [ -z "${as:-}" ] || [ "${as^^}" = AS ] || fail "unreadable FROM: $rest"
    stage="${name:-stage${#stage_dir[@]}}"
    stage_root="$work/stages/$stage"
    stage_dir[$stage]="$stage_root"
    workdir="/"
    stage_env=()
    mkdir -p "$stage_root"
    # The base image provides Node; the replay uses this machine's, so it must be the same major.
    if [[ "$image" =~ ^node:([0-9]+) ]]; then
      [ "${BASH_REMATCH[1]}" = "$node_major" ] ||
        fail "stage $stage is built FROM $image but this machine runs Node $node_major"
    else
      fail "stage $stage: base image $image is not a node:<major> image this replay can stand in for"
    fi
    say "[$stage] FROM $image (Node $(node --version) stands in)"
    ;;
  WORKDIR)
    in_stage WORKDIR
    case "$rest" in /*) workdir="$rest" ;; *) workdir="$workdir/$rest" ;; esac
    mkdir -p "$stage_root$workdir"
    say "[$stage] WORKDIR $workdir"
    ;;
  ENV)
    in_stage ENV
    read -r -a pairs <<<"$rest"
    for pair in "${pairs[@]}"; do
      [[ "$pair" =~ ^[A-Za-z_][A-Za-z0-9_]*=[^\"\']*$ ]] || fail "ENV is replayed only as unquoted KEY=value pairs: $rest"
      stage_env+=("$pair")
    done
    say "[$stage] ENV ${pairs[*]}"
    ;;
  COPY)
    in_stage COPY
    read -r -a words <<<"$rest"
    from=""
    args=()
    for word in "${words[@]}"; do
      case "$word" in
      --from=*) from="${word#--from=}" ;;
      --chown=*) ;; # ownership: the replay runs as one user
      --*) fail "COPY option $word is not replayed" ;;
      *) args+=("$word") ;;
      esac
    done
    [ "${#args[@]}" -ge 2 ] || fail "COPY needs a source and a destination: $rest"
    dest="${args[-1]}"
    sources=("${args[@]:0:${#args[@]}-1}")
    if [ -n "$from" ]; then
      [ -n "${stage_dir[$from]:-}" ] || fail "COPY --from=$from names no earlier stage"
      base="${stage_dir[$from]}"
    else
      base="$context"
    fi
    target="$(stage_path "$dest")"
    for source in "${sources[@]}"; do
      src="$base/${source#/}"
      [ -e "$src" ] || fail "[$stage] COPY: $source does not exist${from:+ in stage $from}"
      if [ -d "$src" ]; then
        mkdir -p "$target"
        cp -a "$src/." "$target/"
      elif [ "${#sources[@]}" -gt 1 ] || [[ "$dest" == */ ]] || [ -d "$target" ]; then
        mkdir -p "$target"
        cp -a "$src" "$target/"
      else
        mkdir -p "$(dirname "$target")"
        cp -a "$src" "$target"
      fi
    done
    say "[$stage] COPY $rest"
    ;;
  RUN)
    in_stage RUN
    case "$rest" in '['*) fail "RUN in exec form is not replayed: $rest" ;; --*) fail "RUN options are not replayed: $rest" ;; esac
    say "[$stage] RUN $rest"
    started=$SECONDS
    # The stage's own ENV, none of this machine's application settings (a build sees none either).
    (cd "$stage_root$workdir" &&
      env -u NODE_ENV -u DATABASE_URL ${stage_env[@]+"${stage_env[@]}"} sh -c "$rest") ||
      fail "[$stage] RUN $rest"
    say "[$stage] ... done in $((SECONDS - started)) s"
    ;;
  USER)
    user="$rest"
    say "[$stage] USER $rest (recorded; the replay runs as $(id -un))"
    ;;
  EXPOSE)
    say "[$stage] EXPOSE $rest (recorded; the replay listens on a free loopback port)"
    ;;
  HEALTHCHECK)
    [[ "$rest" =~ CMD[[:space:]]+(\[.*\])[[:space:]]*$ ]] || fail "HEALTHCHECK is replayed only with an exec-form CMD: $rest"
    healthcheck_json="${BASH_REMATCH[1]}"
    say "[$stage] HEALTHCHECK recorded"
    ;;
  CMD)
    [[ "$rest" =~ ^\[.*\]$ ]] || fail "CMD is replayed only in exec form: $rest"
    cmd_json="$rest"
    say "[$stage] CMD $rest"
    ;;
  *)
    fail "instruction ${keyword^^} is not replayed; teach scripts/docker-replay.sh before using it: $instruction"
    ;;
  esac
done

[ -n "$stage" ] || fail "the Dockerfile has no FROM"
[ -n "$cmd_json" ] || fail "the Dockerfile has no CMD"
runtime_dir="$stage_root$workdir"
runtime_env=(${stage_env[@]+"${stage_env[@]}"})
say "image built: last stage $stage, WORKDIR $workdir${user:+, USER $user}"

# --- What the runtime stage carries. -----------------------------------------------------------------
[ -d "$runtime_dir/node_modules" ] || fail "the runtime stage has no node_modules"
say "runtime node_modules: $(du -sh "$runtime_dir/node_modules" | cut -f1)"
(cd "$runtime_dir" && node --input-type=module -e "
  import { readFileSync, readdirSync } from 'node:fs';
  const lock = JSON.parse(readFileSync(process.argv[1], 'utf8')).packages;
  const installed = [];
  for (const entry of readdirSync('node_modules')) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) for (const sub of readdirSync('node_modules/' + entry)) installed.push(entry + '/' + sub);
    else installed.push(entry);
  }
  const dev = installed.filter((name) => lock['node_modules/' + name]?.dev);
  if (dev.length > 0) {
    console.error('replay: FAILED: development-only packages in the runtime stage: ' + dev.join(', '));
    process.exit(1);
  }
  console.log('replay: runtime stage: ' + installed.length + ' top-level packages, none development-only');
" "$context/package-lock.json")

$build_only && exit 0

# --- Run it as production would: release step, then the image's CMD. ---------------------------------
free_port() { node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'; }
port="$(free_port)"
scratch_db="tollgate_replay_$$_$(date +%s)"
database_url="$(cd "$runtime_dir" && node --input-type=module -e "
  const { createScratchDatabase } = await import('./dist/src/infra/database-admin.js');
  console.log(await createScratchDatabase(process.argv[1], process.argv[2]));" "$server_url" "$scratch_db")"
say "scratch database $scratch_db on $(node -e 'const u = new URL(process.argv[1]); console.log(u.host)' "$server_url")"

# What a deployment supplies (docker run -e …). Stripe and SMTP point at closed loopback ports: nothing
# contacts them at start, and nothing here may reach the network. HOST keeps the replay on loopback.
run_env=(
  "${runtime_env[@]}"
  "HOST=127.0.0.1"
  "PORT=$port"
  "DATABASE_URL=$database_url"
  "ADMIN_TOKEN=replay_admin_$(node -p 'require("node:crypto").randomBytes(16).toString("hex")')"
  "PUBLIC_BASE_URL=https://tollgate.replay.invalid"
  "TRUST_PROXY=1"
  "STRIPE_SECRET_KEY=sk_test_replay"
  "STRIPE_API_BASE=http://127.0.0.1:9"
  "STRIPE_WEBHOOK_SECRET=whsec_replay"
  "SMTP_URL=smtp://127.0.0.1:9"
  "MAIL_FROM=Tollgate <tollgate@replay.invalid>"
  "WEBHOOK_SECRET_KEY=dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE="
  "LOG_LEVEL=warn"
)
in_container() { (cd "$runtime_dir" && env -i "PATH=$PATH" "HOME=$work" "${run_env[@]}" "$@"); }

say "release step: node dist/src/main.js migrate"
in_container node dist/src/main.js migrate || fail "the release step (migrate) failed"

# The development fallback is not in the image: without DATABASE_URL it must say so in one line.
fallback_err="$work/fallback.err"
if (cd "$runtime_dir" && env -i "PATH=$PATH" "HOME=$work" NODE_ENV=development "DATA_DIR=$work/data" \
  node dist/src/main.js migrate >/dev/null 2>"$fallback_err"); then
  fail "without DATABASE_URL the runtime stage started an embedded PostgreSQL it should not carry"
fi
grep -q 'Set DATABASE_URL' "$fallback_err" && ! grep -q '^    at ' "$fallback_err" ||
  fail "without DATABASE_URL the runtime stage did not answer with one line naming it: $(cat "$fallback_err")"
say "without DATABASE_URL: $(head -c 120 "$fallback_err")…"

mapfile -d '' -t cmd < <(json_args "$cmd_json")
log="$work/server.log"
say "starting CMD: ${cmd[*]} (NODE_ENV=production, port $port)"
started_ms=$(date +%s%3N)
(cd "$runtime_dir" && exec env -i "PATH=$PATH" "HOME=$work" "${run_env[@]}" "${cmd[@]}") >"$log" 2>&1 &
server_pid=$!

status=""
for _ in $(seq 1 600); do
  status="$(node -e 'fetch(process.argv[1]).then(async (r) => console.log(r.status, await r.text()), () => console.log("down"))' \
    "http://127.0.0.1:$port/readyz")"
  [[ "$status" == 200* ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; fail "the service exited during start-up"; }
  sleep 0.1
done
[[ "$status" == '200 {"status":"ready","database":"up"}' ]] ||
  { cat "$log" >&2; fail "/readyz answered: $status"; }
say "GET /readyz -> $status ($(($(date +%s%3N) - started_ms)) ms after start)"

if [ -n "$healthcheck_json" ]; then
  mapfile -d '' -t check < <(json_args "$healthcheck_json")
  in_container "${check[@]}" || fail "the image's HEALTHCHECK command failed"
  say "HEALTHCHECK command -> exit 0"
fi

kill -TERM "$server_pid"
exit_code=0
wait "$server_pid" || exit_code=$?
server_pid=""
[ "$exit_code" -eq 0 ] || { cat "$log" >&2; fail "the service exited with $exit_code on SIGTERM"; }
say "stopped on SIGTERM (exit 0)"
say "OK"
