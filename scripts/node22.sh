#!/usr/bin/env bash
# Prints the path of a Node 22 binary: this machine's node when it is 22 or newer, otherwise the
# official build from the npm registry (package node-<platform>-<arch>), installed once into a
# cache folder outside the project. Nothing is added to the project's dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE22_VERSION="22.23.3"
TOOLS="${CITY_NODE22_DIR:-${TMPDIR:-/tmp}/city-node22}"

if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
  command -v node
  exit 0
fi
PACKAGE="node-$(node -p 'process.platform + "-" + process.arch')"
BINARY="$TOOLS/node_modules/$PACKAGE/bin/node"
if [ ! -x "$BINARY" ] || [ "$("$BINARY" -p 'process.versions.node')" != "$NODE22_VERSION" ]; then
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "private": true }' > "$TOOLS/package.json"
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error "$PACKAGE@$NODE22_VERSION" >&2
fi
echo "$BINARY"
