"""Drives `aptix acp` as an editor would, through the official Python ACP SDK
(`agent-client-protocol` on PyPI, installed by scripts/acp-test-env.sh).

Run by crates/aptix-cli/tests/cli/acp.rs, which starts a scripted fake Responses
server first; the replies it scripts are consumed in the order of the scenarios below.
Prints one JSON object on stdout: what each scenario observed, for the Rust test to
check. Environment: APTIX_BIN (the binary), ACP_WORKSPACE (the session folder),
ACP_STDERR_DIR (where each agent process's stderr is written), and the provider
settings the agent inherits (OPENAI_API_KEY, OPENAI_BASE_URL, HOME).
"""

import asyncio
import json
import os
import sys
import time

from acp import RequestError, image_block, text_block
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
)
from acp.stdio import spawn_agent_process

BIN = os.environ["APTIX_BIN"]
WORKSPACE = os.environ["ACP_WORKSPACE"]
STDERR_DIR = os.environ["ACP_STDERR_DIR"]
# What the editor's unsaved buffer of src/lib.rs holds (the disk holds something else).
BUFFER = 'pub fn greet() -> &\'static str {\n    "from the editor buffer"\n}\n'
AGENT_ENV = {
    name: os.environ[name]
    for name in ("HOME", "PATH", "OPENAI_API_KEY", "OPENAI_BASE_URL")
    if name in os.environ
}


class Editor:
    """The client side: records every update with the time it arrived, serves files."""

    def __init__(self):
        self.events = []
        self.reads = []

    async def session_update(self, session_id, update, **kwargs):
        self.events.append(
            {
                "at": time.monotonic(),
                "sessionId": session_id,
                "update": update.model_dump(by_alias=True, exclude_none=True, mode="json"),
            }
        )

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.reads.append(path)
        if path.endswith("src/lib.rs"):
            return ReadTextFileResponse(content=BUFFER)
        with open(path, encoding="utf-8") as file:
            return ReadTextFileResponse(content=file.read())

    async def request_permission(self, *args, **kwargs):
        raise RequestError.method_not_found("session/request_permission")

    def take(self):
        events, self.events = self.events, []
        return events


def updates(events):
    return [event["update"] for event in events]


def text_of(events, kind):
    return "".join(
        update["content"].get("text", "")
        for update in updates(events)
        if update.get("sessionUpdate") == kind
    )


def failure(error):
    return {"code": error.code, "message": str(error), "data": error.data}


# A 1x1 PNG, sent with the second prompt and replayed by session/load.
PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


async def prompt(conn, editor, session_id, text, *blocks):
    started = time.monotonic()
    response = await conn.prompt(session_id=session_id, prompt=[text_block(text), *blocks])
    answered = time.monotonic()
    events = editor.take()
    return {
        "stopReason": response.stop_reason,
        "meta": response.field_meta,
        "text": text_of(events, "agent_message_chunk"),
        "updates": updates(events),
        "firstChunkBeforeAnswer": next(
            (
                answered - event["at"]
                for event in events
                if event["update"].get("sessionUpdate") == "agent_message_chunk"
            ),
            None,
        ),
        "seconds": answered - started,
    }


def stderr_file(name):
    return open(os.path.join(STDERR_DIR, name), "wb")


