#!/usr/bin/env bash
# `npm test`: every test of the city, independent steps side by side, each step's wall time and
# the machine's busy CPU-s over the run (scripts/machine-cpu.sh) printed at the end whatever the
# outcome.
#
#   lane domain: the unit and integration suites (vitest projects "domain" and "domain-shared"; no
#                build needed), on CITY_TEST_NODE24 when set (CI), else on `node`
#   lane built:  the production build, then side by side the type check of the whole project
#                (tsconfig includes the tests and scripts; TypeScript 7) and
#     lane http:   the HTTP suites against `next start`; then, with CITY_TEST_NODE24 (a Node 24
#                  binary; CI passes scripts/node.sh 24's), those of NODE24_HTTP again, the same
#                  build served by Node 24
#     lane served: the lint (formatter, import rules) -> the browser tests, then side by side
#       lane served-servers: the benchmark's smoke run -> with TEST_DATABASE_URL, the deploy path
#                  on PostgreSQL -> the official MCP conformance suite
#       lane served-domain: two domain suites moved here from the domain lane (DOMAIN_IN_SERVED)
#
# Most of the time is spent waiting on PostgreSQL and on `next start` servers, so the lanes share
# two cores well. CITY_TEST_NODE runs the build and the HTTP suites on another Node binary (CI
# passes Node 22, one of Vercel's runtimes; scripts/node.sh 22); CITY_TEST_NODE24 the domain lane and two
# HTTP suites (CI passes Node 24, the current LTS); everything else runs on `node`.
set -euo pipefail
cd "$(dirname "$0")/.."

export NEXT_TELEMETRY_DISABLED=1
# Node 22 and newer keep the bytecode of every module they compile here and reuse it (Node 20
# ignores it): each of the run's ~40 `next start` servers, on Node 22 or 24 in CI, compiles Next's
# server bundle anew otherwise (measured: about 1.5-2.5 CPU-s less per start). Keyed by each file's
# content and Node's version, so a stale entry is never used; it goes with node_modules.
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$PWD/node_modules/.cache/node-compile}"
BUILD_NODE="${CITY_TEST_NODE:-$(command -v node)}"
# The domain suites on Node 24 when CI gives it: the same files took 16 % less CPU there than on
# Node 20 (60.4 and 60.9 CPU-s against 72.0 and 72.7, twelve files on PGlite and PostgreSQL, back to
# back, 2026-11-30; Node 22: 67.3 and 68.3). The served lane keeps the machine's node, so its
# servers, the browser tests and the hostile suite still cover Node 20.
DOMAIN_NODE="${CITY_TEST_NODE24:-$(command -v node)}"

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/city-test.XXXXXX")"
# The migrated PGlite every vitest run of this one starts its databases and servers from, made once
# by the first run that needs it (tests/support/database-template.ts); it goes with the logs.
export CITY_TEST_TEMPLATES="$LOGS/templates"
TIMES="$LOGS/times"
STARTED=$(date +%s)
# The machine's CPU time at the start, so that the end says how much work the run was
# (scripts/machine-cpu.sh): the same run's wall time differs by the machine, and by its other work.
CPU_STARTED="$(bash scripts/machine-cpu.sh now)"
: >"$TIMES"

# The failed tests of every lane again, at the very end (a CI page often keeps only its tail, and
# the lanes' whole logs come before it): vitest's FAIL lines and playwright's ✘ lines, each with
# the few lines of error after it. Each failure once: a lane's log holds only its own output (the
# built lane's log no longer holds copies of the lanes it started: wait_lanes --status-only).
print_failures() {
  local found
  found="$(cat "$LOGS"/*.log 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | awk '
    /^ *(FAIL|✘) / || /^ *[0-9]+\) .*›/ { n = 8 }
    n > 0 { print; n-- }' | head -n 120)"
  [ -n "$found" ] || return 0
  echo
  echo "failed tests (repeated from the lanes above):"
  echo "$found"
}

