//! The run viewer: a page (embedded, nothing fetched from the network)
//! that shows the run logs of a folder, recorded or still being written.

use std::path::{Path, PathBuf};

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::run::Prices;
use crate::usage::Usage;

/// The page, with its script and styles.
const PAGE: &str = include_str!("viewer.html");

/// The largest file the viewer reads: a log past it is refused with a
/// clear answer rather than read into memory.
const MOST_BYTES: u64 = 256 * 1024 * 1024;

/// Serves a folder's run logs ([`RunLog`](crate::run::RunLog)'s files,
/// `*.jsonl`) and recordings ([`Recorder`](crate::run::Recorder)'s,
/// `*.json`) to a page that shows each run: the tree of its agents and
/// handoffs, each turn with its text, tokens and cost, each call with its
/// arguments, approval, guardrail verdicts and result or error, retries
/// and fallbacks, and the timings as a waterfall. A log still being
/// written is followed as it grows. What the page cannot read (a line cut
/// short, a line of another format, a file that is no run log at all) it
/// says, and shows the rest.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> std::io::Result<()> {
/// let app = behest::ui::RunViewer::new("runs").router();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:4000").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RunViewer {
    dir: PathBuf,
    prices: Prices,
    unnamed: Option<String>,
    /// The host names the viewer answers at, beside the loopback ones.
    hosts: Vec<String>,
}

impl RunViewer {
    /// A viewer of the logs in `dir`, turns priced from the built-in
    /// table ([`Prices::builtin`]).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            prices: Prices::builtin(),
            unnamed: None,
            hosts: Vec::new(),
        }
    }

    /// Answers at `host` too (a name the viewer is reached by, without its
    /// port). By default it answers only at `localhost`, `127.0.0.1` and
    /// `[::1]`: the logs hold whole conversations, and another site's page
    /// must not read them through a name that points at this machine.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// Whether a request's `Host` is one the viewer answers at.
    fn host_allowed(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        // The name without its port; an IPv6 address keeps its brackets.
        let name = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => name,
            _ => host.as_str(),
        };
        let allowed = matches!(name, "localhost" | "127.0.0.1" | "[::1]")
            || self.hosts.iter().any(|allowed| allowed == name);
        if allowed {
            Ok(())
        } else {
            Err(Box::new(failure(
                StatusCode::FORBIDDEN,
                format!(
                    "the viewer does not answer at `{host}` (RunViewer::allow_host adds a name)"
                ),
            )))
        }
    }

    /// Prices turns from `prices` instead.
    #[must_use]
    pub fn prices(mut self, prices: Prices) -> Self {
        self.prices = prices;
        self
    }

    /// Prices a turn that does not name its model (only a
    /// [`FallbackModel`](crate::run::FallbackModel)'s turns do) as `model`'s.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.unnamed = Some(model.into());
        self
    }

    /// The page at `/`, the list of logs at `/api/runs`, a log at
    /// `/api/runs/{name}`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(page))
            .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
            .route("/api/runs", get(list))
            .route("/api/runs/{name}", get(read))
            .with_state(self.clone())
    }

    /// The text of the log `name`, each turn with its cost where its model
    /// has a price: `cost_usd` beside the turn's `usage`.
    pub fn annotated(&self, text: &str) -> String {
        if let Ok(mut recording) = serde_json::from_str::<Value>(text) {
            if let Some(turns) = recording.get_mut("turns").and_then(Value::as_array_mut) {
                for turn in turns {
                    self.price(&mut turn["reply"]);
                }
                return recording.to_string();
            }
        }
        let mut out = String::with_capacity(text.len() + text.len() / 16);
        for (index, line) in text.split('\n').enumerate() {
            if index > 0 {
                out.push('\n');
            }
            // Lines that are not events pass as they are: the page says
            // what it cannot read.
            let priced = serde_json::from_str::<Value>(line)
                .ok()
                .filter(|item| item.get("event").is_some())
                .and_then(|mut item| self.price_event(&mut item["event"]).then_some(item));
            match priced {
                Some(item) => out.push_str(&item.to_string()),
                None => out.push_str(line),
            }
        }
        out
    }

    /// Prices a model message event, at any depth of agents; whether it
    /// priced one.
    fn price_event(&self, event: &mut Value) -> bool {
        match event["type"].as_str() {
            Some("model_message") => self.price(&mut event["value"]),
            Some("agent") => self.price_event(&mut event["value"]["kind"]),
            _ => false,
        }
    }

    fn price(&self, message: &mut Value) -> bool {
        let Some(usage) = message.get("usage").filter(|usage| usage.is_object()) else {
            return false;
        };
        // Counts a log leaves out are 0, as the provider not saying.
        let count = |name: &str| usage[name].as_u64().unwrap_or(0);
        let usage = Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cached_tokens: count("cached_tokens"),
            reasoning_tokens: count("reasoning_tokens"),
            cache_write_tokens: count("cache_write_tokens"),
        };
        let model = message["model"].as_str().or(self.unnamed.as_deref());
        match model.and_then(|model| self.prices.get(model)) {
            Some(price) => {
                message["cost_usd"] = json!(price.cost(&usage));
                true
            }
            None => false,
        }
    }
}

