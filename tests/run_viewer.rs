//! The run viewer in headless Chromium: the view example's demo runs (one
//! followed while it goes on; one with a nested agent, a refused call, a
//! fallback and a guardrail's stop), and files it cannot fully read: a
//! log cut short, a foreign file, binary bytes, a run of 10 000 steps and
//! a 10 MiB tool answer. `.ci/test-all` installs Node's packages and
//! Chromium; without them the test says "skipped".
#![cfg(feature = "ui")]

#[path = "support/browser.rs"]
mod browser;
#[path = "support/run_logs.rs"]
mod run_logs;

use std::path::Path;

use behest::prelude::*;
use behest::run::ScriptedTurn;
use run_logs::{log_steps, logged};
use serde_json::{json, Value};

/// Read a very long document.
#[tool(read_only)]
fn long_read() -> String {
    "0123456789abcdef".repeat(10 * 1024 * 1024 / 16)
}

/// Writes the files the viewer cannot fully read beside the demo's.
async fn bad_files(dir: &Path) {
    // A run of 10 000 steps, each a call.
    log_steps(10_000, &dir.join("steps_10000.jsonl")).await;

    // A tool's answer of 10 MiB.
    let agent = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("r1", "long_read", json!({}))]),
            ScriptedTurn::text("read it"),
        ]),
        // The runtime's limit on an answer (1 MiB by default) let past.
        ToolRuntime::builder(ToolRegistry::new().with(LongRead).unwrap())
            .max_output_bytes(16 * 1024 * 1024)
            .build(),
    );
    logged(agent, &dir.join("answer_10mib.jsonl")).await;

    // A log cut off in the middle of a line.
    let whole = std::fs::read(dir.join("support.jsonl")).unwrap();
    std::fs::write(dir.join("truncated.jsonl"), &whole[..whole.len() - 40]).unwrap();
    // A file of another kind, and bytes that are no text at all.
    std::fs::write(
        dir.join("foreign.json"),
        r#"{"name": "not-a-run", "version": "1.0.0", "dependencies": {}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("binary.jsonl"),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01\n\x02\x03",
    )
    .unwrap();
}

