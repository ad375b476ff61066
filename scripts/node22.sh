#!/usr/bin/env bash
# Prints the path of a Node 22 (or newer) binary: this machine's node when it is 22 or newer,
# otherwise Node 22 from the npm registry, cached outside the project (scripts/node.sh). Kept for
# its callers (mutation testing, the MCP conformance suite, CI's build on Node 22);
# CITY_NODE22_DIR still names its cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."
CITY_NODE_DIR="${CITY_NODE22_DIR:-${TMPDIR:-/tmp}/city-node22}" exec bash scripts/node.sh 22 --or-newer