async fn page(State(viewer): State<RunViewer>, headers: HeaderMap) -> Response {
    match viewer.host_allowed(&headers) {
        Ok(()) => Html(PAGE).into_response(),
        Err(refused) => *refused,
    }
}

/// The logs of the folder: name, size and when last written, newest first.
async fn list(State(viewer): State<RunViewer>, headers: HeaderMap) -> Response {
    if let Err(refused) = viewer.host_allowed(&headers) {
        return *refused;
    }
    let mut entries = match tokio::fs::read_dir(&viewer.dir).await {
        Ok(entries) => entries,
        Err(error) => {
            return failure(
                StatusCode::NOT_FOUND,
                format!("{} cannot be read: {error}", viewer.dir.display()),
            )
        }
    };
    let mut files = Vec::new();
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_log(&name) {
            continue;
        }
        if let Ok(meta) = entry.metadata().await {
            if meta.is_file() {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |since| since.as_millis());
                files.push(json!({ "name": name, "size": meta.len(), "modified_ms": modified }));
            }
        }
    }
    files.sort_by(|a, b| {
        b["modified_ms"]
            .as_u64()
            .cmp(&a["modified_ms"].as_u64())
            .then(a["name"].as_str().cmp(&b["name"].as_str()))
    });
    Json(Value::Array(files)).into_response()
}

/// One log, annotated with costs.
/// One log, annotated with costs: whole, or, with `?from=N`, its complete
/// lines after byte `N` (a page following a log that grows asks for what
/// was added). The `x-behest-next` header says where the complete lines
/// end: the `from` of the next read.
async fn read(
    State(viewer): State<RunViewer>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    UrlPath(name): UrlPath<String>,
) -> Response {
    if let Err(refused) = viewer.host_allowed(&headers) {
        return *refused;
    }
    if !is_log(&name) {
        return failure(
            StatusCode::NOT_FOUND,
            format!("`{name}` is not a run log of this folder"),
        );
    }
    let path = viewer.dir.join(&name);
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.len() > MOST_BYTES => {
            return failure(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "{name} holds {} MiB; the viewer reads logs of up to {} MiB",
                    meta.len() / (1024 * 1024),
                    MOST_BYTES / (1024 * 1024)
                ),
            )
        }
        Ok(_) => {}
        Err(error) => return failure(StatusCode::NOT_FOUND, format!("{name}: {error}")),
    }
    let from = uri
        .query()
        .into_iter()
        .flat_map(|query| query.split('&'))
        .find_map(|pair| pair.strip_prefix("from="))
        .and_then(|from| from.parse::<usize>().ok());
    let whole = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(error) => return failure(StatusCode::NOT_FOUND, format!("{name}: {error}")),
    };
    // Where the complete lines end: a line still being written is read
    // when it is whole.
    let complete = whole
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |last| last + 1);
    let bytes = match from {
        None => &whole[..],
        // The file is shorter than what was read of it: it was replaced.
        Some(from) if from > complete => {
            return failure(
                StatusCode::CONFLICT,
                format!("{name} was replaced: read it whole again"),
            )
        }
        Some(from) => &whole[from..complete],
    };
    // A file of another kind (binary, another encoding) is shown as text
    // with its bad bytes replaced: the page says it is no run log.
    let text = String::from_utf8_lossy(bytes);
    let annotated = tokio::task::spawn_blocking({
        let text = text.into_owned();
        move || viewer.annotated(&text)
    })
    .await
    .unwrap_or_default();
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
            (
                header::HeaderName::from_static("x-behest-next"),
                complete.to_string(),
            ),
        ],
        annotated,
    )
        .into_response()
}

