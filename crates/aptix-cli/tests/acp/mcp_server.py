"""An MCP server for the `aptix acp` tests, built with the official Python MCP SDK
(`mcp` on PyPI, installed by scripts/acp-test-env.sh), served over stdio as an editor's
`mcpServers` entry starts it, or over streamable HTTP (`mcp_server.py http`: on a free
loopback port, printed as `port N` on stdout, at `/mcp`, answering only requests that
carry `Authorization: Bearer $TICKETS_TOKEN`).

Run by crates/aptix-cli/tests/cli/acp.rs through `aptix acp`: its tools show what the
server was given (its folder, its environment, its process id), add two numbers, and
fail on demand.
"""

import json

import anyio
import os
import subprocess
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("tickets")

# A child of the server, as wrappers (`npx`, `uvx`) and servers with helpers have: it
# outlives the server unless its whole process group is stopped.
CHILD = subprocess.Popen(
    ["sleep", "300"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)


# Read-only tools run without asking the editor; `close_ticket` changes things, and
# the agent asks first.
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Adds two whole numbers, plus the server's TICKETS_OFFSET."""
    return str(a + b + int(os.environ.get("TICKETS_OFFSET", "0")))


@server.tool(annotations=READ_ONLY)
def environment() -> str:
    """What this server was started with."""
    return json.dumps(
        {
            "cwd": os.getcwd(),
            "pid": os.getpid(),
            "parent": os.getppid(),
            "child": CHILD.pid,
            "offset": os.environ.get("TICKETS_OFFSET"),
            "withheld": sorted(
                name
                for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL")
                if name not in os.environ
            ),
        }
    )


@server.tool(annotations=READ_ONLY)
async def wait_forever() -> str:
    """Never answers: a hung server, for the agent's time limit on a call."""
    await anyio.sleep(3600)
    return "too late"


@server.tool()
def close_ticket(ticket: str) -> str:
    """Closes a ticket; fails for a ticket that does not exist."""
    raise ToolError(f"no ticket {ticket}")


def serve_http():
    import socket

    import uvicorn

    app = server.streamable_http_app()
    expected = ("Bearer " + os.environ["TICKETS_TOKEN"]).encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    print("port", listener.getsockname()[1], flush=True)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [listener])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        # A line on stderr, which the agent logs with the server's name.
        print("tickets: serving on stdio", file=sys.stderr, flush=True)
        server.run("stdio")