# Each lane's slowest test files (vitest's run-summary reporter, tests/support/run-summary.ts;
# playwright's, tests/support/playwright-slowest.ts: `slowest files: (playwright) ...`), so that the
# long pole of the next run is known.
print_slowest() {
  local log lane
  echo
  echo "slowest test files per lane:"
  for log in "$LOGS"/*.log; do
    lane="$(basename "$log" .log)"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | awk -v lane="$lane" '
      /^slowest files: / { sub(/^slowest files: /, ""); printf "  %-8s %s\n", lane, $0 }'
  done
}

print_times() {
  local rc=$?
  # The progress watcher and its pipeline end with the run.
  if [ -n "${WATCHER:-}" ]; then pkill -P "$WATCHER" 2>/dev/null || true; kill "$WATCHER" 2>/dev/null || true; fi
  [ "$rc" = 0 ] || print_failures
  print_slowest
  echo
  echo "step wall times (seconds; steps of different lanes ran side by side):"
  sort -t'|' -k1,1n "$TIMES" | awk -F'|' '{ printf "  %-8s %-44s %5d  %s\n", $2, $3, $4, $5 }'
  echo "  npm test total                                        $(( $(date +%s) - STARTED ))"
  bash scripts/machine-cpu.sh since "$CPU_STARTED" || true
  rm -rf "$LOGS"
  exit "$rc"
}
trap print_times EXIT

# step LANE NAME COMMAND...: one step in the foreground, its wall time recorded.
step() {
  local lane="$1" name="$2" started rc=0
  shift 2
  started=$(date +%s)
  echo "step: $lane: $name: started"
  "$@" || rc=$?
  echo "$started|$lane|$name|$(( $(date +%s) - started ))|$([ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)")" >>"$TIMES"
  echo "step: $lane: $name: $([ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)") in $(( $(date +%s) - started )) s"
  return "$rc"
}

# lane NAME FUNCTION: runs a chain of steps in the background, its output kept in its own log,
# printed whole by wait_lanes (so lanes do not interleave line by line).
PIDS=()
NAMES=()
lane() {
  ( "$2" ) >"$LOGS/$1.log" 2>&1 &
  PIDS+=("$!")
  NAMES+=("$1")
}
# wait_lanes [--status-only]: waits for every lane started here and prints each one's log whole, or
# (inside another lane, whose own log the lane logs must not be copied into: the failure recap and
# the progress watcher read every log once) only its status, its log printed at the top.
wait_lanes() {
  local failed=0 i status
  for i in "${!PIDS[@]}"; do
    if wait "${PIDS[$i]}"; then status=ok; else status=FAILED; failed=1; fi
    echo "===== lane ${NAMES[$i]}: $status"
    [ "${1:-}" = --status-only ] || cat "$LOGS/${NAMES[$i]}.log"
  done
  PIDS=()
  NAMES=()
  return "$failed"
}

# Domain suites the served lane runs instead, beside its servers once the browser tests are done:
# the domain lane was the longest (measured in the clean-clone run of ea11826: domain 477 s, the
# built lane 424 s), and these two spend most of their time on one worker, hostile.test.ts on CPU
# (57 s there) and log-witness-client.test.ts waiting out witnesses' time budgets (33 s there).
DOMAIN_IN_SERVED=(tests/doors/hostile.test.ts tests/logs/transparency-log/log-witness-client.test.ts)
# Domain suites whose answers come from Node's OpenSSL: when the domain lane runs on another Node
# (DOMAIN_NODE, Node 24 in CI, whose OpenSSL 3.5 refuses small-order Ed25519 keys and a private
# JWK with a wrong x by itself), the served lane runs them again on the machine's node, so the
# city's own strict Ed25519 guard and its key import are shown on an OpenSSL that lets those
# through (3.0, as Node 20 and 22 have: both are among Vercel's runtimes).
NODE_OPENSSL_SUITES=(tests/keys/keys-mutants.test.ts tests/ground/sign-request.test.ts tests/ground/env.test.ts)

domain_lane() {
  # vitest.config.mts reads the list: a project's own include and exclude override `--exclude`.
  local excluded
  excluded=$(IFS=,; echo "${DOMAIN_IN_SERVED[*]}")
  CITY_TEST_EXCLUDE="$excluded" step domain "vitest domain (node $("$DOMAIN_NODE" -v))" "$DOMAIN_NODE" node_modules/vitest/vitest.mjs run --project domain --project domain-shared
}

http_lane() {
  step http "vitest http (node $("$BUILD_NODE" -v))" "$BUILD_NODE" node_modules/vitest/vitest.mjs run --project http
  [ -z "${CITY_TEST_NODE24:-}" ] || http_lane_node24
}

# The HTTP suites also served by Node 24: the city's doors as discovered from the outside
# (discovery) and the gate, admission to answers (gate). They run on the one build (a build is the
# same JavaScript whatever Node made it; a second build took two cores from every other lane and
# doubled the browser tests' time), each `next start` spawned by the Node that runs vitest.
NODE24_HTTP=(tests/surfaces/http/discovery.test.ts tests/gate/http/gate.test.ts)

http_lane_node24() {
  step http "vitest http: ${NODE24_HTTP[*]##*/} (node $("$CITY_TEST_NODE24" -v))" "$CITY_TEST_NODE24" node_modules/vitest/vitest.mjs run --project http "${NODE24_HTTP[@]}"
}

