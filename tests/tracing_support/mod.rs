//! The process's tracing subscriber, for the tests that read what was
//! traced.
//!
//! A test's capture layer becomes the process's subscriber, once per test
//! binary, rather than a scoped one: tracing caches whether a callsite is
//! wanted, and a test on another thread that met it first, with no
//! subscriber, would leave it cached as unwanted. The layer then sees every
//! test's spans; each test reads its own by their names or ids.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;

/// The layer in `cell`, made by `make` and installed as the process's
/// subscriber the first time.
pub fn installed<L>(cell: &'static OnceLock<L>, make: impl FnOnce() -> L) -> L
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Clone + Send + Sync + 'static,
{
    cell.get_or_init(|| {
        let layer = make();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer.clone()))
            .expect("no other test sets the global subscriber");
        layer
    })
    .clone()
}
