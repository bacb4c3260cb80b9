//! The tool, the inputs, the cases and the floors that `call_overhead`
//! and `call_ratios` measure, and the batch timer both use.

#![allow(dead_code)]

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use behest::{
    ExternalTool, Tool, ToolCall, ToolCallResult, ToolOutput, ToolRegistry, ToolResult,
    ToolRuntime, ToolSpec,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// Describe a count.
#[behest::tool]
pub async fn describe(count: i64, label: String, verbose: Option<bool>) -> String {
    let mut text = label;
    text.push_str(if verbose.unwrap_or(false) {
        ": many "
    } else {
        ": "
    });
    text.push_str(&count.to_string());
    text
}

/// The arguments as a plain `serde_derive` struct: what (b) reads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub count: i64,
    pub label: String,
    pub verbose: Option<bool>,
}

/// The same tool written by hand on `Value`: the runtime takes the checked
/// route (decode into a `Value`, validate, typed parse) for it.
pub struct DescribeByHand;

impl Tool for DescribeByHand {
    fn name(&self) -> &str {
        "describe"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("describe", "Describe a count.", schema())
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let args: Args = behest::arguments::parse(arguments)?;
        Ok(ToolOutput::text(
            describe(args.count, args.label, args.verbose).await,
        ))
    }
}

pub fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "count": {"type": "integer", "format": "int64"},
            "label": {"type": "string"},
            "verbose": {"type": ["boolean", "null"]}
        },
        "required": ["count", "label"],
        "additionalProperties": false
    })
}

pub const TEXT: &str = r#"{"count": 42, "label": "apples", "verbose": true}"#;

/// The arguments of (b50) and (c50): a 50 KB label.
pub fn long_text() -> String {
    let line = r#"A well-known, long-standing rule: \"measure twice\" - then cut.\n"#;
    let label = line.repeat(50_000 / line.len());
    format!(r#"{{"count": 42, "label": "{label}", "verbose": true}}"#)
}

pub fn runtime_with(tools: usize, tool: Arc<dyn Tool>) -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    for i in 0..tools - 1 {
        let name = format!("filler_{i}");
        registry
            .register(
                name.clone(),
                Arc::new(ExternalTool::new(name, "Filler.", schema())),
            )
            .unwrap();
    }
    registry.register_tool(tool).unwrap();
    ToolRuntime::new(registry)
}

/// How many calls one timed stretch makes.
pub const BATCH: usize = 1024;

/// The inputs of one case, kept from batch to batch: a fresh buffer for
/// every batch has its pages mapped in as it is first written. Inputs are
/// made before the timed part (a model's call arrives made); each output
/// is dropped inside it, right after its call, as a caller drops it.
pub struct Batches<I> {
    inputs: Vec<I>,
}

impl<I> Batches<I> {
    pub fn new() -> Self {
        Self {
            inputs: Vec::with_capacity(BATCH),
        }
    }

    /// Times `count` (at most [`BATCH`]) calls of `routine` on inputs made
    /// by `setup` beforehand, each output dropped as its call returns.
    pub fn time<O, F: Future<Output = O>>(
        &mut self,
        rt: &tokio::runtime::Runtime,
        count: usize,
        setup: &mut impl FnMut() -> I,
        routine: &mut impl FnMut(I) -> F,
    ) -> Duration {
        debug_assert!(count <= BATCH);
        self.inputs.extend((0..count).map(|_| setup()));
        let inputs = &mut self.inputs;
        let start = Instant::now();
        rt.block_on(async {
            for input in inputs.drain(..) {
                drop(black_box(routine(input).await));
            }
        });
        start.elapsed()
    }
}

/// (b), the floor of a call from JSON text: `serde_json::from_str` of the
/// model's text into the derived struct, and the call.
pub async fn from_str_floor(text: &str) -> String {
    let args: Args = serde_json::from_str(black_box(text)).unwrap();
    describe(args.count, args.label, args.verbose).await
}

/// `parts/value_floor`, the floor of a call from a parsed `Value`: a
/// compiled `jsonschema` check, `serde_json::from_value` and the call.
pub async fn value_floor(compiled: &jsonschema::Validator, value: Value) -> String {
    assert!(compiled.is_valid(black_box(&value)));
    let args: Args = serde_json::from_value(value).unwrap();
    describe(args.count, args.label, args.verbose).await
}

