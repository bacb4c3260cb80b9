//! A typed client of durable runs, over Restate's ingress and admin APIs.

use behest::{Message, ToolOutput};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::wire::{Answer, Approval, DurableOutcome, Status};

/// Why a request to Restate failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableClientError {
    /// Restate could not be reached.
    #[error("Restate could not be reached: {0}")]
    Unreachable(String),
    /// Restate answered with an error.
    #[error("Restate answered {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// What it said.
        body: String,
    },
    /// The answer was not what was asked for.
    #[error("Restate's answer could not be read: {0}")]
    Unreadable(String),
}

/// `text` as one path segment: every byte but the unreserved ones
/// (letters, digits, `-._~`) percent-encoded, so a run id with `/` or `?`
/// names that run.
fn segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Starts durable runs, answers what they wait for, and reads their status
/// and outcome, through a Restate server's ingress (and its admin API to
/// cancel).
#[derive(Clone, Debug)]
pub struct DurableClient {
    ingress: String,
    admin: String,
    http: reqwest::Client,
}

impl DurableClient {
    /// A client of the Restate server whose ingress is at `ingress`
    /// (`http://127.0.0.1:8080`) and admin API at `admin`
    /// (`http://127.0.0.1:9070`).
    pub fn new(ingress: impl Into<String>, admin: impl Into<String>) -> Self {
        // rustls needs a crypto provider even for plain HTTP.
        let _installed = rustls::crypto::ring::default_provider().install_default();
        Self {
            ingress: ingress.into().trim_end_matches('/').to_owned(),
            admin: admin.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Starts run `run_id` on `conversation`, and returns at once with the
    /// invocation's id (to [`cancel`](Self::cancel) it). Starting a run id
    /// again starts nothing: the first run stands.
    pub async fn start(
        &self,
        run_id: &str,
        conversation: &[Message],
    ) -> Result<String, DurableClientError> {
        let url = format!("{}/DurableAgent/{}/run/send", self.ingress, segment(run_id));
        let answer: serde_json::Value = self.post(&url, conversation).await?;
        answer["invocationId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| DurableClientError::Unreadable(answer.to_string()))
    }

    /// Waits for run `run_id`'s outcome (attaching to it however long ago
    /// it started).
    pub async fn outcome(&self, run_id: &str) -> Result<DurableOutcome, DurableClientError> {
        let url = format!(
            "{}/restate/workflow/DurableAgent/{}/attach",
            self.ingress,
            segment(run_id)
        );
        let response = self.http.get(&url).send().await;
        Self::read(response).await
    }

    /// Where run `run_id` stands.
    pub async fn status(&self, run_id: &str) -> Result<Status, DurableClientError> {
        let url = format!("{}/DurableAgent/{}/status", self.ingress, segment(run_id));
        // The handler takes no input: the body must be empty.
        let response = self.http.post(&url).send().await;
        Self::read(response).await
    }

    /// Answers external call `call_id` of run `run_id` with `output`. Restate
    /// keeps the answer at once, even while no service runs; the run takes
    /// it up when one does.
    pub async fn answer(
        &self,
        run_id: &str,
        call_id: &str,
        output: ToolOutput,
    ) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/DurableAgent/{}/answer/send",
            self.ingress,
            segment(run_id)
        );
        let answer = Answer {
            call_id: call_id.to_owned(),
            output,
        };
        self.post::<_, serde_json::Value>(&url, &answer)
            .await
            .map(drop)
    }

    /// Approves (or denies, saying why) call `call_id` of run `run_id`; kept
    /// by Restate at once, as [`answer`](Self::answer) is.
    pub async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        approved: bool,
        reason: Option<&str>,
    ) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/DurableAgent/{}/approve/send",
            self.ingress,
            segment(run_id)
        );
        let approval = Approval {
            call_id: call_id.to_owned(),
            approved,
            reason: reason.map(str::to_owned),
        };
        self.post::<_, serde_json::Value>(&url, &approval)
            .await
            .map(drop)
    }

    /// Cancels the run whose invocation [`start`](Self::start) returned:
    /// it ends `Cancelled`, every call in its transcript answered.
    pub async fn cancel(&self, invocation_id: &str) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/invocations/{}/cancel",
            self.admin,
            segment(invocation_id)
        );
        let response = self
            .http
            .patch(&url)
            .send()
            .await
            .map_err(|error| DurableClientError::Unreachable(error.to_string()))?;
        if response.status().is_success() {
            return Ok(());
        }
        Err(DurableClientError::Refused {
            status: response.status().as_u16(),
            body: response.text().await.unwrap_or_default(),
        })
    }

    async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<T, DurableClientError> {
        let response = self.http.post(url).json(body).send().await;
        Self::read(response).await
    }

    async fn read<T: DeserializeOwned>(
        response: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<T, DurableClientError> {
        let response =
            response.map_err(|error| DurableClientError::Unreachable(error.to_string()))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| DurableClientError::Unreachable(error.to_string()))?;
        if !status.is_success() {
            return Err(DurableClientError::Refused {
                status: status.as_u16(),
                body,
            });
        }
        // A handler answering nothing sends an empty body.
        let body = if body.is_empty() { "null" } else { &body };
        serde_json::from_str(body)
            .map_err(|error| DurableClientError::Unreadable(format!("{error}: {body}")))
    }
}
