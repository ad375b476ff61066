#!/usr/bin/env bash
# Prints the path of a Node binary of a given major: `bash scripts/node.sh 24` (exactly 24), or
# `bash scripts/node.sh 22 --or-newer` (22 or any newer major). This machine's node when it fits,
# otherwise the official build from the npm registry (package node-<platform>-<arch>, the pinned
# version below), installed once into a cache folder outside the project (CITY_NODE_DIR, default
# ${TMPDIR:-/tmp}/city-node<major>). Nothing is added to the project's dependencies. What it
# installs goes to stderr; stdout is the path alone.
set -euo pipefail
cd "$(dirname "$0")/.."

MAJOR="${1:?usage: scripts/node.sh <major> [--or-newer]}"
OR_NEWER="${2:-}"
# The versions fetched, one per major the project builds on (package.json's engines).
case "$MAJOR" in
  22) VERSION="22.23.3" ;;
  24) VERSION="24.22.3" ;;
  *)
    echo "scripts/node.sh: no pinned Node $MAJOR (22 and 24 are)" >&2
    exit 2
    ;;
esac

MINE="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$MINE" = "$MAJOR" ] || { [ "$OR_NEWER" = "--or-newer" ] && [ "$MINE" -ge "$MAJOR" ]; }; then
  command -v node
  exit 0
fi
TOOLS="${CITY_NODE_DIR:-${TMPDIR:-/tmp}/city-node$MAJOR}"
PACKAGE="node-$(node -p 'process.platform + "-" + process.arch')"
BINARY="$TOOLS/node_modules/$PACKAGE/bin/node"
if [ ! -x "$BINARY" ] || [ "$("$BINARY" -p 'process.versions.node')" != "$VERSION" ]; then
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "private": true }' >"$TOOLS/package.json"
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error "$PACKAGE@$VERSION" >&2
fi
echo "$BINARY"
