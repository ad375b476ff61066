#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode, the 2026-07-28 requirement set) against a
# production build of the city on a fresh embedded database, with the committed baseline of checks
# that need the suite's own fixture tools. Needs a build (`next build`; `npm test` makes one).
#
# The suite needs Node 22 or newer: scripts/node22.sh finds or fetches one (from the npm registry,
# into a cache folder outside the project); the suite itself is cached the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION="0.2.0-alpha.12"
TOOLS="${CITY_MCP_CONFORMANCE_DIR:-${TMPDIR:-/tmp}/city-mcp-conformance}"
DIST="${CITY_NEXT_DIST_DIR:-.next}"

if [ ! -f "$DIST/BUILD_ID" ]; then
  echo "No production build in $DIST: run \`next build\` first." >&2
  exit 1
fi

NODE22="$(bash scripts/node22.sh)"
SUITE="$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -f "$SUITE" ]; then
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "private": true }' > "$TOOLS/package.json"
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
fi

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
DATA="$(mktemp -d "${TMPDIR:-/tmp}/city-mcp-conformance-data.XXXXXX")"
LOG="$DATA.log"
# On a copy of `npm test`'s migrated PGlite when the run has made it (CITY_TEST_TEMPLATES:
# tests/support/template-folder.ts), as the HTTP suites' and the seeded browser city's servers do:
# migrating a fresh folder is most of a boot's work. Run alone, the city migrates its folder itself.
TEMPLATE="${CITY_TEST_TEMPLATES:+$CITY_TEST_TEMPLATES/pglite/data}"
if [ -n "$TEMPLATE" ] && [ -d "$TEMPLATE" ]; then cp -R "$TEMPLATE/." "$DATA/"; fi
CITY_NEXT_DIST_DIR="$DIST" DATABASE_URL="" CITY_DATA_DIR="$DATA" CITY_BASE_URL="http://127.0.0.1:$PORT" NEXT_TELEMETRY_DISABLED=1 \
  node node_modules/next/dist/bin/next start -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
SERVER=$!
cleanup() {
  kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  rm -rf "$DATA" "$LOG"
}
trap cleanup EXIT

ANSWERED=""
for _ in $(seq 1 300); do
  if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$PORT/beacon.json"; then ANSWERED=1; break; fi
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 0.2
done
# A server that never answered fails the run: the suite must not be run against nothing.
if [ -z "$ANSWERED" ]; then
  echo "mcp conformance: the built server never answered /beacon.json" >&2
  tail -20 "$LOG" >&2
  exit 1
fi

# The suite prints every scenario and a total that counts expected and unscored failures as
# failures; a green run is summarised instead (what passed, each expected failure with its reason);
# a red one shows the suite's whole output.
OUT="$DATA.suite.log"
set +e
"$NODE22" "$SUITE" server \
  --url "http://127.0.0.1:$PORT/mcp" \
  --requirements 2026-07-28 \
  --expected-failures scripts/mcp-conformance-baseline.yml \
  --output-dir "$TOOLS/results" >"$OUT" 2>&1
SUITE_RC=$?
set -e
if [ "$SUITE_RC" != 0 ]; then
  cat "$OUT"
  rm -f "$OUT"
  exit "$SUITE_RC"
fi
node scripts/mcp-conformance-summary.mjs "$OUT" scripts/mcp-conformance-baseline.yml || { cat "$OUT"; rm -f "$OUT"; exit 1; }
rm -f "$OUT"
