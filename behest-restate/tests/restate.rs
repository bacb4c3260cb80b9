//! Durable runs against a real `restate-server` (`BEHEST_RESTATE_SERVER`,
//! installed by `.ci/run`): the test service is started, killed and started
//! again as a separate process, the server keeps the journal, and runs are
//! driven through its ingress with `DurableClient`.

#[path = "support/server.rs"]
mod server;

#[path = "service/agent.rs"]
#[allow(dead_code)]
mod agent;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use behest::{EventKind, Message, ToolOutput, ToolStreamEvent};
use behest_restate::{DurableClient, DurableClientError, DurableOutcome, Resolution};
use server::{free_port, start_cluster, start_server, until, Scratch, Server};
use tokio::process::{Child, Command};

/// A `restate-server` of the test's own, on free ports, keeping its data
/// in a scratch folder.
struct Restate {
    server: Server,
    /// The other nodes, for a cluster.
    others: Vec<Server>,
    ingress: String,
    admin: String,
}

impl Restate {
    async fn start(name: &str) -> Self {
        Self::on(false, name).await
    }

    /// One server, or a cluster of three nodes (`tests/support/server.rs`,
    /// `start_cluster`) whose first the clients talk to.
    async fn on(cluster: bool, name: &str) -> Self {
        let binary = std::env::var_os("BEHEST_RESTATE_SERVER").expect("BEHEST_RESTATE_SERVER");
        let (server, others) = if cluster {
            let mut nodes = start_cluster(&binary, name).await;
            let first = nodes.remove(0);
            (first, nodes)
        } else {
            (start_server(&binary, name).await, Vec::new())
        };
        Self {
            ingress: format!("http://127.0.0.1:{}", server.ingress),
            admin: format!("http://127.0.0.1:{}", server.admin),
            server,
            others,
        }
    }

    /// Kills the node of the cluster the clients talked to, the one that
    /// provisioned it (every partition has a replica there): the log and
    /// partitions it held go on from their other replicas, and clients
    /// made after talk to the next node.
    async fn kill_a_node(&mut self) {
        let next = self.others.remove(0);
        let mut killed = std::mem::replace(&mut self.server, next);
        killed.kill().await;
        self.others.push(killed);
        self.ingress = format!("http://127.0.0.1:{}", self.server.ingress);
        self.admin = format!("http://127.0.0.1:{}", self.server.admin);
    }

    fn client(&self) -> DurableClient {
        DurableClient::new(&self.ingress, &self.admin)
    }

    /// Tells the server of the service at `port`.
    async fn register(&self, port: u16) {
        self.server.register(port).await;
    }
}

/// The test service, counting its model's and tool's work into `counts`.
struct Service {
    child: Child,
}

impl Service {
    async fn start(port: u16, counts: &Path, deadline_ms: u64) -> Self {
        Self::start_with(port, counts, deadline_ms, None).await
    }

    /// [`start`](Self::start) in `mode` (`approve`: tallies need approvals;
    /// `paired`: the model makes its calls in one turn).
    async fn start_with(port: u16, counts: &Path, deadline_ms: u64, mode: Option<&str>) -> Self {
        Self::start_limited(port, counts, deadline_ms, mode, None).await
    }

    /// A service whose tools' outputs (and the answers it takes) are held to
    /// `max_output` bytes, when given.
    async fn start_limited(
        port: u16,
        counts: &Path,
        deadline_ms: u64,
        mode: Option<&str>,
        max_output: Option<usize>,
    ) -> Self {
        let limit = max_output.map(|limit| ("BEHEST_TEST_MAX_OUTPUT", limit.to_string()));
        Self::start_env(port, counts, deadline_ms, mode, limit.as_slice()).await
    }

