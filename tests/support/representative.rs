//! Representative `#[tool]`s covering the shapes schemas take: nested
//! structs, unit and data enums, `Option`, `Vec`, maps, renames, defaults,
//! docs, recursion, and no parameters. Each counts its calls.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use behest::{tool, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many times each tool function actually ran.
pub static CALLS: AtomicUsize = AtomicUsize::new(0);

fn ran() {
    CALLS.fetch_add(1, Ordering::SeqCst);
}

/// Where to go.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Destination {
    /// City name.
    pub city: String,
    /// ISO country code, if the city name is ambiguous.
    pub country: Option<String>,
}

/// How to travel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TravelMode {
    Car,
    Train,
    Plane,
}

/// A stop on the way.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Stop {
    pub city: String,
    /// Nights to stay.
    pub nights: u8,
}

/// The planned itinerary.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Itinerary {
    pub legs: usize,
    pub total_nights: u32,
}

/// Plan a trip to a destination.
///
/// Returns the number of legs and nights.
#[tool(read_only, idempotent)]
pub async fn plan_trip(
    /// Where to go.
    destination: Destination,
    /// Stops on the way, in order.
    stops: Vec<Stop>,
    mode: Option<TravelMode>,
    /// Budget in euros.
    #[arg(default = 1000)]
    budget: u32,
) -> Itinerary {
    ran();
    let _ = (destination, mode, budget);
    Itinerary {
        legs: stops.len() + 1,
        total_nights: stops.iter().map(|stop| u32::from(stop.nights)).sum(),
    }
}

/// Who receives a message.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recipient {
    /// An email address.
    Email { address: String },
    /// A phone number, with country code.
    Phone { number: String },
    /// Everyone in the team.
    Team,
}

/// Send a message.
#[tool(destructive, open_world, name = "send_message")]
pub fn send(
    to: Recipient,
    /// The text to send.
    #[arg(rename = "body")]
    text: String,
    /// Extra headers, by name.
    headers: BTreeMap<String, String>,
    #[arg(default)] urgent: bool,
) -> Result<String, String> {
    ran();
    let _ = (to, headers, urgent);
    if text.is_empty() {
        return Err("the body is empty".to_owned());
    }
    Ok(format!("sent {} characters", text.len()))
}

/// A node of a tree.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Node {
    pub name: String,
    pub children: Vec<Node>,
}

/// Count the nodes of a tree.
#[tool]
pub fn count_nodes(root: Node) -> usize {
    ran();
    fn count(node: &Node) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }
    count(&root)
}

/// Search the documentation.
///
/// # Arguments
///
/// * `query` - Words to look for.
/// * `limit` - At most this many results.
#[tool]
pub fn search_docs(
    query: String,
    limit: Option<u32>,
    #[arg(description = "Include archived pages.")] archived: Option<bool>,
) -> Vec<String> {
    ran();
    let _ = archived;
    vec![query; limit.unwrap_or(1).min(3) as usize]
}

/// The current time.
#[tool]
pub fn now() -> &'static str {
    ran();
    "12:00"
}

/// All representative tools.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(PlanTrip),
        Arc::new(Send),
        Arc::new(CountNodes),
        Arc::new(SearchDocs),
        Arc::new(Now),
    ]
}
