//! Serving MCP over streamable HTTP, the way `axum::serve` serves a
//! router: [`serve`] a server on a listener, with the endpoint's options
//! and, if wanted, a graceful shutdown, then await it.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::http::router_until;
use super::options::HttpOptions;
use super::{McpServeError, McpServer};
use crate::runtime::ToolRuntime;

/// Serves `server` at `/mcp` on `listener` (port 0 for any free one: read
/// it from the listener first), guarded by the endpoint's options
/// ([`Serve::options`], the defaults otherwise), until the process ends or,
/// with [`Serve::with_graceful_shutdown`], until the signal completes.
/// Await it. Bind `127.0.0.1` unless other machines must reach it, and then
/// list the names they use in [`allowed_hosts`](HttpOptions::allowed_hosts).
///
/// ```no_run
/// use behest::mcp::{http, McpServer};
/// use behest::{ToolRegistry, ToolRuntime};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::new(ToolRuntime::new(ToolRegistry::new()))?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// # drop(stop);
/// http::serve(listener, server)
///     .options(&http::HttpOptions::default())
///     .with_graceful_shutdown(async move {
///         let _ = stopped.await;
///     })
///     .await?;
/// # Ok(())
/// # }
/// ```
pub fn serve(listener: tokio::net::TcpListener, server: McpServer) -> Serve {
    Serve {
        listener,
        server,
        options: HttpOptions::default(),
        shutdown: None,
    }
}

/// A server being set up to serve ([`serve`]): await it to serve.
#[must_use = "a Serve does nothing until it is awaited"]
pub struct Serve {
    listener: tokio::net::TcpListener,
    server: McpServer,
    options: HttpOptions,
    shutdown: Option<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("options", &self.options)
            .field("graceful_shutdown", &self.shutdown.is_some())
            .finish_non_exhaustive()
    }
}

impl Serve {
    /// Guarded by `options`: tokens, sessions, limits, CORS, OAuth
    /// metadata.
    pub fn options(mut self, options: &HttpOptions) -> Self {
        self.options = options.clone();
        self
    }

    /// Until `signal` completes. Then no connection is taken, every session
    /// ends, and calls still running are cancelled (their tools see their
    /// tokens); the serving ends once the connections have closed, or 10 s
    /// later with those left cut.
    pub fn with_graceful_shutdown(
        mut self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    async fn run(self) -> Result<(), McpServeError> {
        let shutdown = self
            .shutdown
            .unwrap_or_else(|| Box::pin(std::future::pending()));
        accept(self.server, self.listener, &self.options, shutdown).await
    }
}

impl IntoFuture for Serve {
    type Output = Result<(), McpServeError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// Takes connections on `listener` and serves `server` on each until
/// `shutdown` completes, then drains them.
async fn accept(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: BoxFuture<'static, ()>,
) -> Result<(), McpServeError> {
    // Open sessions' streams would hold the graceful shutdown for ever:
    // they end with it.
    let stop = CancellationToken::new();
    let app = router_until(server, "/mcp", options, stop.clone());
    let connections = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = connection_builder(options);
    let mut tasks = tokio::task::JoinSet::new();
    let mut shutdown = shutdown;
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            // Connections that ended are reaped as they end.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // One connection's trouble: the next is taken at once.
                Err(error) if matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) => continue,
                Err(error) => {
                    // Out of file descriptors, say: the listener stays
                    // good; a pause keeps a lasting shortage from spinning.
                    tracing::warn!("accepting an MCP connection failed: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::debug!(%remote, "an MCP connection past max_connections was closed");
            continue;
        };
        let connection = builder.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(app.clone()),
        );
        let connection = graceful.watch(connection);
        tasks.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%remote, "an MCP connection ended: {error}");
            }
            drop(permit);
        });
    }
    // New connections are refused, not left in the backlog.
    drop(listener);
    stop.cancel();
    // A client that stops reading would hold its connection's last write
    // for ever: the drain is bounded, then what is left is cut.
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tasks.abort_all();
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// How long a graceful shutdown waits for connections to end before it
/// cuts them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How each connection is served: HTTP/1.1, its header timer started as
/// the connection opens (so one that sends nothing is closed too) and again
/// after each response (so an idle one is). HTTP/2 would first read the
/// connection's opening bytes with no timeout at all.
fn connection_builder(options: &HttpOptions) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    builder
}

async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, McpServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| McpServeError::new(format!("cannot listen on {addr}: {error}")))
}

/// Serves `runtime`'s tools at `http://{addr}/mcp` until the process ends,
/// guarded by `options`.
#[deprecated(note = "use `serve(listener, McpServer::new(runtime)?).options(options)`")]
pub async fn serve_http(
    runtime: ToolRuntime,
    addr: SocketAddr,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    let server = McpServer::new(runtime)?;
    serve(listen(addr).await?, server).options(options).await
}

/// `serve_http` on `127.0.0.1:{port}`: reachable from this machine only.
#[deprecated(note = "use `serve` on a listener bound to 127.0.0.1")]
pub async fn serve_http_local(
    runtime: ToolRuntime,
    port: u16,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    let server = McpServer::new(runtime)?;
    let listener = listen(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    serve(listener, server).options(options).await
}

/// Serves `runtime`'s tools at `/mcp` on `listener` until `shutdown`
/// completes.
#[deprecated(
    note = "use `serve(listener, McpServer::new(runtime)?).with_graceful_shutdown(shutdown)`"
)]
pub async fn serve_http_until(
    runtime: ToolRuntime,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    let server = McpServer::new(runtime)?;
    serve(listener, server)
        .options(options)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves `server` at `http://{addr}/mcp` until the process ends.
#[deprecated(note = "use `serve(listener, server).options(options)`")]
pub async fn serve_server(
    server: McpServer,
    addr: SocketAddr,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    serve(listen(addr).await?, server).options(options).await
}

/// Serves `server` at `/mcp` on `listener` until `shutdown` completes.
#[deprecated(
    note = "use `serve(listener, server).options(options).with_graceful_shutdown(shutdown)`"
)]
pub async fn serve_server_until(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    serve(listener, server)
        .options(options)
        .with_graceful_shutdown(shutdown)
        .await
}
