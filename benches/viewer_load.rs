//! How long the run viewer takes to show a run of 10 000 steps, in
//! headless Chromium: opened in the page (fetched, read, drawn) against
//! its text fetched alone, paired in rounds.
//!
//! Run: `cargo bench --bench viewer_load --features ui [-- ROUNDS]` (20
//! rounds by default) with Node's packages and Chromium as `.ci/test-all`
//! installs them (`BEHEST_UI_PACKAGES`, `BEHEST_CHROMIUM`); without them
//! it says "skipped". Run without `--bench` (as `cargo test --benches`
//! does), it makes a few rounds.

#[path = "../tests/support/browser.rs"]
#[allow(dead_code)]
mod browser;
#[path = "../tests/support/run_logs.rs"]
mod run_logs;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = if args.iter().any(|arg| arg == "--bench") {
        args.iter()
            .find_map(|arg| arg.parse::<usize>().ok())
            .unwrap_or(20)
            .max(1)
    } else {
        2
    };
    let found = browser::packages().and_then(|(node, dir)| Ok((node, dir, browser::chromium()?)));
    let (node, packages, chromium) = match found {
        Ok(found) => found,
        Err(skipped) => return println!("{skipped}"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-bench");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        run_logs::log_steps(10_000, &dir.join("steps_10000.jsonl")).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let app = behest::ui::RunViewer::new(&dir).router();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let out = browser::run_script(
            &node,
            &packages,
            "viewer_load.mjs",
            &[&url, chromium.to_str().unwrap(), "steps_10000.jsonl", &rounds.to_string()],
        )
        .await;
        let read = |key: &str| -> Vec<f64> {
            out[key].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
        };
        let (floors, shown) = (read("floors"), read("shown"));
        let ratios: Vec<f64> = shown.iter().zip(&floors).map(|(s, f)| s / f).collect();
        println!(
            "a run of 10 000 steps ({:.1} MiB): shown in {:.0} ms (median of {rounds}), its text fetched alone in {:.0} ms: {:.2}x",
            out["bytes"].as_f64().unwrap() / (1024.0 * 1024.0),
            median(shown),
            median(floors),
            median(ratios),
        );
    });
}