fn texts(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            item.as_str()
                .map_or_else(|| item.to_string(), str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_shows_runs_and_says_what_it_cannot_read() {
    let found = browser::packages().and_then(|(node, dir)| Ok((node, dir, browser::chromium()?)));
    let (node, packages, chromium) = match found {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    let Some(binary) = browser::example("view") else {
        return eprintln!("skipped: the view example is not built (cargo test builds it)");
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("viewer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The demo writes its runs, serves them, and goes on with the live one.
    let (_child, url) = browser::start_example(&binary, &["--demo", dir.to_str().unwrap()]).await;
    bad_files(&dir).await;
    let shots = browser::screenshots();
    let out = browser::run_script(
        &node,
        &packages,
        "viewer_page.mjs",
        &[
            &format!("{url}/"),
            chromium.to_str().unwrap(),
            shots.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out["error"], Value::Null, "{out:#}");
    let faults = browser::page_faults(&out, &url);
    assert!(faults.is_empty(), "{faults:#?}");
    let mut listed = texts(&out["list"]);
    listed.sort();
    assert_eq!(
        listed,
        [
            "answer_10mib.jsonl",
            "binary.jsonl",
            "foreign.json",
            "live.jsonl",
            "refund.jsonl",
            "steps_10000.jsonl",
            "support.jsonl",
            "truncated.jsonl"
        ]
    );
    let files = &out["files"];

    // Followed while it went on, to its end.
    let live = &files["live"];
    assert_eq!(live["last"]["status"], json!(["completed"]), "{live:#}");
    assert_eq!(live["last"]["turns"], 7);
    assert!(live["first"]["turns"].as_u64().unwrap() < 7, "{live:#}");

    // The rich run: each part shows.
    let support = &files["support"];
    assert_eq!(support["status"], json!(["failed"]));
    let error = texts(&support["error"]).concat();
    assert!(
        error.contains("transfer_limit") && error.contains("over the 1000 EUR limit"),
        "{error}"
    );
    let agents = texts(&support["agents"]);
    assert!(agents.contains(&"billing".to_owned()), "{agents:?}");
    let calls = support["calls"].as_array().unwrap();
    let call = |tool: &str| {
        calls
            .iter()
            .find(|call| call["tool"] == tool)
            .unwrap_or_else(|| panic!("no call of {tool} in {calls:#?}"))
    };
    assert_eq!(call("lookup_order")["state"], "error");
    assert!(call("lookup_order")["text"]
        .as_str()
        .unwrap()
        .contains("expected an integer"));
    assert_eq!(call("billing")["state"], "ok");
    assert!(call("billing")["text"]
        .as_str()
        .unwrap()
        .contains("agent billing"));
    assert_eq!(call("refund_policy")["state"], "ok");
    let stopped = support["guardrails"]
        .as_array()
        .unwrap()
        .iter()
        .find(|verdict| verdict["action"] == "stopped")
        .expect("the guardrail's stop shows");
    assert!(stopped["text"].as_str().unwrap().contains("transfer_limit"));
    let fallback = support["notices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|notice| notice["kind"] == "fallback")
        .expect("the fallback shows");
    let fallback = fallback["text"].as_str().unwrap();
    assert!(
        fallback.contains("gpt-4.1-mini failed") && fallback.contains("claude-haiku-4-5 asked"),
        "{fallback}"
    );
    let summary = texts(&support["summary"]).concat();
    assert!(summary.contains("2700 in / 120 out tokens"), "{summary}");
    assert!(summary.contains('$'), "the turns are priced: {summary}");
    assert!(support["bars"].as_u64().unwrap() >= 4);

    // The handoff in the tree, the approval given on the call.
    let refund = &files["refund"];
    assert!(
        refund["tree"]
            .as_str()
            .unwrap()
            .contains("handed to billing"),
        "{refund:#}"
    );
    assert_eq!(refund["approvals"], json!(["approved"]), "{refund:#}");
    assert!(refund["notices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|notice| notice["kind"] == "handoff"));

    // Cut short: said, and the rest shown.
    let truncated = &files["truncated"];
    assert!(
        texts(&truncated["problems"])
            .concat()
            .contains("is cut short"),
        "{truncated:#}"
    );
    assert_eq!(truncated["runs"], 1);
    // Foreign and binary: said, nothing made up.
    for name in ["foreign", "binary"] {
        let file = &files[name];
        assert!(
            texts(&file["problems"])
                .concat()
                .contains("not a behest run log"),
            "{file:#}"
        );
        assert_eq!(file["runs"], 0);
    }

    // 10 000 steps: shown a page at a time.
    let steps = &files["steps"];
    assert_eq!(steps["status"], json!(["completed"]));
    assert!(
        texts(&steps["summary"]).concat().contains("10001 turns"),
        "{steps:#}"
    );
    assert_eq!(steps["turns"], 200);
    assert_eq!(steps["afterMore"], 400);
    eprintln!(
        "10 000 steps: read and drawn in {} ms, {} ms from the click",
        steps["renderedMs"], steps["clickToShownMs"]
    );

    // A 10 MiB answer: clipped, the rest a click away.
    let huge = &files["huge"];
    assert_eq!(huge["status"], json!(["completed"]));
    assert!(
        texts(&huge["all"])
            .iter()
            .any(|button| button.contains("show all (10.0 MiB)")),
        "{:#}",
        huge["all"]
    );
    // And the page still works.
    assert!(out["files"]["again"].as_u64().unwrap() >= 4);
    for shot in [
        "viewer_support.png",
        "viewer_10000_steps.png",
        "viewer_10mib_answer.png",
    ] {
        let png = std::fs::read(shots.join(shot)).expect("the screenshot is kept");
        assert!(png.starts_with(b"\x89PNG"));
    }
}

/// A log that grows is read a piece at a time: whole at first, then only
/// the complete lines added since (a line still being written waits until
/// it is whole); a log replaced by a shorter one is read whole again. And
/// the viewer answers only at the loopback names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_log_is_read_a_piece_at_a_time() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("viewer-grow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("live.jsonl");
    let line = |n: u64| {
        format!(
            r#"{{"run_id":"r","sequence":{n},"at_ms":{n},"event":{{"type":"state","value":"awaiting_model"}}}}"#
        )
    };
    std::fs::write(
        &log,
        format!("{}\n{}\n{}", line(1), line(2), &line(3)[..20]),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = behest::ui::RunViewer::new(&dir).router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let get = |query: String| {
        let client = client.clone();
        async move {
            let response = client
                .get(format!("http://{address}/api/runs/live.jsonl{query}"))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let next = response
                .headers()
                .get("x-behest-next")
                .map(|next| next.to_str().unwrap().parse::<usize>().unwrap());
            (status, next, response.text().await.unwrap())
        }
    };
    let (status, next, whole) = get(String::new()).await;
    assert_eq!(status, 200);
    assert!(
        whole.ends_with(&line(3)[..20]),
        "the whole file, its last line as it is"
    );
    let next = next.unwrap();
    assert_eq!(next, line(1).len() + line(2).len() + 2);
    let (_, again, nothing) = get(format!("?from={next}")).await;
    assert_eq!((again, nothing.as_str()), (Some(next), ""));
    std::fs::write(&log, format!("{}\n{}\n{}\n", line(1), line(2), line(3))).unwrap();
    let (_, later, added) = get(format!("?from={next}")).await;
    assert_eq!(added.trim_end(), line(3));
    assert_eq!(later, Some(next + line(3).len() + 1));
    let (status, _, replaced) = get("?from=99999".to_owned()).await;
    assert_eq!(status, 409, "{replaced}");
    let foreign = client
        .get(format!("http://{address}/api/runs"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
}