    async fn start_env(
        port: u16,
        counts: &Path,
        deadline_ms: u64,
        mode: Option<&str>,
        envs: &[(&str, String)],
    ) -> Self {
        let mut args = vec![port.to_string(), deadline_ms.to_string()];
        args.extend(mode.map(str::to_owned));
        let mut command = Command::new(env!("CARGO_BIN_EXE_behest-restate-test-service"));
        command.envs(envs.iter().map(|(name, value)| (*name, value.as_str())));
        let child = command
            .args(args)
            .env("BEHEST_TEST_COUNTS", counts)
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the test service starts");
        let mut service = Self { child };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let listening = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok();
            // Looked at after the connection too: one that exits because
            // its port was taken leaves the connection to whatever took it.
            if let Ok(Some(status)) = service.child.try_wait() {
                panic!("the test service exited ({status}) before it listened on {port}");
            }
            if listening {
                return service;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "gave up waiting for the test service to listen on {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the process, as a crash does.
    async fn kill(mut self) {
        self.child.kill().await.expect("the service is killed");
    }
}

/// How many times `name` was counted in `counts`.
fn counted(counts: &Path, name: &str) -> usize {
    std::fs::read_to_string(counts.join(name)).map_or(0, |text| text.lines().count())
}

/// Waits until run `run_id` waits for the answer of an external call.
async fn waiting_for_an_answer(client: &DurableClient, run_id: &str) -> String {
    waiting_for(client, run_id, "answer").await
}

/// Waits until run `run_id` waits for `what` (`answer` or `approval`), and
/// gives the call's id.
async fn waiting_for(client: &DurableClient, run_id: &str, what: &str) -> String {
    until(&format!("the run to wait for an {what}"), || async {
        // Said, should the wait give up: why the record could not be read.
        let pending = client
            .pending(run_id)
            .await
            .inspect_err(|error| eprintln!("what {run_id} waits for: {error}"))
            .ok()?;
        let pending = pending.first()?;
        (pending.waits_for == what).then(|| pending.call.call_id.clone())
    })
    .await
}

fn question() -> Vec<Message> {
    vec![Message::user("count")]
}

/// The same run in process, its external call answered "yes".
async fn in_process() -> Vec<Message> {
    in_process_of(agent::Mode::Plain, question())
        .await
        .transcript()
        .to_vec()
}

/// A run of the test agent in `mode` on `conversation`, in process, its
/// external calls answered "yes".
async fn in_process_of(mode: agent::Mode, conversation: Vec<Message>) -> behest::RunOutcome {
    let invocation = agent::agent(Duration::from_secs(600), mode).invoke(conversation);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let _ = control.resolve(&call.call_id, Ok(ToolOutput::text("yes")));
        }
    });
    invocation.await
}

