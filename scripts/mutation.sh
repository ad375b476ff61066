#!/usr/bin/env bash
# `npm run test:mutation`: Stryker over the pure modules (stryker.config.mjs), their fast unit tests
# (vitest.mutation.config.mts). Writes reports/mutation/mutation.json and mutation.html; fails when
# the score is below the config's thresholds.break. Arguments go to Stryker, e.g. one module while
# iterating: npm run test:mutation -- --mutate lib/tlog/tiles.ts
# StrykerJS 10 needs Node 22 or newer: scripts/node22.sh gives this machine's node when it is,
# otherwise a Node 22 cached outside the project (the CI's Node, as for the build).
set -euo pipefail
cd "$(dirname "$0")/.."
NODE="$(bash scripts/node22.sh)"
exec "$NODE" node_modules/@stryker-mutator/core/bin/stryker.js run stryker.config.mjs "$@"
