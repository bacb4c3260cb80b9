//! The process's tracing subscriber, for the tests that read what was
//! traced.
//!
//! A test's capture layer joins the process's subscriber, once, rather than
//! a scoped one: tracing caches whether a callsite is wanted, and a test on
//! another thread that met it first, with no subscriber, would leave it
//! cached as unwanted. The subscriber is set once per test binary and hands
//! everything to every layer that joined it, so the modules of one binary
//! may each have their own. Each layer sees every test's spans; each test
//! reads its own by their names or ids.

use std::sync::{Arc, OnceLock, RwLock};

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

type Joined = Arc<dyn Layer<Registry> + Send + Sync>;

/// The layers that joined the process's subscriber.
static LAYERS: RwLock<Vec<Joined>> = RwLock::new(Vec::new());

/// The layer in `cell`, made by `make` and joined to the process's
/// subscriber (set the first time any layer joins) the first time.
pub fn installed<L>(cell: &'static OnceLock<L>, make: impl FnOnce() -> L) -> L
where
    L: Layer<Registry> + Clone + Send + Sync + 'static,
{
    static SET: OnceLock<()> = OnceLock::new();
    cell.get_or_init(|| {
        SET.get_or_init(|| {
            tracing::subscriber::set_global_default(Registry::default().with(Fanout))
                .expect("no other code sets the global subscriber");
        });
        let layer = make();
        LAYERS
            .write()
            .unwrap()
            .push(Arc::new(layer.clone()) as Joined);
        // Callsites seen before this layer joined keep their interest:
        // `Fanout` wants every one.
        tracing::callsite::rebuild_interest_cache();
        layer
    })
    .clone()
}

/// Hands every span and event to each joined layer.
struct Fanout;

impl Fanout {
    fn each(visit: impl Fn(&Joined)) {
        for layer in LAYERS.read().unwrap().iter() {
            visit(layer);
        }
    }
}

impl Layer<Registry> for Fanout {
    fn register_callsite(
        &self,
        _metadata: &'static Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_new_span(attrs, id, ctx.clone()));
    }

    fn on_record(&self, span: &Id, values: &Record<'_>, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_record(span, values, ctx.clone()));
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_follows_from(span, follows, ctx.clone()));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_event(event, ctx.clone()));
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_enter(id, ctx.clone()));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_exit(id, ctx.clone()));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, Registry>) {
        Self::each(|layer| layer.on_close(id.clone(), ctx.clone()));
    }
}
