"""behest's telemetry, exported over OTLP by a real run against a local
OpenAI-compatible server, judged by pytest-genai-semconv (the GenAI
semantic conventions' span rules) and by the conventions' metric
definitions.

The run (`BEHEST_OTEL_SENDER`, tests/telemetry/send.rs): the agent
`support` asks the model, which calls `get_weather` and the agent `poet`
(an agent run as a tool, with its own model request), then answers.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from pytest_genai_semconv import (
    GenAISpanComplianceError,
    assert_chat_span,
    assert_execute_tool_span,
    assert_genai_span_compliant,
    assert_invoke_agent_span,
)

from otlp import Receiver

PROMPT = "What's the weather in Paris? And a poem, please."


@pytest.fixture(scope="module")
def received():
    receiver = Receiver()
    try:
        sender = os.environ["BEHEST_OTEL_SENDER"]
        run = subprocess.run(
            [sender, receiver.endpoint, PROMPT],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert receiver.refused == []
        yield receiver
    finally:
        receiver.close()


def by_operation(spans, operation):
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == operation]


def test_every_genai_span_follows_the_conventions(received):
    spans = received.spans()
    genai = [s for s in spans if "gen_ai.operation.name" in s.attributes]
    assert len(genai) >= 7, [s.name for s in spans]
    problems = {}
    for span in genai:
        try:
            assert_genai_span_compliant(span)
        except GenAISpanComplianceError as error:
            problems[span.name] = error.violations
    assert problems == {}


def test_model_requests_are_chat_spans(received):
    chats = by_operation(received.spans(), "chat")
    assert len(chats) == 3
    for span in chats:
        assert_chat_span(span, request_model="gpt-semconv")
        assert span.name == "chat gpt-semconv"
        assert span.kind.name == "CLIENT"
        assert span.attributes["gen_ai.provider.name"] == "openai"
        assert span.attributes["server.address"] == "127.0.0.1"
        assert isinstance(span.attributes["server.port"], int)
        assert span.status.is_ok or span.status.status_code.name == "UNSET"
        assert isinstance(span.attributes["gen_ai.usage.input_tokens"], int)
        assert isinstance(span.attributes["gen_ai.usage.output_tokens"], int)


def test_agents_and_tools_have_their_spans(received):
    spans = received.spans()
    agents = {s.attributes["gen_ai.agent.name"]: s for s in by_operation(spans, "invoke_agent")}
    assert set(agents) == {"support", "poet"}
    for name, span in agents.items():
        assert_invoke_agent_span(span, agent_name=name)
        assert span.name == f"invoke_agent {name}"
    tools = {s.attributes["gen_ai.tool.name"]: s for s in by_operation(spans, "execute_tool")}
    assert set(tools) == {"get_weather", "poet"}
    for name, span in tools.items():
        assert_execute_tool_span(span, tool_name=name)
        assert span.name == f"execute_tool {name}"
        assert span.kind.name == "INTERNAL"

    # One trace: the root agent holds the model requests and the tool
    # calls; the poet runs inside its tool call.
    ids = {s.context.span_id: s for s in spans}
    parent = lambda s: ids.get(s.parent.span_id) if s.parent else None  # noqa: E731

    def ancestors(span):
        while (span := parent(span)) is not None:
            yield span

    root = agents["support"]
    assert root.parent is None
    assert len({s.context.trace_id for s in spans}) == 1
    for span in by_operation(spans, "chat") + list(tools.values()):
        assert root in ancestors(span), span.name
    assert tools["poet"] in ancestors(agents["poet"])


def test_no_content_is_captured(received):
    for span in received.spans():
        for key, value in span.attributes.items():
            assert "Paris" not in str(value), (span.name, key)
            assert key not in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.system_instructions",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
            )


DURATION_BOUNDARIES = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BOUNDARIES = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]


def test_client_metrics_follow_the_conventions(received):
    histograms = received.histograms()
    duration = histograms["gen_ai.client.operation.duration"]
    tokens = histograms["gen_ai.client.token.usage"]
    assert {unit for unit, _ in duration} == {"s"}
    assert {unit for unit, _ in tokens} == {"{token}"}

    def points(series):
        return [point for _, batch in series for point in batch]

    counted = 0
    for point in points(duration):
        assert list(point.explicit_bounds) == DURATION_BOUNDARIES
        attrs = {kv.key: kv.value.string_value or kv.value.int_value for kv in point.attributes}
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "gpt-semconv"
        assert attrs["server.address"] == "127.0.0.1"
        assert "error.type" not in attrs
        counted += point.count
    assert counted == 3
    summed = {}
    for point in points(tokens):
        assert list(point.explicit_bounds) == TOKEN_BOUNDARIES
        attrs = {kv.key: kv.value.string_value for kv in point.attributes}
        summed[attrs["gen_ai.token.type"]] = summed.get(attrs["gen_ai.token.type"], 0) + point.sum
    # What the local server reported over the three requests.
    assert summed == {"input": 10 + 20 + 30, "output": 1 + 2 + 3}
