#!/usr/bin/env bash
# Installs what the `aptix acp` tests run beside the agent, pinned, in a virtual
# environment of its own: the client library they drive the agent with (the official
# Python ACP SDK, `agent-client-protocol` on PyPI), and the official Python MCP SDK
# (`mcp`), which the MCP server an editor offers the agent is built with. Idempotent: a
# venv that already holds the pinned versions is left as it is.
#
#   scripts/acp-test-env.sh [DIR]     # default: target/acp-venv under the repository
#
# Prints the venv's python on stdout (the only line it prints there). Needs python3
# (3.10 or newer, with the venv module) and access to PyPI.
set -euo pipefail

ACP_SDK_VERSION="0.12.1"
MCP_SDK_VERSION="2.3.0"

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/target/acp-venv}"
python="$venv/bin/python"

fail() {
  echo "acp-test-env: $*" >&2
  exit 1
}

if [ -x "$python" ] && "$python" - "$ACP_SDK_VERSION" "$MCP_SDK_VERSION" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if (version("agent-client-protocol"), version("mcp")) == tuple(sys.argv[1:]) else 1)
PY
then
  echo "$python"
  exit 0
fi

command -v python3 >/dev/null 2>&1 ||
  fail "python3 is required to run the ACP client tests (apt-get install python3 python3-venv)"
python3 - <<'PY' || fail "python3 3.10 or newer is required (found $(python3 --version 2>&1))"
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

# Built beside the final place and moved in at the end, so that a run cut short (or two
# runs at once) never leaves a half-installed venv where the tests look for one.
mkdir -p "$(dirname "$venv")"
staging="$(mktemp -d "$venv.tmp.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
python3 -m venv "$staging" >&2 ||
  fail "could not create a virtual environment (apt-get install python3-venv)"
"$staging/bin/python" -m pip install --quiet --disable-pip-version-check \
  "agent-client-protocol==$ACP_SDK_VERSION" "mcp==$MCP_SDK_VERSION" >&2 ||
  fail "could not install agent-client-protocol==$ACP_SDK_VERSION and mcp==$MCP_SDK_VERSION from PyPI"
# A venv records its own path: create it again in place once moved.
rm -rf "$venv"
mv "$staging" "$venv"
trap - EXIT
python3 -m venv "$venv" >&2
"$python" -c "import acp" ||
  fail "agent-client-protocol $ACP_SDK_VERSION installed but 'import acp' fails"
"$python" -c "from mcp.server.mcpserver import MCPServer" ||
  fail "mcp $MCP_SDK_VERSION installed but 'from mcp.server.mcpserver import MCPServer' fails"
echo "$python"
