//! Telemetry by the OpenTelemetry GenAI semantic conventions, exported
//! over OTLP (cargo feature `otel`).
//!
//! behest writes its spans with `tracing` under the conventions' names:
//! `invoke_agent {name}` for the agent a run starts on and each agent it
//! calls, `chat {model}` for each model request (kind client), and
//! `execute_tool {name}` for each tool call, with their `gen_ai.*`
//! attributes. With this feature each model request also records the
//! `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`
//! histograms. [`Otlp::install`] sends both to a collector over OTLP/HTTP
//! (protobuf): the spans through `tracing-opentelemetry`, the metrics
//! through the global meter provider.
//!
//! Content is not captured: no prompt, answer, tool argument or result is
//! put on a span, as the conventions ask by default.
//!
//! ```no_run
//! # fn main() -> Result<(), behest::telemetry::TelemetryError> {
//! // The collector's base URL; without `endpoint`, the standard
//! // `OTEL_EXPORTER_OTLP_ENDPOINT` (default `http://localhost:4318`).
//! let telemetry = behest::telemetry::Otlp::new("support-agent")
//!     .endpoint("http://127.0.0.1:4318")
//!     .install()?;
//! // … runs …
//! telemetry.shutdown()?; // sends what is left
//! # Ok(()) }
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer as _;

/// Why telemetry could not be set up or flushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An exporter could not be built (an endpoint that is not a URL, say).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
    /// Another `tracing` subscriber is installed already: add
    /// [`Telemetry::layer`]'s layer to it instead.
    #[error("a tracing subscriber is installed already: {0}")]
    Subscriber(String),
    /// What was left could not be sent when shutting down.
    #[error("telemetry could not be flushed: {0}")]
    Shutdown(String),
}

/// How to export: the service's name and the collector's address.
#[derive(Debug, Clone)]
pub struct Otlp {
    service_name: String,
    endpoint: Option<String>,
}

impl Otlp {
    /// Exports as the service `service_name` (the resource's
    /// `service.name`).
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            endpoint: None,
        }
    }

    /// The collector's base URL (`http://host:4318`): spans go to
    /// `/v1/traces`, metrics to `/v1/metrics`. Without it, the standard
    /// `OTEL_EXPORTER_OTLP_*` variables say, and by default
    /// `http://localhost:4318`.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Builds the exporters and providers without installing them: for a
    /// program that composes its own subscriber with
    /// [`Telemetry::layer`].
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        // The exporters' blocking HTTP client must be made outside an
        // async runtime: on a thread of its own.
        std::thread::spawn(move || self.build_here())
            .join()
            .map_err(|_| TelemetryError::Exporter("building the exporters panicked".to_owned()))?
    }

    fn build_here(self) -> Result<Telemetry, TelemetryError> {
        // rustls needs a crypto provider for an https collector; ring is
        // the one compiled in (a provider installed already stays).
        let _installed = rustls::crypto::ring::default_provider().install_default();
        let resource = Resource::builder()
            .with_service_name(self.service_name)
            .build();
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(base) = &self.endpoint {
            spans = spans.with_endpoint(format!("{base}/v1/traces"));
            metrics = metrics.with_endpoint(format!("{base}/v1/metrics"));
        }
        let spans = spans
            .build()
            .map_err(|error| TelemetryError::Exporter(error.to_string()))?;
        let metrics = metrics
            .build()
            .map_err(|error| TelemetryError::Exporter(error.to_string()))?;
        Ok(Telemetry {
            tracer_provider: SdkTracerProvider::builder()
                .with_batch_exporter(spans)
                .with_resource(resource.clone())
                .build(),
            meter_provider: SdkMeterProvider::builder()
                .with_periodic_exporter(metrics)
                .with_resource(resource)
                .build(),
            stopped: false,
        })
    }

    /// Builds the exporters, installs a `tracing` subscriber that exports
    /// the spans of level `info` and above (the HTTP and OpenTelemetry
    /// crates' own left out: they would nest in the model's spans, or
    /// export the export) and makes the meter provider the global one.
    pub fn install(self) -> Result<Telemetry, TelemetryError> {
        let telemetry = self.build()?;
        let subscriber =
            tracing_subscriber::registry().with(telemetry.layer().with_filter(default_filter()));
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|error| TelemetryError::Subscriber(error.to_string()))?;
        opentelemetry::global::set_meter_provider(telemetry.meter_provider.clone());
        Ok(telemetry)
    }
}

/// Spans of level `info` and above, but those of the crates the export
/// itself runs on.
fn default_filter() -> Targets {
    let mut filter = Targets::new().with_default(LevelFilter::INFO);
    for quiet in [
        "h2",
        "hyper",
        "hyper_util",
        "reqwest",
        "rustls",
        "tower",
        "opentelemetry",
        "opentelemetry_sdk",
        "opentelemetry_otlp",
        "opentelemetry_http",
    ] {
        filter = filter.with_target(quiet, LevelFilter::OFF);
    }
    filter
}

/// Exporting telemetry: shut it down (or drop it) to send what is left
/// before the process ends.
#[derive(Debug)]
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    stopped: bool,
}

impl Telemetry {
    /// The `tracing` layer that exports spans, for a subscriber of your
    /// own (with [`Otlp::build`]; then also make
    /// [`meter_provider`](Self::meter_provider) the global one).
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer_provider.tracer("behest"))
    }

    /// The meter provider the metrics are recorded through.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter_provider
    }

    /// Sends what is left and stops exporting.
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), TelemetryError> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        // The installed subscriber and the global meter provider hold the
        // providers too: they are shut down here, not when dropped.
        let spans = self.tracer_provider.shutdown();
        let metrics = self.meter_provider.shutdown();
        spans.map_err(|error| TelemetryError::Shutdown(error.to_string()))?;
        metrics.map_err(|error| TelemetryError::Shutdown(error.to_string()))
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            tracing::warn!(%error, "telemetry could not be flushed");
        }
    }
}