/// A run with local tools and an external call completes through Restate,
/// its transcript the same as the same run's in process.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_durable_run_completes_as_it_does_in_process() {
    let restate = Restate::start("completes").await;
    let counts = Scratch::new("completes-counts");
    let port = free_port();
    let _service = Service::start(port, &counts, 600_000).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-1", &question()).await.unwrap();
    let call_id = waiting_for_an_answer(&client, "run-1").await;
    // While it waits: the transcript so far, up to the call it waits on.
    let waiting = client.status("run-1").await.unwrap();
    assert_eq!(waiting.state, "waiting");
    assert_eq!(waiting.pending[0].call.tool_name, "ask_person");
    // What it waits for alone, without the transcript: the same.
    assert_eq!(client.pending("run-1").await.unwrap(), waiting.pending);
    let so_far = in_process().await;
    assert_eq!(waiting.transcript, so_far[..so_far.len() - 2]);
    client
        .answer("run-1", &call_id, ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("run-1").await.unwrap();
    assert_eq!(
        outcome.text(),
        Some("done: step 0 counted, step 1 counted, yes")
    );
    assert_eq!(outcome.transcript(), in_process().await);
    let status = client.status("run-1").await.unwrap();
    assert_eq!(status.state, "completed");
    assert!(status.pending.is_empty());
    assert!(client.pending("run-1").await.unwrap().is_empty());
    assert!(client.pending("never-started").await.unwrap().is_empty());
    // The run's events that the rest of the status does not tell: here
    // the call for a person, where the transcript stood when it came
    // (after the turn that asked for it). Phases, replies, results and the
    // guardrail's verdicts that let each call pass are not repeated.
    let kinds: Vec<(&str, &str)> = status
        .events
        .iter()
        .map(|event| {
            let kind = &event["kind"];
            (
                kind["type"].as_str().unwrap(),
                kind["value"]["call"]["tool_name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, [("tool", "ask_person")], "{:?}", status.events);
    let at: Vec<usize> = status
        .events
        .iter()
        .map(|event| event["at"].as_u64().unwrap() as usize)
        .collect();
    for at in at {
        assert!(
            matches!(&status.transcript[at - 1], Message::Assistant(reply) if !reply.tool_calls.is_empty()),
            "{at}: {:?}",
            status.transcript
        );
    }
}

/// A run whose transcript changes in place (instructions put first, its
/// input masked by a guardrail, its answer rewritten by another) reads
/// back as in process: while it waits, and once it ends.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_transcript_changed_in_place_reads_back_as_in_process() {
    let restate = Restate::start("guarded").await;
    let counts = Scratch::new("guarded-counts");
    let port = free_port();
    let _service = Service::start_with(port, &counts, 600_000, Some("guarded")).await;
    restate.register(port).await;
    let client = restate.client();
    let asked = vec![Message::user("count for order 42")];
    client.start("guarded-1", &asked).await.unwrap();
    let call_id = waiting_for_an_answer(&client, "guarded-1").await;
    let in_process = in_process_of(agent::Mode::Guarded, asked).await;
    let expected = in_process.transcript();
    assert_eq!(
        expected[..2],
        [
            Message::system("Count twice, then ask the person."),
            Message::user("count for order ##")
        ]
    );
    let waiting = client.status("guarded-1").await.unwrap();
    assert_eq!(waiting.transcript, expected[..expected.len() - 2]);
    client
        .answer("guarded-1", &call_id, ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("guarded-1").await.unwrap();
    assert_eq!(
        outcome.text(),
        Some("DONE: STEP 0 COUNTED, STEP 1 COUNTED, YES")
    );
    assert_eq!(outcome.transcript(), expected);
}

/// The service dies after the model's turns and both tallies, while the
/// run waits for a person; started again and answered, the run completes,
/// the model asked as often as without the crash and the tool run once
/// per call.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_run_survives_the_death_of_its_service_and_repeats_nothing() {
    run_survives_the_death_of_its_service(false).await;
}

/// The same, on a three-node cluster that loses a node while the run
/// waits.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_a_run_survives_its_service_and_a_node_dying() {
    run_survives_the_death_of_its_service(true).await;
}

async fn run_survives_the_death_of_its_service(cluster: bool) {
    let name = if cluster { "crash-cluster" } else { "crash" };
    let mut restate = Restate::on(cluster, name).await;
    let counts = Scratch::new(&format!("{name}-counts"));
    let port = free_port();
    let service = Service::start(port, &counts, 600_000).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-2", &question()).await.unwrap();
    let call_id = waiting_for_an_answer(&client, "run-2").await;
    assert_eq!(
        (counted(&counts, "model"), counted(&counts, "tally")),
        (3, 2)
    );
    // A guardrail's verdict on each of the three calls.
    assert_eq!(counted(&counts, "guardrail"), 3);
    service.kill().await;
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };

    let _again = Service::start(port, &counts, 600_000).await;
    client
        .answer("run-2", &call_id, ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("run-2").await.unwrap();
    assert_eq!(
        outcome.text(),
        Some("done: step 0 counted, step 1 counted, yes")
    );
    // Four turns in all, as without the crash; two tallies; no verdict
    // asked again.
    assert_eq!(
        (counted(&counts, "model"), counted(&counts, "tally")),
        (4, 2)
    );
    assert_eq!(counted(&counts, "guardrail"), 3);
}

/// An external call's deadline passes while no service runs: the durable
/// timer fires all the same, and once the service is back the model reads
/// that the call timed out.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_deadline_that_passes_while_the_service_is_down_still_fires() {
    deadline_passing_while_the_service_is_down_on(false).await;
}

/// The same on a three-node cluster: a deadline passes while the service is down and a node has died.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_a_deadline_fires_while_the_service_and_a_node_are_down() {
    deadline_passing_while_the_service_is_down_on(true).await;
}

async fn deadline_passing_while_the_service_is_down_on(cluster: bool) {
    let tag = if cluster {
        "deadline-cluster"
    } else {
        "deadline"
    };
    let mut restate = Restate::on(cluster, tag).await;
    let counts = Scratch::new(&format!("{tag}-counts"));
    let port = free_port();
    // Long enough to be seen waiting on a loaded machine (a three-node
    // cluster on two cores took over 3 s once), short enough to pass while
    // the service is down.
    let service = Service::start(port, &counts, 8_000).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-3", &question()).await.unwrap();
    waiting_for_an_answer(&client, "run-3").await;
    service.kill().await;
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };
    tokio::time::sleep(Duration::from_millis(8_500)).await;

    let _again = Service::start(port, &counts, 3_000).await;
    let outcome = client.outcome("run-3").await.unwrap();
    let text = outcome.text().unwrap();
    assert!(
        text.ends_with("did not finish within 3s and was stopped"),
        "{text}"
    );
}

