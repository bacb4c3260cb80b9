//! The durable-run tests' service: `behest-restate-test-service PORT
//! EXTERNAL_DEADLINE_MS [MODE]` serves the test agent as Restate's
//! `DurableAgent` on 127.0.0.1:PORT, in MODE (`agent::Mode::parse`).

mod agent;

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args
        .next()
        .and_then(|port| port.parse().ok())
        .expect("a port");
    let deadline = args
        .next()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(600), Duration::from_millis);
    let mode = args.next();
    let agent = agent::agent(deadline, agent::Mode::parse(mode.as_deref()));
    if let Err(error) = behest_restate::serve(agent, ([127, 0, 0, 1], port).into()).await {
        eprintln!("the test service cannot serve on port {port}: {error}");
        std::process::exit(1);
    }
}
