#!/usr/bin/env bash
# CI: the README's deploy path, on the production driver. A fresh database on the local
# PostgreSQL, `npm run db:migrate` against it through the Neon driver (a local WebSocket relay
# stands in for Neon's proxy: CITY_NEON_WS_PROXY, test only), then the built server on that
# same database reads doors. Then the same on a second fresh database through node-postgres
# (CITY_DB_DRIVER=pg, no relay). Needs `next build` first. Drops the databases whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

PG="-h 127.0.0.1 -p 5432 -U postgres"
db="city_deploy_$$"
# A port the system picks free now (never a fixed one: two checks, or another service, collide).
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
work="$(mktemp -d)"
relay_pid=""
server_pid=""

cleanup() {
  [ -n "$server_pid" ] && kill -- "-$server_pid" 2>/dev/null || true
  [ -n "$relay_pid" ] && kill -- "-$relay_pid" 2>/dev/null || true
  dropdb $PG --if-exists --force "$db" 2>/dev/null || true
  dropdb $PG --if-exists --force "${db}_pg" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "deploy check: $1" >&2
  [ -f "$work/server.log" ] && tail -20 "$work/server.log" >&2
  exit 1
}

createdb $PG "$db"
createdb $PG "${db}_pg"

setsid node_modules/.bin/tsx scripts/neon-relay.ts >"$work/relay.port" 2>"$work/relay.log" &
relay_pid=$!
for _ in $(seq 1 50); do [ -s "$work/relay.port" ] && break; sleep 0.1; done
relay_port="$(head -1 "$work/relay.port")"
[ -n "$relay_port" ] || fail "the relay did not start"

check_leg() {
  local driver="$1" target="$2"

  # The README's migrate command, exactly.
  npm run --silent db:migrate >"$work/migrate.log" || fail "npm run db:migrate failed"
  grep -q "($driver)" "$work/migrate.log" || fail "db:migrate did not use the $driver driver: $(cat "$work/migrate.log")"
  tables="$(psql $PG -d "$target" -tAc "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('citizens', 'gate_nonces', 'residency_log')")"
  [ "$tables" = "3" ] || fail "db:migrate did not create the tables (found $tables of 3)"

  # The port is free when picked, but another process may take it before the server binds it:
  # then the server exits with EADDRINUSE and starts again on another port (three tries).
  local answered="" attempt
  for attempt in 1 2 3; do
    port="${DEPLOY_CHECK_PORT:-$(free_port)}"
    setsid node node_modules/next/dist/bin/next start -H 127.0.0.1 -p "$port" >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 450); do
      if curl -sf -o /dev/null "http://127.0.0.1:$port/beacon.json"; then answered=1; break; fi
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.2
    done
    [ -n "$answered" ] && break
    kill -- "-$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    grep -q EADDRINUSE "$work/server.log" || break
  done
  # A server that never answered fails the check (it does not go on to read doors of nothing).
  [ -n "$answered" ] || fail "the built server on the $driver driver never answered /beacon.json (90 s)"

  for path in /city.json /gate; do
    status="$(curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:$port$path")"
    [ "$status" = "200" ] || fail "GET $path answered $status: $(head -c 300 "$work/body")"
  done
  # The nonce GET /gate issued, spent by a look, is in the migrated database: the server really ran
  # on it (a nonce is stored only once it is spent).
  nonce="$(sed -n 's/.*"nonce":"\([0-9a-f]\{32\}\)".*/\1/p' "$work/body")"
  [ -n "$nonce" ] || fail "GET /gate answered no nonce: $(head -c 300 "$work/body")"
  curl -s -o /dev/null -H 'content-type: application/json' \
    -d '{"name":"deploy-check","runtime":"other","origin":"deploy.check","statement":"","ask":"look","kind":"agent","nonce":"'"$nonce"'"}' \
    "http://127.0.0.1:$port/gate"
  nonces="$(psql $PG -d "$target" -tAc "SELECT count(*) FROM gate_nonces WHERE nonce = '$nonce'")"
  [ "$nonces" = "1" ] || fail "POST /gate did not record its spent nonce in the migrated database"
  echo "deploy check: db:migrate and the built server on the $driver driver: ok"
  kill -- "-$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

export CITY_DB_DRIVER=neon DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
export CITY_NEON_WS_PROXY="127.0.0.1:$relay_port/v1?address={host}:{port}"
check_leg neon "$db"

# Any other PostgreSQL: node-postgres straight to the server, no relay.
unset CITY_NEON_WS_PROXY
export CITY_DB_DRIVER=pg DATABASE_URL="postgres://postgres@127.0.0.1:5432/${db}_pg"
check_leg pg "${db}_pg"