/// Cancelled through Restate while it waits, a run ends `Cancelled` with
/// every call in its transcript answered.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_run_cancelled_through_restate_ends_cancelled() {
    let restate = Restate::start("cancel").await;
    let counts = Scratch::new("cancel-counts");
    let port = free_port();
    let _service = Service::start(port, &counts, 600_000).await;
    restate.register(port).await;
    let client = restate.client();
    let invocation = client.start("run-4", &question()).await.unwrap();
    waiting_for_an_answer(&client, "run-4").await;
    client.cancel(&invocation).await.unwrap();
    let outcome = client.outcome("run-4").await.unwrap();
    let DurableOutcome::Cancelled { transcript, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    let Some(Message::ToolResult(last)) = transcript.last() else {
        panic!("{transcript:?}");
    };
    assert_eq!(last.tool_name, "ask_person");
    assert!(last.is_error, "{last:?}");
    assert_eq!(client.status("run-4").await.unwrap().state, "cancelled");
}

/// An approval given while no service runs at all: once the service is
/// started again, the run takes it up and completes.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn an_approval_given_while_no_service_runs_is_taken_up_when_it_starts() {
    approval_given_while_no_service_runs_on(false).await;
}

/// The same on a three-node cluster: an approval given through another node while no service runs.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_an_approval_given_while_no_service_runs_is_taken_up() {
    approval_given_while_no_service_runs_on(true).await;
}

async fn approval_given_while_no_service_runs_on(cluster: bool) {
    let tag = if cluster {
        "approval-cluster"
    } else {
        "approval"
    };
    let mut restate = Restate::on(cluster, tag).await;
    let counts = Scratch::new(&format!("{tag}-counts"));
    let port = free_port();
    let service = Service::start_with(port, &counts, 600_000, Some("approve")).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-5", &question()).await.unwrap();
    let first = waiting_for(&client, "run-5", "approval").await;
    assert_eq!(counted(&counts, "tally"), 0);
    service.kill().await;
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };
    // Kept by Restate at once, delivered once a service runs.
    let sent = client
        .approve_later("run-5", &first, true, None)
        .await
        .unwrap();
    // Read from Restate's own record, the status answers while no service
    // runs.
    // (On a cluster that just lost a node, once its partitions have
    // moved: until then the admin API says it cannot reach them.)
    let status = until("the status to answer while no service runs", || async {
        client.status("run-5").await.ok()
    })
    .await;
    assert_eq!(status.state, "waiting");

    let _again = Service::start_with(port, &counts, 600_000, Some("approve")).await;
    client.delivered(&sent).await.unwrap();
    // The approval given while it was down is taken up: the run goes on
    // to the next call's.
    let second = until("the second approval", || async {
        let status = client.status("run-5").await.ok()?;
        let pending = status.pending.first()?;
        (pending.waits_for == "approval" && pending.call.call_id != first)
            .then(|| pending.call.call_id.clone())
    })
    .await;
    client
        .approve("run-5", &second, false, Some("one is enough"))
        .await
        .unwrap();
    let call_id = waiting_for_an_answer(&client, "run-5").await;
    client
        .answer("run-5", &call_id, ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("run-5").await.unwrap();
    let text = outcome.text().unwrap();
    assert!(
        text.starts_with("done: step 0 counted, ")
            && text.contains("one is enough")
            && text.ends_with(", yes"),
        "{text}"
    );
    // The approved tally ran once; the denied one never.
    assert_eq!(counted(&counts, "tally"), 1);
}

/// A load balancer of the test's own: each connection goes to the next
/// backend that accepts one, so a dead backend's share goes to the others.
async fn balance(backends: Vec<u16>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut next = 0usize;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let mut outbound = None;
            for _ in 0..backends.len() {
                let backend = backends[next % backends.len()];
                next = next.wrapping_add(1);
                if let Ok(stream) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await {
                    outbound = Some(stream);
                    break;
                }
            }
            if let Some(mut outbound) = outbound {
                tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
            }
        }
    });
    port
}

/// Two service processes behind one balancer and one Restate server; 50
/// runs at once; one process killed midway. Every run completes once, and
/// no completed tool call ran again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn fifty_runs_on_two_services_survive_one_of_them_dying() {
    fifty_runs_on(false).await;
}

/// The same on a three-node cluster that loses a node with the service.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_fifty_runs_survive_a_service_and_a_node_dying() {
    fifty_runs_on(true).await;
}

