"""A FastMCP 4 client against behest's MCP test server.

`fastmcp_client.py MODE TARGET`: MODE is FastMCP's connect mode (`auto`,
its default, probes the newest protocol first; `legacy` is the initialize
handshake), TARGET an http URL or the path of the stdio server. It calls a
plain tool, a tool that asks the user (elicitation) and the client's model
(sampling), and a tool that logs, answering as a user and a model would, and
prints what it saw as JSON.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

asked = {}
logs = []


async def elicit(message, response_type, params, context):
    asked["elicitation"] = message
    return {"name": "Ada", "age": 36}


async def sample(messages, params, context):
    first = messages[0]
    content = getattr(first, "content", first)
    asked["sampling"] = getattr(content, "text", str(content))
    return "Hello, Ada!"


async def log(message):
    logs.append({"level": str(message.level), "data": message.data})


def text(result):
    return result.content[0].text if result.content else ""


async def main():
    mode, target = sys.argv[1], sys.argv[2]
    transport = target if target.startswith("http") else StdioTransport(command=target, args=[])
    async with Client(
        transport,
        mode=mode,
        elicitation_handler=elicit,
        sampling_handler=sample,
        log_handler=log,
    ) as client:
        added = await client.call_tool("add", {"a": 2, "b": 3})
        greeted = await client.call_tool("greet_user", {}, raise_on_error=False)
        await client.call_tool("look_up", {"city": "Oslo"})
        # A log message is a notification: it may trail the call's result.
        for _ in range(100):
            if logs:
                break
            await asyncio.sleep(0.05)
        seen = {
            "protocol": client.protocol_version,
            "add": text(added),
            "greeting": text(greeted),
            "greeting_is_error": greeted.is_error,
            "asked": asked,
            "logs": logs,
        }
    print(json.dumps(seen, default=str))


asyncio.run(main())