/// (c) and (d): one call through the runtime, which must succeed.
pub async fn through(runtime: &ToolRuntime, call: ToolCall) -> ToolCallResult {
    let result = runtime.call(black_box(call)).await;
    assert!(result.outcome.is_ok());
    result
}

/// Where an order goes: a nested struct argument.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Postal code, where there is one.
    pub postcode: Option<String>,
}

/// How soon: an enum argument.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Whenever.
    Low,
    /// The usual.
    Normal,
    /// Today.
    Urgent,
}

/// Place an order: the shape users write, mixed argument types, a nested
/// struct, an enum, an optional, two defaulted arguments and a list.
#[behest::tool]
#[allow(clippy::too_many_arguments)]
pub async fn place_order(
    /// Stock-keeping unit.
    sku: String,
    /// How many.
    quantity: u32,
    /// Price of one, in euros.
    unit_price: f64,
    /// Where to.
    address: Address,
    /// How soon.
    priority: Priority,
    /// A note for the courier.
    note: Option<String>,
    /// Wrap it as a gift.
    #[arg(default)]
    gift_wrap: bool,
    /// Copies of the invoice.
    #[arg(default = 1)]
    invoices: u8,
    /// Labels.
    tags: Vec<String>,
) -> String {
    order_summary(
        &sku,
        quantity,
        unit_price,
        &address,
        &priority,
        note.as_deref(),
        gift_wrap,
        invoices,
        &tags,
    )
}

#[allow(clippy::too_many_arguments)]
fn order_summary(
    sku: &str,
    quantity: u32,
    unit_price: f64,
    address: &Address,
    priority: &Priority,
    note: Option<&str>,
    gift_wrap: bool,
    invoices: u8,
    tags: &[String],
) -> String {
    let speed = match priority {
        Priority::Low => "low",
        Priority::Normal => "normal",
        Priority::Urgent => "urgent",
    };
    let mut text = format!(
        "{quantity} x {sku} at {unit_price:.2} to {}, {}",
        address.street, address.city
    );
    if let Some(postcode) = &address.postcode {
        text.push(' ');
        text.push_str(postcode);
    }
    text.push_str(&format!(
        " ({speed}, {invoices} invoices, gift {gift_wrap}, {} tags)",
        tags.len()
    ));
    if let Some(note) = note {
        text.push_str(": ");
        text.push_str(note);
    }
    text
}

/// The order's arguments as a plain `serde_derive` struct: what the
/// order's floors read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderArgs {
    pub sku: String,
    pub quantity: u32,
    pub unit_price: f64,
    pub address: Address,
    pub priority: Priority,
    pub note: Option<String>,
    #[serde(default)]
    pub gift_wrap: bool,
    #[serde(default = "one")]
    pub invoices: u8,
    pub tags: Vec<String>,
}

fn one() -> u8 {
    1
}

/// An order as a model writes it (the invoices left to their default).
pub const ORDER: &str = r#"{"sku": "A-1042", "quantity": 3, "unit_price": 19.99, "address": {"street": "1 Main Street", "city": "Springfield", "postcode": "12345"}, "priority": "urgent", "note": "leave at the door", "gift_wrap": true, "tags": ["books", "gift"]}"#;

/// The floor of an order from JSON text: `serde_json::from_str` into the
/// derived struct, and the call.
pub async fn order_from_str_floor(text: &str) -> String {
    let args: OrderArgs = serde_json::from_str(black_box(text)).unwrap();
    place_order_floor(args).await
}

/// The floor of an order from a parsed `Value`: a compiled `jsonschema`
/// check of the tool's own schema, `serde_json::from_value` and the call.
pub async fn order_value_floor(compiled: &jsonschema::Validator, value: Value) -> String {
    assert!(compiled.is_valid(black_box(&value)));
    let args: OrderArgs = serde_json::from_value(value).unwrap();
    place_order_floor(args).await
}

async fn place_order_floor(args: OrderArgs) -> String {
    place_order(
        args.sku,
        args.quantity,
        args.unit_price,
        args.address,
        args.priority,
        args.note,
        args.gift_wrap,
        args.invoices,
        args.tags,
    )
    .await
}