async fn fifty_runs_on(cluster: bool) {
    const RUNS: usize = 50;
    let tag = if cluster { "scale-cluster" } else { "scale" };
    let mut restate = Restate::on(cluster, tag).await;
    let counts = Scratch::new(&format!("{tag}-counts"));
    let (first_port, second_port) = (free_port(), free_port());
    let first = Service::start(first_port, &counts, 600_000).await;
    let _second = Service::start(second_port, &counts, 600_000).await;
    let balancer = balance(vec![first_port, second_port]).await;
    restate.register(balancer).await;
    let client = restate.client();
    let ids: Vec<String> = (0..RUNS).map(|n| format!("scale-{n}")).collect();
    for id in &ids {
        client.start(id, &question()).await.unwrap();
    }
    let mut calls = Vec::new();
    for id in &ids {
        calls.push(waiting_for_an_answer(&client, id).await);
    }
    // Every run has had its tallies. `tally` is idempotent: a step whose
    // result Restate had not yet stored when it restarted an attempt (a
    // cluster moving a partition's leader does) may run again, as Restate's
    // `run` promises; that is rare, and counted here.
    let tallied = counted(&counts, "tally");
    assert!(
        (2 * RUNS..=2 * RUNS + RUNS / 5).contains(&tallied),
        "{tallied} tallies for {RUNS} runs of two"
    );
    for (n, (id, call_id)) in ids.iter().zip(&calls).enumerate() {
        if n == RUNS / 2 {
            first.kill().await;
            // `kill` consumed it; the rest go to the survivor.
            break;
        }
        client
            .answer(id, call_id, ToolOutput::text("yes"))
            .await
            .unwrap();
    }
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };
    for (id, call_id) in ids.iter().zip(&calls).skip(RUNS / 2) {
        client
            .answer(id, call_id, ToolOutput::text("yes"))
            .await
            .unwrap();
    }
    for id in &ids {
        let outcome = client.outcome(id).await.unwrap();
        assert_eq!(
            outcome.text(),
            Some("done: step 0 counted, step 1 counted, yes"),
            "{id}"
        );
    }
    // No tally stored before the crash ran again after it.
    assert_eq!(counted(&counts, "tally"), tallied);
    // Each run's last turn was asked at least once; only a turn in flight
    // on the killed process is asked again.
    let model = counted(&counts, "model");
    assert!((4 * RUNS..=4 * RUNS + RUNS / 2).contains(&model), "{model}");
}

/// Two calls in one turn, a tally and a question to a person: the steps go
/// one at a time, in the turn's order, so the run played back after its
/// service died meets its journal as written, and the tally ran once. The
/// run id has a `/`, which the client sends as part of the id.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_turn_of_two_calls_is_played_back_in_order_after_a_crash() {
    two_calls_played_back_on(false).await;
}

/// The same on a three-node cluster that loses a node with the service.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_a_turn_of_two_calls_is_played_back_in_order() {
    two_calls_played_back_on(true).await;
}

async fn two_calls_played_back_on(cluster: bool) {
    let tag = if cluster { "paired-cluster" } else { "paired" };
    let mut restate = Restate::on(cluster, tag).await;
    let counts = Scratch::new(&format!("{tag}-counts"));
    let port = free_port();
    let service = Service::start_with(port, &counts, 600_000, Some("paired")).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("team/7", &question()).await.unwrap();
    let call_id = waiting_for_an_answer(&client, "team/7").await;
    assert_eq!(call_id, "q");
    assert_eq!(counted(&counts, "tally"), 1);
    service.kill().await;
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };

    let _again = Service::start_with(port, &counts, 600_000, Some("paired")).await;
    client
        .answer("team/7", "q", ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("team/7").await.unwrap();
    assert_eq!(outcome.text(), Some("done: step 0 counted, yes"));
    assert_eq!(
        (counted(&counts, "model"), counted(&counts, "tally")),
        (2, 1)
    );
}

