//! The OpenTelemetry GenAI client metrics of each model request:
//! `gen_ai.client.operation.duration` (seconds) and
//! `gen_ai.client.token.usage` (tokens, by `gen_ai.token.type`), as
//! histograms with the conventions' bucket boundaries, through the global
//! meter provider (`behest::telemetry` installs one exporting over OTLP).

use std::time::Duration;

use opentelemetry::KeyValue;

use crate::usage::Usage;

/// The conventions' boundaries for `gen_ai.client.operation.duration`.
const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The conventions' boundaries for `gen_ai.client.token.usage`.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// What one request was, for its metrics' attributes.
pub(crate) struct Request<'a> {
    /// `gen_ai.provider.name`.
    pub provider: &'static str,
    /// `gen_ai.request.model`.
    pub model: &'a str,
    /// The client's base URL, for `server.address` and `server.port`.
    pub base_url: &'a str,
}

/// Records one request's duration and, when it answered, its tokens.
pub(crate) fn record(
    request: &Request<'_>,
    took: Duration,
    response_model: Option<&str>,
    usage: Option<&Usage>,
    error_type: Option<&str>,
) {
    // The meter is asked for each time: a provider installed after the
    // first request is the one that records the next.
    let meter = opentelemetry::global::meter("behest");
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", request.provider),
        KeyValue::new("gen_ai.request.model", request.model.to_owned()),
    ];
    if let Some((host, port)) = super::server(request.base_url) {
        attributes.push(KeyValue::new("server.address", host.to_owned()));
        attributes.push(KeyValue::new("server.port", i64::from(port)));
    }
    if let Some(model) = response_model {
        attributes.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
    }
    let mut timed = attributes.clone();
    if let Some(error) = error_type {
        timed.push(KeyValue::new("error.type", error.to_owned()));
    }
    meter
        .f64_histogram("gen_ai.client.operation.duration")
        .with_unit("s")
        .with_description("GenAI operation duration.")
        .with_boundaries(DURATION_BOUNDARIES.to_vec())
        .build()
        .record(took.as_secs_f64(), &timed);
    let Some(usage) = usage else {
        return;
    };
    let tokens = meter
        .u64_histogram("gen_ai.client.token.usage")
        .with_unit("{token}")
        .with_description("Number of input and output tokens used.")
        .with_boundaries(TOKEN_BOUNDARIES.to_vec())
        .build();
    for (kind, count) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
    ] {
        let mut typed = attributes.clone();
        typed.push(KeyValue::new("gen_ai.token.type", kind));
        tokens.record(count, &typed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::server;

    #[test]
    fn the_server_is_read_from_the_base_url() {
        assert_eq!(
            server("https://api.openai.com/v1"),
            Some(("api.openai.com", 443))
        );
        assert_eq!(
            server("http://127.0.0.1:8080/v1"),
            Some(("127.0.0.1", 8080))
        );
        assert_eq!(server("http://[::1]:9/x"), Some(("[::1]", 9)));
        assert_eq!(server("http://[::1]/x"), Some(("[::1]", 80)));
        assert_eq!(server("http://user:pw@host:1/"), Some(("host", 1)));
        for bad in ["", "api.openai.com", "ftp://x", "http://", "http://h:port/"] {
            assert_eq!(server(bad), None, "{bad}");
        }
    }
}