async def first_process(results):
    editor = Editor()
    with stderr_file("agent-1.stderr") as stderr:
        async with spawn_agent_process(
            editor,
            BIN,
            "acp",
            "-vvv",
            env=AGENT_ENV,
            cwd=WORKSPACE,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, process):
            init = await conn.initialize(
                protocol_version=1,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True)
                ),
                client_info=Implementation(name="driver.py", version="1"),
            )
            results["initialize"] = init.model_dump(by_alias=True, exclude_none=True, mode="json")

            session = await conn.new_session(cwd=WORKSPACE, mcp_servers=[])
            session_id = session.session_id
            results["sessionId"] = session_id

            # A streamed answer, then a second prompt in the same session.
            results["first"] = await prompt(conn, editor, session_id, "Hello")
            results["second"] = await prompt(
                conn, editor, session_id, "And again", image_block(PIXEL_PNG, "image/png")
            )

            # Two server tool runs: search_code, then read_file served by this editor.
            results["tools"] = await prompt(conn, editor, session_id, "Where is greet?")
            results["reads"] = list(editor.reads)

            # A cancel while the answer streams slowly.
            task = asyncio.create_task(
                conn.prompt(session_id=session_id, prompt=[text_block("Take your time")])
            )
            while not any(
                event["update"].get("sessionUpdate") == "agent_message_chunk"
                for event in editor.events
            ):
                if task.done():
                    break
                await asyncio.sleep(0.02)
            cancelled_at = time.monotonic()
            await conn.cancel(session_id=session_id)
            try:
                response = await asyncio.wait_for(task, timeout=10)
                results["cancel"] = {
                    "stopReason": response.stop_reason,
                    "seconds": time.monotonic() - cancelled_at,
                    "updates": updates(editor.take()),
                }
            except RequestError as error:
                results["cancel"] = {"error": failure(error)}

            # The session is still usable.
            results["afterCancel"] = await prompt(conn, editor, session_id, "After the cancel")

            # An unknown session is an error, and the agent keeps serving.
            try:
                await conn.prompt(session_id="s-nope", prompt=[text_block("hi")])
                results["unknownSession"] = {"error": None}
            except RequestError as error:
                results["unknownSession"] = {"error": failure(error)}
            again = await conn.new_session(cwd=WORKSPACE, mcp_servers=[])
            results["servingAfterError"] = bool(again.session_id)
            results["exitedEarly"] = process.returncode


async def second_process(results):
    """An editor started again: the session is loaded from the store and replayed."""
    editor = Editor()
    with stderr_file("agent-2.stderr") as stderr:
        async with spawn_agent_process(
            editor,
            BIN,
            "acp",
            env=AGENT_ENV,
            cwd=WORKSPACE,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, _process):
            await conn.initialize(protocol_version=1)
            # The editor's thread history: the stored sessions of its folder.
            listed = await conn.list_sessions(cwd=WORKSPACE)
            results["list"] = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
            try:
                await conn.list_sessions(cwd=WORKSPACE, cursor="not-a-cursor")
                results["listBadCursor"] = {"error": None}
            except RequestError as error:
                results["listBadCursor"] = {"error": failure(error)}
            await conn.load_session(cwd=WORKSPACE, session_id=results["sessionId"], mcp_servers=[])
            events = editor.take()
            # Without a folder: those of the workspaces open in this agent, one page.
            open_ones = await conn.list_sessions()
            results["listOpen"] = open_ones.model_dump(by_alias=True, exclude_none=True, mode="json")
            results["load"] = {
                "updates": updates(events),
                "user": [
                    update["content"].get("text")
                    or "[%s %s, %s]"
                    % (
                        update["content"]["type"],
                        update["content"].get("mimeType"),
                        "the bytes sent"
                        if update["content"].get("data") == PIXEL_PNG
                        else "other bytes",
                    )
                    for update in updates(events)
                    if update.get("sessionUpdate") == "user_message_chunk"
                ],
                "agent": [
                    update["content"]["text"]
                    for update in updates(events)
                    if update.get("sessionUpdate") == "agent_message_chunk"
                ],
            }
            try:
                await conn.load_session(cwd=WORKSPACE, session_id="s-never-stored", mcp_servers=[])
                results["loadUnknown"] = {"error": None}
            except RequestError as error:
                results["loadUnknown"] = {"error": failure(error)}


async def main():
    results = {}
    try:
        await first_process(results)
        await second_process(results)
    except Exception as error:  # reported to the Rust test with what was observed
        results["driverError"] = f"{type(error).__name__}: {error}"
    json.dump(results, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