/// An answer or approval is taken only by the call that waits for it:
/// one sent before its run exists, or before the run reaches the call, is
/// refused (404) with a message naming what the run waits for, and cannot
/// approve that call later; a second answer is refused too.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn an_answer_for_a_call_that_does_not_wait_is_refused() {
    let restate = Restate::start("early").await;
    let counts = Scratch::new("early-counts");
    let port = free_port();
    let _service = Service::start_with(port, &counts, 600_000, Some("approve")).await;
    restate.register(port).await;
    let client = restate.client();

    // Before the run exists: refused, and said why.
    let early = client.approve("run-6", "c0", true, None).await.unwrap_err();
    assert_eq!(early.status(), Some(404), "{early}");
    assert!(
        early.to_string().contains("has no call `c0` waiting"),
        "{early}"
    );
    // Sent to be delivered later: kept by Restate, refused on delivery.
    let sent = client
        .approve_later("run-6", "c0", true, None)
        .await
        .unwrap();
    let refused = client.delivered(&sent).await.unwrap_err();
    assert_eq!(refused.status(), Some(404), "{refused}");

    client.start("run-6", &question()).await.unwrap();
    let first = waiting_for(&client, "run-6", "approval").await;
    assert_eq!(first, "c0");
    // The early approvals did not approve it: it still waits, nothing ran.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = client.status("run-6").await.unwrap();
    assert_eq!(status.state, "waiting");
    assert_eq!(counted(&counts, "tally"), 0);
    // An answer is not an approval.
    let wrong = client
        .answer("run-6", "c0", ToolOutput::text("yes"))
        .await
        .unwrap_err();
    assert_eq!(wrong.status(), Some(409), "{wrong}");
    // The person who sees it approves it; a second approval is refused.
    client.approve("run-6", "c0", true, None).await.unwrap();
    let twice = client.approve("run-6", "c0", true, None).await;
    assert!(
        matches!(
            twice.as_ref().map_err(DurableClientError::status),
            Err(Some(404 | 409))
        ),
        "{twice:?}"
    );
    let second = waiting_for(&client, "run-6", "approval").await;
    assert_eq!(second, "c1");
    assert_eq!(counted(&counts, "tally"), 1);
    // A call id the run never made.
    let unknown = client
        .approve("run-6", "nope", true, None)
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("`c1` (approval)"), "{unknown}");
}

/// Cancelled while a tool runs, the run ends cancelled, the tool runs to
/// its end, and the transcript has its result: the attempt that saw it
/// end journals it in an entry of its own.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_cancellation_while_a_tool_runs_keeps_what_the_tool_did() {
    let restate = Restate::start("cancel-running").await;
    let counts = Scratch::new("cancel-running-counts");
    let port = free_port();
    let _service = Service::start_with(port, &counts, 600_000, Some("slow")).await;
    restate.register(port).await;
    let client = restate.client();
    let invocation = client.start("run-7", &question()).await.unwrap();
    until("the slow tool to start", || async {
        (counted(&counts, "work") == 1).then_some(())
    })
    .await;
    client.cancel(&invocation).await.unwrap();
    let outcome = client.outcome("run-7").await.unwrap();
    let DurableOutcome::Cancelled { transcript, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(counted(&counts, "work_done"), 1);
    let Some(Message::ToolResult(last)) = transcript.last() else {
        panic!("{transcript:?}");
    };
    assert_eq!(last.content, "step 0 worked", "{last:?}");
    assert!(!last.is_error);
}

/// A tool not marked idempotent that was running when its service died is
/// not run again unasked: the run waits with its outcome unknown, until a
/// person says what it did; asked to run it again, it runs with the same
/// idempotency key (the run's id and the call's).
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_call_cut_by_a_crash_waits_for_a_person_to_say_what_it_did() {
    call_cut_by_a_crash_on(false).await;
}

/// The same on a three-node cluster: a call cut by its service's crash, a node dying with it.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_a_call_cut_by_a_crash_waits_for_a_person() {
    call_cut_by_a_crash_on(true).await;
}

async fn call_cut_by_a_crash_on(cluster: bool) {
    let tag = if cluster {
        "unknown-cluster"
    } else {
        "unknown"
    };
    let mut restate = Restate::on(cluster, tag).await;
    let counts = Scratch::new(&format!("{tag}-counts"));
    let port = free_port();
    let service = Service::start_with(port, &counts, 600_000, Some("slow")).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-8", &question()).await.unwrap();
    until("the slow tool to start", || async {
        (counted(&counts, "work") == 1).then_some(())
    })
    .await;
    service.kill().await;
    let client = if cluster {
        restate.kill_a_node().await;
        restate.client()
    } else {
        client
    };
    let _again = Service::start_with(port, &counts, 600_000, Some("slow")).await;
    let call_id = waiting_for(&client, "run-8", "outcome").await;
    // Not run again while nobody said.
    assert_eq!(counted(&counts, "work"), 1);
    client
        .resolve("run-8", &call_id, Resolution::RunAgain)
        .await
        .unwrap();
    let outcome = client.outcome("run-8").await.unwrap();
    assert_eq!(outcome.text(), Some("done: step 0 worked"));
    let keys = std::fs::read_to_string(counts.join("work")).unwrap();
    assert_eq!(keys.lines().collect::<Vec<_>>(), ["run-8/c0", "run-8/c0"]);
}

