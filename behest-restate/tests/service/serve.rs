//! The durable-run tests' service: `behest-restate-test-service PORT
//! [EXTERNAL_DEADLINE_MS]` serves the test agent as Restate's
//! `DurableAgent` on 127.0.0.1:PORT.

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
    behest_restate::serve(agent::agent(deadline), ([127, 0, 0, 1], port).into()).await;
}
