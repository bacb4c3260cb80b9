"""An OTLP/HTTP receiver (protobuf, as behest exports) for the checks of
test_semconv.py, and the conversion of its spans into the SDK's
ReadableSpan, the objects pytest-genai-semconv's assertions take."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

# OTLP's span kinds by number; 0 (unspecified) is read as internal.
KINDS = {
    0: SpanKind.INTERNAL,
    1: SpanKind.INTERNAL,
    2: SpanKind.SERVER,
    3: SpanKind.CLIENT,
    4: SpanKind.PRODUCER,
    5: SpanKind.CONSUMER,
}


def value(any_value):
    """An OTLP AnyValue as Python."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


def attributes(kvs) -> dict:
    return {kv.key: value(kv.value) for kv in kvs}


class Receiver:
    """Takes POST /v1/traces and /v1/metrics on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.refused: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                kind = self.headers.get("Content-Type", "")
                if kind != "application/x-protobuf":
                    receiver.refused.append(f"{self.path}: content type {kind!r}")
                    self.send_response(415)
                elif self.path == "/v1/traces":
                    receiver.traces.append(ExportTraceServiceRequest.FromString(body))
                    self.send_response(200)
                elif self.path == "/v1/metrics":
                    receiver.metrics.append(ExportMetricsServiceRequest.FromString(body))
                    self.send_response(200)
                else:
                    receiver.refused.append(f"unknown path {self.path}")
                    self.send_response(404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[ReadableSpan]:
        """Every span received, as the SDK's ReadableSpan."""
        out = []
        for request in self.traces:
            for resource_spans in request.resource_spans:
                resource = Resource(attributes(resource_spans.resource.attributes))
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        trace_id = int.from_bytes(span.trace_id, "big")
                        parent = int.from_bytes(span.parent_span_id, "big")
                        out.append(
                            ReadableSpan(
                                name=span.name,
                                kind=KINDS[span.kind],
                                attributes=attributes(span.attributes),
                                resource=resource,
                                context=SpanContext(
                                    trace_id,
                                    int.from_bytes(span.span_id, "big"),
                                    False,
                                    TraceFlags(1),
                                ),
                                parent=SpanContext(trace_id, parent, False) if parent else None,
                                start_time=span.start_time_unix_nano,
                                end_time=span.end_time_unix_nano,
                            )
                        )
        return out

    def histograms(self) -> dict[str, list]:
        """Each histogram metric's name: its unit and data points, from the
        last export that had it (the points are cumulative)."""
        out: dict[str, list] = {}
        for request in self.metrics:
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        if metric.WhichOneof("data") == "histogram":
                            out[metric.name] = [
                                (metric.unit, list(metric.histogram.data_points))
                            ]
        return out