/// An output over a durable step's limit is the call's error, which the
/// model reads, and the run goes on; it never wedges the run.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn an_output_over_the_step_limit_is_refused_and_the_run_goes_on() {
    let restate = Restate::start("big").await;
    let counts = Scratch::new("big-counts");
    let port = free_port();
    let _service = Service::start_with(port, &counts, 600_000, Some("big")).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-9", &question()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(60), client.outcome("run-9"))
        .await
        .expect("the run ends")
        .unwrap();
    let text = outcome.text().unwrap();
    assert!(text.contains("more than a durable step keeps"), "{text}");
    assert_eq!(client.status("run-9").await.unwrap().state, "completed");
}

/// The state a run keeps grows with its steps, not with their square: a
/// run of 200 steps keeps at most a little over twice what a run of 100
/// keeps (the whole status rewritten at each step kept 4 times as much).
/// Its status holds each step once, and its transcript as in process,
/// read from the journal: the state holds little of it.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn the_journal_grows_linearly_with_the_steps() {
    let restate = Restate::start("long").await;
    let counts = Scratch::new("long-counts");
    let port = free_port();
    let _service = Service::start_with(port, &counts, 600_000, Some("long")).await;
    restate.register(port).await;
    let client = restate.client();
    let steps = |n: usize| vec![Message::user(format!("count {n}"))];
    client.start("short", &steps(100)).await.unwrap();
    client.outcome("short").await.unwrap();
    let short_bytes = restate.server.journal_bytes("DurableAgent", "short").await;
    client.start("long", &steps(200)).await.unwrap();
    let outcome = client.outcome("long").await.unwrap();
    let long_bytes = restate.server.journal_bytes("DurableAgent", "long").await;
    assert!(short_bytes > 0, "no journal of the short run");
    let ratio = long_bytes as f64 / short_bytes as f64;
    assert!(
        (1.8..2.4).contains(&ratio),
        "100 steps: {short_bytes} bytes, 200 steps: {long_bytes} bytes ({ratio:.2})"
    );
    let status = client.status("long").await.unwrap();
    assert_eq!(status.steps, 401);
    assert_eq!(status.transcript, outcome.transcript());
    // The transcript is the journal's: the state holds little of it.
    let state = restate
        .server
        .query("SELECT SUM(value_length) AS bytes FROM state WHERE service_name = 'DurableAgent' AND service_key = 'long'")
        .await;
    let state_bytes = state["rows"][0]["bytes"].as_u64().unwrap();
    let transcript_bytes = serde_json::to_vec(&status.transcript).unwrap().len() as u64;
    assert!(
        state_bytes * 4 < transcript_bytes,
        "state {state_bytes} bytes, transcript {transcript_bytes} bytes"
    );
    let in_process = agent::agent(Duration::from_secs(600), agent::Mode::Long)
        .invoke(steps(200))
        .await;
    assert_eq!(status.transcript, in_process.transcript());
}

/// A run whose invocation was killed (through Restate's admin API) never
/// writes its end: its status says `killed` rather than `waiting`
/// forever. A run id nobody started is no run at all.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_killed_run_says_killed_and_an_unknown_one_is_not_found() {
    let restate = Restate::start("killed").await;
    let counts = Scratch::new("killed-counts");
    let port = free_port();
    let _service = Service::start(port, &counts, 600_000).await;
    restate.register(port).await;
    let client = restate.client();
    let invocation = client.start("run-10", &question()).await.unwrap();
    waiting_for_an_answer(&client, "run-10").await;
    let killed = reqwest::Client::new()
        .patch(format!("{}/invocations/{invocation}/kill", restate.admin))
        .send()
        .await
        .unwrap();
    assert!(killed.status().is_success(), "{killed:?}");
    until("the status to say killed", || async {
        (client.status("run-10").await.ok()?.state == "killed").then_some(())
    })
    .await;
    let unknown = client.status("never-started").await.unwrap_err();
    assert!(
        matches!(unknown, DurableClientError::NoSuchRun(ref id) if id == "never-started"),
        "{unknown}"
    );
}

/// An answer over the run's output limit (below a durable step's) is
/// refused to its sender (413), as one over the step's limit is: taken, the
/// model would read that the output is over the limit, and the call could
/// not be answered again. A fitting answer is then taken.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn an_answer_over_the_output_limit_is_refused_to_its_sender() {
    let restate = Restate::start("answer-limit").await;
    let counts = Scratch::new("answer-limit-counts");
    let port = free_port();
    let _service = Service::start_limited(port, &counts, 600_000, None, Some(1024)).await;
    restate.register(port).await;
    let client = restate.client();
    client.start("run-12", &question()).await.unwrap();
    let call_id = waiting_for_an_answer(&client, "run-12").await;
    let refused = client
        .answer("run-12", &call_id, ToolOutput::text("y".repeat(4096)))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(413), "{refused}");
    assert!(refused.to_string().contains("1024"), "{refused}");
    client
        .answer("run-12", &call_id, ToolOutput::text("yes"))
        .await
        .unwrap();
    let outcome = client.outcome("run-12").await.unwrap();
    assert_eq!(
        outcome.text(),
        Some("done: step 0 counted, step 1 counted, yes")
    );
}

