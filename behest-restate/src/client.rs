//! A typed client of durable runs, over Restate's ingress and admin APIs.

use std::collections::HashMap;

use behest::{Message, ToolOutput};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::state::{assemble, page_index, Header, Page, HEADER};
use crate::transcript::rebuild;
use crate::wire::{Answer, Approval, DurableOutcome, Pending, Resolution, Resolve, Status};

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
    /// Restate knows no run of this id: never started, or ended longer
    /// ago than its retention (one day by default).
    #[error("Restate knows no run `{0}`: never started, or forgotten after its retention")]
    NoSuchRun(String),
}

impl DurableClientError {
    /// The HTTP status Restate refused with, if it refused.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// An answer, approval or decision sent to be delivered whenever a service
/// runs ([`DurableClient::answer_later`], ..): Restate keeps it at once;
/// whether the run took it, [`DurableClient::delivered`] tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The id of Restate's invocation that delivers it.
    pub invocation_id: String,
}

/// The first pause before a failed query is asked again; each next one is
/// twice as long, up to 16 times this.
const QUERY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// `text` as an SQL string literal.
fn sql_text(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `text` as one path segment: every byte but the unreserved ones
/// (letters, digits, `-._~`) percent-encoded, so a run id with `/` or `?`
/// names that run.
pub(crate) fn segment(text: &str) -> String {
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

/// Tells the Restate server whose admin API is at `admin`
/// (`http://127.0.0.1:9070`) of the service endpoint at `service`
/// (`http://127.0.0.1:9080`), again if it knew it (its handlers may have
/// changed), trying for about ten seconds while the server or the
/// service comes up. For development and tests: it forces the
/// registration, which Restate advises against in production (invocations
/// in flight on the old deployment may fail); there, register each new
/// version of a service at a new URI.
///
/// # Errors
/// [`DurableClientError::Unreachable`] when the server never took it, with
/// its last answer.
pub async fn register(admin: &str, service: &str) -> Result<(), DurableClientError> {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let body = serde_json::json!({"uri": service, "force": true});
    let mut last = String::from("no answer");
    for _ in 0..50 {
        match http.post(&url).json(&body).send().await {
            Ok(answer) if answer.status().is_success() => return Ok(()),
            Ok(answer) => {
                last = format!(
                    "{}: {}",
                    answer.status(),
                    answer.text().await.unwrap_or_default()
                )
            }
            Err(error) => last = error.to_string(),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Err(DurableClientError::Unreachable(format!(
        "the Restate server at {admin} did not register {service}: {last}"
    )))
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
        let outcome: DurableOutcome = Self::read(response).await?;
        // The run returns its outcome without the transcript, which its
        // journal holds.
        if !outcome.transcript().is_empty() {
            return Ok(outcome);
        }
        let transcript = self.status(run_id).await?.transcript;
        Ok(outcome.with_transcript(transcript))
    }

    /// Where run `run_id` stands, read from Restate's own record of the
    /// run (its invocation, state and journal) through its admin API: it
    /// answers while no service runs, and tells a run whose invocation was
    /// killed (`killed`) or paused (`paused`) from one that goes on.
    pub async fn status(&self, run_id: &str) -> Result<Status, DurableClientError> {
        let key = sql_text(run_id);
        // The invocation first: a run's state is written before its
        // invocation completes, so a run that ends between the two reads
        // is seen completed, not killed.
        let invocations = self
            .query(&format!(
                "SELECT id, status, completion_failure FROM sys_invocation WHERE target_service_name = 'DurableAgent' AND target_service_key = {key} AND target_handler_name = 'run'"
            ))
            .await?;
        let invocation = invocations.first();
        let rows = self
            .query(&format!(
                "SELECT key, value_utf8 FROM state WHERE service_name = 'DurableAgent' AND service_key = {key}"
            ))
            .await?;
        let mut header = None;
        let mut pages = Vec::new();
        for row in &rows {
            let (Some(name), Some(value)) = (row["key"].as_str(), row["value_utf8"].as_str())
            else {
                continue;
            };
            let unreadable = |error: serde_json::Error| {
                DurableClientError::Unreadable(format!("{name}: {error}"))
            };
            if name == HEADER {
                header = Some(serde_json::from_str::<Header>(value).map_err(unreadable)?);
            } else if let Some(index) = page_index(name) {
                pages.push((
                    index,
                    serde_json::from_str::<Page>(value).map_err(unreadable)?,
                ));
            }
        }
        if header.is_none() && pages.is_empty() && invocation.is_none() {
            return Err(DurableClientError::NoSuchRun(run_id.to_owned()));
        }
        let (mut status, parts) = assemble(header, pages);
        // Read after the state, so that the journal holds every entry the
        // pages read from; read again, a few times, should it not (a node
        // of a cluster that answers for the journal may lag the one that
        // answered for the state).
        let id = invocation.and_then(|row| row["id"].as_str());
        let mut pause = QUERY_PAUSE;
        status.transcript = loop {
            let (input, entries) = match id {
                Some(id) => self.journal(id).await?,
                None => Default::default(),
            };
            match rebuild(input, entries, parts.clone()) {
                Ok(transcript) => break transcript,
                Err(_) if id.is_some() && pause <= QUERY_PAUSE * 8 => {
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                Err(why) => {
                    return Err(DurableClientError::Unreadable(format!(
                        "the transcript of run `{run_id}` from its journal: {why}"
                    )))
                }
            }
        };
        let ended = matches!(status.state.as_str(), "completed" | "failed" | "cancelled");
        let failure = invocation.and_then(|row| row["completion_failure"].as_str());
        match invocation.and_then(|row| row["status"].as_str()) {
            Some("paused") if !ended => status.state = "paused".to_owned(),
            // Ended without writing its end: killed, or failed before it
            // began (its input unreadable, say).
            Some("completed") if !ended => {
                let killed = failure.is_none_or(|failure| failure.contains("kill"));
                status.state = if killed { "killed" } else { "failed" }.to_owned();
            }
            _ if status.state.is_empty() => status.state = "running".to_owned(),
            _ => {}
        }
        Ok(status)
    }

    /// The input of the invocation `id` and its journal's entries that
    /// completed (their names and JSON values), in the journal's order.
    async fn journal(&self, id: &str) -> Result<JournalRead, DurableClientError> {
        let rows = self
            .query(&format!(
                "SELECT entry_json FROM sys_journal WHERE id = {} AND entry_type IN ('Command: Input', 'Command: Run', 'Notification: Run') ORDER BY index",
                sql_text(id)
            ))
            .await?;
        let mut input = Vec::new();
        // Names by completion, in the journal's order; values as they come.
        let mut names: Vec<(u64, String)> = Vec::new();
        let mut values: HashMap<u64, Vec<u8>> = HashMap::new();
        for row in &rows {
            let entry = row["entry_json"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Entry>(text).ok())
                .ok_or_else(|| {
                    DurableClientError::Unreadable(format!("a journal entry of {id}: {row}"))
                })?;
            match entry {
                // An input the run could not read either: the run failed
                // before it began, with no transcript.
                Entry::Command(Command::Input { payload }) => {
                    input = serde_json::from_slice(&payload).unwrap_or_default();
                }
                Entry::Command(Command::Run {
                    completion_id,
                    name,
                }) => names.push((completion_id, name)),
                Entry::Notification(Notification::Completion(Completion::Run {
                    completion_id,
                    result,
                })) => {
                    // A step that failed gives nothing.
                    if let RunResult::Success(value) = result {
                        values.insert(completion_id, value);
                    }
                }
            }
        }
        let entries = names
            .into_iter()
            .filter_map(|(id, name)| Some((name, values.remove(&id)?)))
            .collect();
        Ok((input, entries))
    }

    /// What run `run_id` waits for now (its calls, by path below the
    /// root), read from the small part of Restate's record that says so:
    /// as [`status`](Self::status)'s `pending`, without reading the
    /// transcript, for a UI or a script that polls for approvals. Empty for
    /// a run that waits for nothing, has ended, or is unknown.
    ///
    /// # Errors
    /// As [`status`](Self::status).
    pub async fn pending(&self, run_id: &str) -> Result<Vec<Pending>, DurableClientError> {
        let rows = self
            .query(&format!(
                "SELECT value_utf8 FROM state WHERE service_name = 'DurableAgent' AND service_key = {} AND key = '{HEADER}'",
                sql_text(run_id)
            ))
            .await?;
        let Some(value) = rows.first().and_then(|row| row["value_utf8"].as_str()) else {
            return Ok(Vec::new());
        };
        let header: Header = serde_json::from_str(value)
            .map_err(|error| DurableClientError::Unreadable(format!("{HEADER}: {error}")))?;
        let (status, _) = assemble(Some(header), Vec::new());
        Ok(status.pending)
    }

    /// Rows of an SQL query of Restate's introspection tables.
    /// A query that fails on the server's side (a cluster reaching a node
    /// that just went down answers 500, "connect throttled") is asked
    /// again, a few times over about three seconds: it only reads.
    async fn query(&self, sql: &str) -> Result<Vec<serde_json::Value>, DurableClientError> {
        let url = format!("{}/query", self.admin);
        let mut pause = QUERY_PAUSE;
        let mut answer: serde_json::Value = loop {
            let response = self
                .http
                .post(&url)
                .header("accept", "application/json")
                .json(&serde_json::json!({ "query": sql }))
                .send()
                .await;
            match Self::read(response).await {
                Err(DurableClientError::Refused { status, .. })
                    if status >= 500 && pause <= QUERY_PAUSE * 16 =>
                {
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                read => break read?,
            }
        };
        match answer["rows"].take() {
            serde_json::Value::Array(rows) => Ok(rows),
            other => Err(DurableClientError::Unreadable(other.to_string())),
        }
    }

    /// Answers external call `call_id` of run `run_id` with `output`, once
    /// a service has taken it. A call of an agent the run runs as a tool,
    /// at any depth, goes by its path (`billing#c3/ledger#c1`), as
    /// [`status`](Self::status) lists it; so for every answer below. Refused ([`DurableClientError::Refused`],
    /// 404) when that call does not wait for an answer (the run has not
    /// reached it, or it was answered, or its deadline passed), 413 when
    /// the output is over the run's step limit or its runtime's output
    /// limit (the call still waits: send another). While no service runs it
    /// waits for one; [`answer_later`](Self::answer_later) returns at once.
    pub async fn answer(
        &self,
        run_id: &str,
        call_id: &str,
        output: ToolOutput,
    ) -> Result<(), DurableClientError> {
        let answer = Answer {
            call_id: call_id.to_owned(),
            output,
        };
        self.handler(run_id, "answer", &answer).await
    }

    /// Approves (or denies, saying why) call `call_id` of run `run_id`, as
    /// [`answer`](Self::answer) answers: refused when the call does not
    /// wait for an approval.
    pub async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        approved: bool,
        reason: Option<&str>,
    ) -> Result<(), DurableClientError> {
        self.handler(run_id, "approve", &approval(call_id, approved, reason))
            .await
    }

    /// Says what call `call_id` of run `run_id` did, a call whose outcome
    /// is unknown (`waits_for: "outcome"`): cut by a crash while it ran.
    pub async fn resolve(
        &self,
        run_id: &str,
        call_id: &str,
        resolution: Resolution,
    ) -> Result<(), DurableClientError> {
        let resolve = Resolve {
            call_id: call_id.to_owned(),
            resolution,
        };
        self.handler(run_id, "resolve", &resolve).await
    }

    /// [`answer`](Self::answer), handed to Restate to deliver whenever a
    /// service runs: it returns once Restate keeps it, and
    /// [`delivered`](Self::delivered) tells whether the run took it.
    pub async fn answer_later(
        &self,
        run_id: &str,
        call_id: &str,
        output: ToolOutput,
    ) -> Result<Sent, DurableClientError> {
        let answer = Answer {
            call_id: call_id.to_owned(),
            output,
        };
        self.send(run_id, "answer", &answer).await
    }

    /// [`approve`](Self::approve), delivered as
    /// [`answer_later`](Self::answer_later) delivers an answer.
    pub async fn approve_later(
        &self,
        run_id: &str,
        call_id: &str,
        approved: bool,
        reason: Option<&str>,
    ) -> Result<Sent, DurableClientError> {
        self.send(run_id, "approve", &approval(call_id, approved, reason))
            .await
    }

    /// Waits until what was [`Sent`] is delivered: `Ok` when the run took
    /// it, the refusal its sender would have read otherwise.
    pub async fn delivered(&self, sent: &Sent) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/restate/invocation/{}/attach",
            self.ingress,
            segment(&sent.invocation_id)
        );
        let response = self.http.get(&url).send().await;
        Self::read::<serde_json::Value>(response).await.map(drop)
    }

    /// Calls `handler` of run `run_id` and waits for its verdict.
    async fn handler<B: Serialize>(
        &self,
        run_id: &str,
        handler: &str,
        body: &B,
    ) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/DurableAgent/{}/{handler}",
            self.ingress,
            segment(run_id)
        );
        self.post::<_, serde_json::Value>(&url, body)
            .await
            .map(drop)
    }

    /// Hands a call of `handler` of run `run_id` to Restate.
    async fn send<B: Serialize>(
        &self,
        run_id: &str,
        handler: &str,
        body: &B,
    ) -> Result<Sent, DurableClientError> {
        let url = format!(
            "{}/DurableAgent/{}/{handler}/send",
            self.ingress,
            segment(run_id)
        );
        let answer: serde_json::Value = self.post(&url, body).await?;
        answer["invocationId"]
            .as_str()
            .map(|id| Sent {
                invocation_id: id.to_owned(),
            })
            .ok_or_else(|| DurableClientError::Unreadable(answer.to_string()))
    }

    /// Cancels the run whose invocation [`start`](Self::start) returned:
    /// it ends `Cancelled`, every call in its transcript answered.
    pub async fn cancel(&self, invocation_id: &str) -> Result<(), DurableClientError> {
        let url = format!(
            "{}/invocations/{}/cancel",
            self.admin,
            segment(invocation_id)
        );
        let response = self.http.patch(&url).send().await;
        Self::read::<serde_json::Value>(response).await.map(drop)
    }

    async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<T, DurableClientError> {
        let response = self.http.post(url).json(body).send().await;
        Self::read(response).await
    }

    /// A response of Restate's read as `T`, or the error that says why it
    /// cannot be.
    pub(crate) async fn read<T: DeserializeOwned>(
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

/// A run's input, and its journal's completed entries by name.
type JournalRead = (Vec<Message>, Vec<(String, Vec<u8>)>);

/// A journal entry as Restate's `sys_journal.entry_json` gives it, of the
/// kinds [`DurableClient::journal`] asks for; values are arrays of bytes.
#[derive(serde::Deserialize)]
enum Entry {
    Command(Command),
    Notification(Notification),
}

#[derive(serde::Deserialize)]
enum Command {
    Input {
        payload: Vec<u8>,
    },
    Run {
        completion_id: u64,
        #[serde(default)]
        name: String,
    },
}

#[derive(serde::Deserialize)]
enum Notification {
    Completion(Completion),
}

#[derive(serde::Deserialize)]
enum Completion {
    Run {
        completion_id: u64,
        result: RunResult,
    },
}

#[derive(serde::Deserialize)]
enum RunResult {
    Success(Vec<u8>),
    Failure(serde::de::IgnoredAny),
}

fn approval(call_id: &str, approved: bool, reason: Option<&str>) -> Approval {
    Approval {
        call_id: call_id.to_owned(),
        approved,
        reason: reason.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries as restate-server 1.7 gives them in `sys_journal.entry_json`.
    #[test]
    fn journal_entries_read_as_restate_writes_them() {
        let read = |text: &str| serde_json::from_str::<Entry>(text).unwrap();
        let Entry::Command(Command::Input { payload }) = read(
            r#"{"Command":{"Input":{"headers":[{"name":"accept","value":"*/*"}],"payload":[91,93]}}}"#,
        ) else {
            panic!("an input");
        };
        assert_eq!(payload, b"[]");
        let Entry::Command(Command::Run {
            completion_id,
            name,
        }) = read(r#"{"Command":{"Run":{"completion_id":4,"name":"call c1"}}}"#)
        else {
            panic!("a run");
        };
        assert_eq!((completion_id, name.as_str()), (4, "call c1"));
        let Entry::Notification(Notification::Completion(Completion::Run { result, .. })) = read(
            r#"{"Notification":{"Completion":{"Run":{"completion_id":4,"result":{"Success":[50]}}}}}"#,
        ) else {
            panic!("a completion");
        };
        assert!(matches!(result, RunResult::Success(value) if value == b"2"));
        let failed = read(
            r#"{"Notification":{"Completion":{"Run":{"completion_id":5,"result":{"Failure":{"code":409,"message":"cancelled"}}}}}}"#,
        );
        assert!(matches!(
            failed,
            Entry::Notification(Notification::Completion(Completion::Run {
                result: RunResult::Failure(_),
                ..
            }))
        ));
        // A byte past 255 is not a byte.
        assert!(
            serde_json::from_str::<Entry>(r#"{"Command":{"Input":{"payload":[256]}}}"#).is_err()
        );
    }
}
