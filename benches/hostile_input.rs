//! The worst cases of hostile input, each beside an ordinary input of the
//! same kind, in one run (read the ratios):
//!
//! - `unknown_name/{short,1MiB}`: a call of a tool that does not exist, in
//!   a registry of 100 tools; the long name is not searched for close ones.
//! - `pattern/{plain,catastrophic}`: a 50 000-byte argument against
//!   `^a+$` and against `^(a+)+$` (plus a `!` that makes it fail).
//! - `backreference/10k`: `^(a+)+\1$` on 10 000 `a`s and a `!`, which
//!   needs the backtracking engine: bounded by its step limit.
//! - `register/{ordinary,too_deep}`: registering a 20-property schema, and
//!   refusing one nested 50 000 levels deep.
//!
//! Run: `cargo bench --bench hostile_input`.

use std::hint::black_box;

use behest::{ExternalTool, ToolCall, ToolRegistry, ToolRuntime};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

fn runtime_with(tools: impl IntoIterator<Item = ExternalTool>) -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register_tool(std::sync::Arc::new(tool)).unwrap();
    }
    ToolRuntime::new(registry)
}

fn probe(parameters: Value) -> ToolRuntime {
    runtime_with([ExternalTool::new("probe", "Probe.", parameters)])
}

fn call(runtime: &ToolRuntime, tokio: &tokio::runtime::Runtime, name: &str, arguments: &Value) {
    let call = ToolCall::new("c", name, arguments.clone());
    black_box(tokio.block_on(runtime.call(call)));
}

fn hostile(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let many = runtime_with(
        (0..100)
            .map(|i| ExternalTool::new(format!("tool_{i}"), "A tool.", json!({"type": "object"}))),
    );
    let short = "tool_1000".to_owned();
    let long = format!("tool_{}", "x".repeat(1024 * 1024));
    let empty = json!({});
    c.bench_function("unknown_name/short", |b| {
        b.iter(|| call(&many, &tokio, &short, &empty))
    });
    c.bench_function("unknown_name/1MiB", |b| {
        b.iter(|| call(&many, &tokio, &long, &empty))
    });

    let schema = |pattern: &str| json!({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}});
    let plain = probe(schema("^a+$"));
    let catastrophic = probe(schema("^(a+)+$"));
    let text = json!({ "s": format!("{}!", "a".repeat(50_000)) });
    c.bench_function("pattern/plain", |b| {
        b.iter(|| call(&plain, &tokio, "probe", &text))
    });
    c.bench_function("pattern/catastrophic", |b| {
        b.iter(|| call(&catastrophic, &tokio, "probe", &text))
    });
    let backreference = probe(schema("^(a+)+\\1$"));
    let shorter = json!({ "s": format!("{}!", "a".repeat(10_000)) });
    let mut group = c.benchmark_group("backreference");
    group.sample_size(10);
    group.bench_function("10k", |b| {
        b.iter(|| call(&backreference, &tokio, "probe", &shorter))
    });
    group.finish();

    let properties: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("p{i}"), json!({"type": "string", "maxLength": 100})))
        .collect();
    let ordinary = json!({"type": "object", "properties": properties});
    // Built without `json!`, which would copy the inner value recursively.
    let mut deep = json!({"type": "object"});
    for _ in 0..50_000 {
        let mut properties = serde_json::Map::new();
        properties.insert("a".to_owned(), deep);
        let mut level = serde_json::Map::new();
        level.insert("properties".to_owned(), Value::Object(properties));
        deep = Value::Object(level);
    }
    c.bench_function("register/ordinary", |b| {
        b.iter(|| {
            black_box(ToolRegistry::new().with(ExternalTool::new("t", "T.", ordinary.clone())))
        })
    });
    c.bench_function("register/too_deep", |b| {
        b.iter(|| black_box(behest::validation::ArgumentValidator::compile(&deep).is_err()))
    });
    // Dropping a deep `Value` recurses: keep it.
    std::mem::forget(deep);
}

criterion_group!(benches, hostile);
criterion_main!(benches);