/// Whether `name` is a log's file name: one plain component (no folder,
/// no drive, not hidden) ending `.jsonl` or `.json`.
fn is_log(name: &str) -> bool {
    let path = Path::new(name);
    let mut parts = path.components();
    let plain = matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) && !name.starts_with('.')
        && !name.contains([':', '/', '\\']);
    plain
        && matches!(
            path.extension().and_then(|extension| extension.to_str()),
            Some("jsonl" | "json")
        )
}

fn failure(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Price;

    #[test]
    fn only_plain_log_names_are_read() {
        for good in ["run.jsonl", "a b.json", "2026-12-06.jsonl"] {
            assert!(is_log(good), "{good}");
        }
        for bad in [
            "../etc/passwd.json",
            "/etc/x.json",
            "dir/run.jsonl",
            "..\\x.json",
            "C:x.json",
            ".hidden.jsonl",
            "run.txt",
            "",
        ] {
            assert!(!is_log(bad), "{bad}");
        }
    }

    #[test]
    fn only_the_loopback_names_are_answered_unless_allowed() {
        let viewer = RunViewer::new(".").allow_host("runs.internal");
        let host = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, value.parse().unwrap());
            headers
        };
        for good in [
            "localhost:4000",
            "127.0.0.1",
            "[::1]:80",
            "LOCALHOST",
            "runs.internal:8080",
        ] {
            assert!(viewer.host_allowed(&host(good)).is_ok(), "{good}");
        }
        for bad in [
            "evil.example",
            "evil.example:4000",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
        ] {
            assert!(viewer.host_allowed(&host(bad)).is_err(), "{bad}");
        }
        assert!(viewer.host_allowed(&HeaderMap::new()).is_err());
    }

    #[test]
    fn turns_are_priced_and_other_lines_pass_as_they_are() {
        let viewer = RunViewer::new(".")
            .prices(Prices::new().with("m", Price::per_million(1.0, 2.0)))
            .model("m");
        let text = concat!(
            r#"{"run_id":"r","sequence":1,"event":{"type":"model_message","value":{"usage":{"input_tokens":1000000,"output_tokens":500000}}}}"#,
            "\n",
            r#"{"run_id":"r","sequence":2,"event":{"type":"agent","value":{"agent":"a","call_id":"c","run_id":"n","kind":{"type":"model_message","value":{"model":"unknown","usage":{"input_tokens":1,"output_tokens":1}}}}}}"#,
            "\nnot json\n{\"run_id\":\"r\",\"seq"
        );
        let out = viewer.annotated(text);
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines.len(), 4);
        let first: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(first["event"]["value"]["cost_usd"], json!(2.0));
        // A model without a price stays unpriced, as written.
        assert_eq!(lines[1], text.split('\n').nth(1).unwrap());
        assert_eq!(&lines[2..], ["not json", "{\"run_id\":\"r\",\"seq"]);
    }
}
