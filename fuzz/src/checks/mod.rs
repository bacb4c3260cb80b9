//! One module per fuzz target, each with `check(data: &[u8])`: it panics
//! when behest breaks a promise on that input (a panic of its own, a hang,
//! a call without exactly one result, two routes that disagree).

pub mod call_pipeline;
#[cfg(feature = "mcp")]
pub mod mcp_messages;
pub mod partial_json;
pub mod providers;
pub mod schemas;
#[cfg(feature = "models")]
pub mod sse;
pub mod stream_mutants;

/// A current-thread tokio runtime for this thread, made once.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}
