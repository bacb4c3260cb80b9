"""The official MCP Python SDK's client against a behest server.

Usage: client.py stdio COMMAND | client.py http URL | client.py idle URL SECONDS
       | client.py ask URL
Prints one JSON object with what it saw; the Rust test checks it. `idle`
calls, idles SECONDS, and calls again in the same session; `ask` answers the
server's elicitation and sampling requests as a user and a model would.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def exercise(session):
    seen = {}
    init = await session.initialize()
    seen["server"] = init.serverInfo.name
    tools = await session.list_tools()
    seen["tools"] = [tool.name for tool in tools.tools]
    seen["read_only"] = [
        tool.name for tool in tools.tools if tool.annotations and tool.annotations.readOnlyHint
    ]
    added = await session.call_tool("add", {"a": 2, "b": 3})
    seen["add"] = {"is_error": added.isError, "text": added.content[0].text}
    # The SDK validates structuredContent against the listed outputSchema.
    weather = await session.call_tool("forecast", {"city": "Oslo"})
    seen["forecast"] = {"is_error": weather.isError, "structured": weather.structuredContent}
    bad = await session.call_tool("add", {"a": 2, "b": "three"})
    seen["bad"] = {"is_error": bad.isError, "text": bad.content[0].text}
    reports = []

    async def progress(value, total, message):
        reports.append([value, total, message])

    worked = await session.call_tool("work", {}, progress_callback=progress)
    seen["work"] = worked.content[0].text
    # Notifications may trail the result by a moment.
    for _ in range(50):
        if len(reports) == 3:
            break
        await asyncio.sleep(0.02)
    seen["progress"] = reports
    try:
        await session.call_tool("no_such_tool", {})
        seen["unknown"] = "answered"
    except Exception as error:  # McpError
        seen["unknown"] = getattr(getattr(error, "error", None), "code", str(error))
    return seen


async def idle(session, seconds):
    await session.initialize()
    before = await session.call_tool("add", {"a": 1, "b": 2})
    await asyncio.sleep(seconds)
    after = await session.call_tool("add", {"a": 3, "b": 4})
    return {"before": before.content[0].text, "after": after.content[0].text}


async def answer_elicitation(context, params):
    asked["elicitation"] = {"message": params.message, "schema": params.requestedSchema}
    return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})


async def answer_sampling(context, params):
    asked["sampling"] = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="Hello, Ada!"),
        model="python-client-model",
    )


asked = {}


async def ask(session):
    await session.initialize()
    greeted = await session.call_tool("greet_user", {})
    return {"greeting": greeted.content[0].text, "is_error": greeted.isError, "asked": asked}


async def main():
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "ask":
        async with streamablehttp_client(target) as (read, write, _):
            async with ClientSession(
                read,
                write,
                elicitation_callback=answer_elicitation,
                sampling_callback=answer_sampling,
            ) as session:
                seen = await ask(session)
    elif mode == "idle":
        async with streamablehttp_client(target) as (read, write, _):
            async with ClientSession(read, write) as session:
                seen = await idle(session, float(sys.argv[3]))
    elif mode == "stdio":
        params = StdioServerParameters(command=target, args=[])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                seen = await exercise(session)
    else:
        async with streamablehttp_client(target) as (read, write, _):
            async with ClientSession(read, write) as session:
                seen = await exercise(session)
    print(json.dumps(seen))


asyncio.run(main())