/// A run whose refunds wait for approvals `depth` agents down, two at
/// once: each approval waits by its path, is refused before its call
/// waits and a second time, survives the service's death, and the refund
/// runs once; every nested model turn and call is an entry of its own.
async fn approvals_at_depth(depth: usize, kill: bool) {
    approvals_at_depth_on(depth, kill, false).await;
}

async fn approvals_at_depth_on(depth: usize, kill: bool, cluster: bool) {
    let name = format!("depth-{depth}{}", if cluster { "-cluster" } else { "" });
    let mut restate = Restate::on(cluster, &name).await;
    let counts = Scratch::new(&format!("{name}-counts"));
    let port = free_port();
    let service = Service::start_with(port, &counts, 600_000, Some("nested")).await;
    restate.register(port).await;
    let mut client = restate.client();
    let run_id = format!("tree-{depth}");
    client
        .start(&run_id, &[Message::user(format!("depth {depth}"))])
        .await
        .unwrap();
    let above = [
        "front#c{n}/desk#f1/billing#d1/",
        "desk#c{n}/billing#d1/",
        "billing#c{n}/",
    ];
    let path = |n: usize| {
        format!(
            "{}refund#r1",
            above[3 - depth].replace("{n}", &n.to_string())
        )
    };
    let first = waiting_for(&client, &run_id, "approval").await;
    assert_eq!(first, path(1));
    // The second call has not reached its approval: an answer is refused.
    let early = client
        .approve(&run_id, &path(2), true, None)
        .await
        .unwrap_err();
    assert_eq!(early.status(), Some(404), "{early}");
    let mut service = Some(service);
    if kill {
        service.take().unwrap().kill().await;
        if cluster {
            restate.kill_a_node().await;
            client = restate.client();
        }
        service = Some(Service::start_with(port, &counts, 600_000, Some("nested")).await);
        assert_eq!(waiting_for(&client, &run_id, "approval").await, path(1));
    }
    client.approve(&run_id, &path(1), true, None).await.unwrap();
    let again = client
        .approve(&run_id, &path(1), true, None)
        .await
        .unwrap_err();
    assert!(matches!(again.status(), Some(404 | 409)), "{again}");
    until("the second approval to wait", || async {
        let status = client.status(&run_id).await.ok()?;
        let pending = status.pending.first()?;
        (pending.call.call_id == path(2)).then_some(())
    })
    .await;
    client
        .approve(&run_id, &path(2), false, Some("not this one"))
        .await
        .unwrap();
    let outcome = client.outcome(&run_id).await.unwrap();
    let text = outcome.text().expect("the run completes").to_owned();
    assert!(text.contains("refunded 7"), "{text}");
    assert!(text.contains("not this one"), "{text}");
    // Refunded once, with the key of its place in the tree.
    let keys = std::fs::read_to_string(counts.join("refund")).unwrap();
    assert_eq!(
        keys.lines().collect::<Vec<_>>(),
        [format!("{run_id}/{}", path(1).replace("refund#r1", "r1"))]
    );
    // The nested steps are entries of their own, named by their paths.
    let entries = restate
        .server
        .query(&format!(
            "SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_key = '{run_id}' AND i.target_handler_name = 'run' AND j.name LIKE '%model turn%'"
        ))
        .await;
    let names: Vec<&str> = entries["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["name"].as_str())
        .collect();
    assert!(
        names.contains(&format!("{}model turn 0", path(1).trim_end_matches("refund#r1")).as_str()),
        "{names:?}"
    );
    drop(service);
}

#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn nested_approvals_one_deep_are_answered_by_path() {
    approvals_at_depth(1, false).await;
}

#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn nested_approvals_two_deep_survive_the_service_dying_while_one_waits() {
    approvals_at_depth(2, true).await;
}

#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn nested_approvals_three_deep_are_answered_by_path() {
    approvals_at_depth(3, false).await;
}

#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn on_a_cluster_a_depth_2_approval_survives_its_service_and_a_node_dying() {
    approvals_at_depth_on(2, true, true).await;
}
