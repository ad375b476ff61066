#!/usr/bin/env bash
# `npm run test:mutation`: Stryker over the pure modules (stryker.config.mjs), their fast unit tests
# (vitest.mutation.config.mts). Writes reports/mutation/mutation.json and mutation.html; fails when
# the score is below the config's thresholds.break. Arguments go to Stryker, e.g. one module while
# iterating: npm run test:mutation -- --mutate lib/tlog/tiles.ts
#
# StrykerJS 10 needs Node 22 or newer (its instrumenter's Babel 8 wants 22.18), so it is not one of
# the project's dependencies (a plain `npm install` on Node 20 would warn of it 240 times): it is
# installed here, on first use, into a cache folder outside the project (CITY_STRYKER_DIR, default
# ${TMPDIR:-/tmp}/city-stryker-<version>) by the npm of scripts/node22.sh's Node (this machine's
# node when it is 22 or newer, otherwise a Node 22 cached the same way, the CI's Node for the
# build). Its vitest runner uses the project's own vitest (linked in), so the tests run exactly as
# `npm test` runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

STRYKER_VERSION="10.1.1"
TOOLS="${CITY_STRYKER_DIR:-${TMPDIR:-/tmp}/city-stryker-$STRYKER_VERSION}"
NODE="$(bash scripts/node22.sh)"
NPM_CLI="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"

CORE="$TOOLS/node_modules/@stryker-mutator/core"
if [ ! -f "$CORE/bin/stryker.js" ] || [ "$("$NODE" -p "require('$CORE/package.json').version")" != "$STRYKER_VERSION" ]; then
  echo "mutation: installing Stryker $STRYKER_VERSION into $TOOLS (once) ..." >&2
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "private": true }' >"$TOOLS/package.json"
  # vitest is the runner's peer: not installed there (--legacy-peer-deps), the project's is linked below.
  # npm runs on the Node 22 binary (its engine checks then see 22); PATH too, for its scripts.
  PATH="$(dirname "$NODE"):$PATH" "$NODE" "$NPM_CLI" install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error --legacy-peer-deps \
    "@stryker-mutator/core@$STRYKER_VERSION" "@stryker-mutator/vitest-runner@$STRYKER_VERSION" >&2
fi
# Stryker imports `vitest` and `vitest/node` (its runner) and `typescript` (it rewrites the sandbox's
# tsconfig) from where it is installed: the project's own copies, the versions package.json pins,
# linked in (a cache another checkout used is pointed at this one's).
for package in vitest typescript; do ln -sfn "$PWD/node_modules/$package" "$TOOLS/node_modules/$package"; done

exec "$NODE" "$CORE/bin/stryker.js" run stryker.config.mjs "$@"