served_lane() {
  # This lane runs in a subshell that inherited its parent's lanes, which are not its children.
  PIDS=()
  NAMES=()
  # The formatter's check and the import rules (docs/architecture.md).
  step served "lint (prettier, dependency-cruiser)" npm run --silent lint
  step served "playwright" npx playwright test
  # Then two lanes of their own, once the browser tests (the tightest time limits) are done: run one
  # after the other, the domain suites ran alone at the end of the whole run, on one core (the
  # clean-clone run of 5459a4d: the other lanes had ended 74 s before this one).
  lane served-servers served_servers_lane
  lane served-domain served_domain_lane
  wait_lanes --status-only
}

served_servers_lane() {
  # The benchmark's smoke run (PGlite, a small city): no 5xx, no lost write, a table.
  step served "bench --smoke" npm run --silent bench -- --smoke
  if [ -n "${TEST_DATABASE_URL:-}" ]; then
    # The README's deploy path: `npm run db:migrate` on fresh databases through the Neon driver and
    # node-postgres, then the built server on each answers its doors.
    step served "deploy-check" bash scripts/deploy-check.sh
  fi
  step served "mcp-conformance" bash scripts/mcp-conformance.sh
}

served_domain_lane() {
  local files=("${DOMAIN_IN_SERVED[@]}")
  [ "$DOMAIN_NODE" = "$(command -v node)" ] || files+=("${NODE_OPENSSL_SUITES[@]}")
  step served "vitest domain: ${files[*]##*/} (node $(node -v))" npx vitest run --project domain --project domain-shared "${files[@]}"
}

# The build, then what needs it in two lanes of its own.
built_lane() {
  # This lane runs in a subshell that inherited the domain lane's pid, which is not its child.
  PIDS=()
  NAMES=()
  # The build leaves the type check to the step below (next.config.ts reads CITY_TYPECHECK_APART),
  # which runs beside the lanes the build starts: TypeScript 7 (typescript-go, native) checks the
  # same project (tsconfig.json, with the route types the build generates) in about a third of the
  # CPU the build's TypeScript 5.9 took (21.5 against 59.8 CPU-s, measured on the slower machine).
  CITY_TYPECHECK_APART=1 step built "next build (node $("$BUILD_NODE" -v))" "$BUILD_NODE" node_modules/next/dist/bin/next build
  lane http http_lane
  lane served served_lane
  local typecheck=0
  step built "typecheck (TypeScript $(node node_modules/typescript-go/lib/tsc.js -v | awk '{print $2}'))" node node_modules/typescript-go/lib/tsc.js --noEmit -p . --incremental false || typecheck=1
  wait_lanes --status-only
  return "$typecheck"
}

# (npm's pretest has made sure of Chromium: scripts/ensure-chromium.mjs.)
# Two vitest runs share the security figures: cleared once here, summed by each run's teardown.
rm -rf reports/security-figures
export CITY_FIGURES_CLEARED=1

# Progress as it happens: the lanes write to their own logs (printed whole when they end), so a
# watcher follows the logs and prints one line per finished test file (vitest), test (playwright)
# or step, with its lane. fd 3 is this script's own output, which the lanes' redirections keep.
exec 3>&1
watch_progress() {
  tail -n +1 -q -F "$LOGS"/{domain,built,http,served,served-servers,served-domain}.log 2>/dev/null |
    sed -u 's/\x1b\[[0-9;]*m//g' |
    awk -v started="$STARTED" '
      function stamp(  now) { "date +%s" | getline now; close("date +%s"); return sprintf("[%4ds]", now - started) }
      /^ *(✓|❯|×|✘|↓) .*\.test\.ts/ { sub(/^ +/, ""); print stamp(), $0; fflush(); next }
      /^ *(✓|✘|-) +[0-9]+ .*›/ { sub(/^ +/, ""); print stamp(), "playwright", $0; fflush(); next }
      /^step: / { print stamp(), substr($0, 7); fflush() }' >&3
}
watch_progress &
WATCHER=$!

lane domain domain_lane
lane built built_lane
LANES_FAILED=0
wait_lanes || LANES_FAILED=1
# The lanes the built lane started, each log once.
for nested in http served served-servers served-domain; do
  [ -f "$LOGS/$nested.log" ] || continue
  echo "===== lane $nested (in lane built)"
  cat "$LOGS/$nested.log"
done
exit "$LANES_FAILED"
