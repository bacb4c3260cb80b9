//! OAuth 2.1 for remote MCP servers, as the protocol's authorization
//! specification asks of a client: a server's 401 starts the flow
//! (protected-resource and authorization-server metadata discovery with
//! their fallbacks, client ID metadata documents, dynamic registration or a
//! pre-registered client, PKCE S256, the scopes the challenge or the
//! metadata name, RFC 9207 issuer checks), a 403 `insufficient_scope` asks
//! again for more, tokens are refreshed before they run out and kept in an
//! [`McpTokenStore`]. rmcp's `auth` module does the OAuth steps; this
//! module puts them in the client's HTTP transport, so that a connection
//! and every request authorize as they need to.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState,
    StoredCredentials,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

/// Where the OAuth credentials of one server are kept between runs: the
/// client's registration and its tokens, as one JSON document behest
/// writes and reads. Keep it where only the user can read it.
pub trait McpTokenStore: Send + Sync + 'static {
    /// The document saved last, if any.
    fn load(&self) -> BoxFuture<'_, Result<Option<String>, String>>;
    /// Keeps `document` in place of the one before.
    fn save(&self, document: String) -> BoxFuture<'_, Result<(), String>>;
    /// Forgets the document.
    fn clear(&self) -> BoxFuture<'_, Result<(), String>>;
}

/// Credentials kept in memory, for this process only (the default).
#[derive(Debug, Default)]
pub struct MemoryTokenStore(std::sync::Mutex<Option<String>>);

impl McpTokenStore for MemoryTokenStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move { Ok(crate::sync::lock(&self.0).clone()) })
    }

    fn save(&self, document: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            *crate::sync::lock(&self.0) = Some(document);
            Ok(())
        })
    }

    fn clear(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            *crate::sync::lock(&self.0) = None;
            Ok(())
        })
    }
}

/// Credentials kept in a file, readable by its owner only (mode 0600 on
/// Unix), written whole through a file beside it so that a crash leaves
/// the old one or the new one.
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store in the file at `path` (its folder must exist).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl McpTokenStore for FileTokenStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move {
            match tokio::fs::read_to_string(&self.path).await {
                Ok(document) => Ok(Some(document)),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(format!("reading {}: {error}", self.path.display())),
            }
        })
    }

    fn save(&self, document: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let path = self.path.clone();
            tokio::task::spawn_blocking(move || write_private(&path, &document))
                .await
                .map_err(|error| error.to_string())?
        })
    }

    fn clear(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            match tokio::fs::remove_file(&self.path).await {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(format!("removing {}: {error}", self.path.display())),
            }
        })
    }
}

/// Writes `document` to `path` through a new temporary file beside it
/// (created, never reused: a file or link left there is not followed),
/// owner-only.
fn write_private(path: &std::path::Path, document: &str) -> Result<(), String> {
    use std::io::Write;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        super::rounds::fresh_handle()
    ));
    let temporary = path.with_file_name(name);
    let said = |error: std::io::Error| format!("writing {}: {error}", path.display());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&temporary).map_err(said)?;
    let written = file
        .write_all(document.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(said)
}

/// What the user's side of an authorization gives back: the URL the
/// authorization server redirected to (with its `code`, `state` and, when
/// sent, `iss`), or why there is none.
type Authorize = Arc<dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// OAuth 2.1 settings for a remote MCP server: give them to
/// [`ConnectOptions::oauth`](super::ConnectOptions::oauth).
///
/// `authorize` is the user's side of the flow: it gets the authorization
/// URL to open in a browser and returns the URL the browser was sent back
/// to (at `redirect_uri`). A desktop or command-line client opens the
/// browser and listens on a loopback port; a web back end sends its user
/// and waits for its callback route.
///
/// ```no_run
/// use behest::mcp::{ConnectOptions, FileTokenStore, McpClient, McpOAuth};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let oauth = McpOAuth::new("http://127.0.0.1:8976/callback", |url: String| async move {
///     println!("open {url}");
///     // ... wait for the browser to come back to the redirect URI ...
///     Ok::<_, String>("http://127.0.0.1:8976/callback?code=...&state=...".to_owned())
/// })
/// .client_name("my-agent")
/// .store(FileTokenStore::new("mcp-tokens.json"));
/// let client =
///     McpClient::http_with("https://mcp.example.com/mcp", &ConnectOptions::default().oauth(oauth))
///         .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpOAuth {
    redirect_uri: String,
    authorize: Authorize,
    client_name: String,
    client_metadata_url: Option<String>,
    registered: Option<(String, Option<String>)>,
    scopes: Vec<String>,
    store: Arc<dyn McpTokenStore>,
    most_authorizations: u32,
    private_addresses: bool,
    authorize_within: std::time::Duration,
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field(
                "registered",
                &self.registered.as_ref().map(|(id, _)| id.as_str()),
            )
            .field("scopes", &self.scopes)
            .field("most_authorizations", &self.most_authorizations)
            .finish_non_exhaustive()
    }
}

impl McpOAuth {
    /// Authorizes with redirects to `redirect_uri`, the user's part done by
    /// `authorize`. The client registers itself (dynamic registration)
    /// as `behest` unless told otherwise; credentials are kept in memory.
    pub fn new<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        Self {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(move |url| Box::pin(authorize(url))),
            client_name: "behest".to_owned(),
            client_metadata_url: None,
            registered: None,
            scopes: Vec::new(),
            store: Arc::new(MemoryTokenStore::default()),
            most_authorizations: 3,
            private_addresses: false,
            authorize_within: std::time::Duration::from_secs(600),
        }
    }

    /// The name the client registers under (dynamic registration).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The HTTPS URL of the client's metadata document (a client ID
    /// metadata document, SEP-991): used as the client's id where the
    /// authorization server takes them, before dynamic registration.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// A client registered with the authorization server beforehand: its
    /// id, and its secret for a confidential client. It goes before every
    /// other way of naming the client.
    #[must_use]
    pub fn registered_client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.registered = Some((id.into(), secret));
        self
    }

    /// The scopes to ask for. Without, the client asks for those the
    /// server's challenge names, else those its metadata supports, else
    /// none, as the specification orders.
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the credentials are kept (in memory unless set).
    #[must_use]
    pub fn store(mut self, store: impl McpTokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// How many times one connection may send its user to authorize (3
    /// unless set): a server that keeps refusing (asking for a scope it is
    /// never given) then gets an error, not a loop.
    #[must_use]
    pub fn most_authorizations(mut self, most: u32) -> Self {
        self.most_authorizations = most.max(1);
        self
    }

    /// How long the user's part of an authorization may take (10 minutes
    /// unless set): the connection's requests wait for it, and past it
    /// the request that started it fails with a message that says so.
    #[must_use]
    pub fn authorize_within(mut self, limit: std::time::Duration) -> Self {
        self.authorize_within = limit;
        self
    }

    /// Lets the metadata name an authorization server at a private network
    /// address (`10.0.0.9`, `sso.corp`). Loopback addresses are taken only
    /// for a server at a loopback address itself, whatever this says.
    #[must_use]
    pub fn private_addresses(mut self) -> Self {
        self.private_addresses = true;
        self
    }
}

/// rmcp's credential store, over a behest [`McpTokenStore`], for one MCP
/// server: the document names the server, and credentials kept for
/// another (a store shared by mistake) are not sent to this one.
struct Kept {
    store: Arc<dyn McpTokenStore>,
    server: String,
}

/// What a [`McpTokenStore`] holds: the server's URL and its credentials.
#[derive(serde::Serialize, serde::Deserialize)]
struct Document {
    server: String,
    credentials: StoredCredentials,
}

#[async_trait::async_trait]
impl CredentialStore for Kept {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(document) = self
            .store
            .load()
            .await
            .map_err(AuthError::CredentialStoreError)?
        else {
            return Ok(None);
        };
        // A document that no longer reads, or is another server's, is as
        // good as none: the user authorizes again.
        Ok(serde_json::from_str::<Document>(&document)
            .ok()
            .filter(|document| document.server == self.server)
            .map(|document| document.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let document = Document {
            server: self.server.clone(),
            credentials,
        };
        let document = serde_json::to_string(&document)
            .map_err(|error| AuthError::CredentialStoreError(error.to_string()))?;
        self.store
            .save(document)
            .await
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .clear()
            .await
            .map_err(AuthError::CredentialStoreError)
    }
}

/// One connection's authorization: the manager that holds its token, and
/// how often its user was sent to authorize.
struct Authorization {
    manager: Option<Arc<AuthorizationManager>>,
    /// Whether the store was read for credentials of an earlier run.
    loaded: bool,
    authorizations: u32,
    /// The scopes the last authorization asked for.
    asked: Vec<String>,
    /// Whether its token was refreshed for a 401 since the last
    /// authorization: a second 401 then needs a new authorization.
    refreshed: bool,
}

/// The OAuth state of one connection, shared by the transport's clones.
struct Authorizer {
    server: String,
    oauth: McpOAuth,
    state: tokio::sync::Mutex<Authorization>,
}

/// Why a request was refused.
#[derive(Clone, Copy)]
enum Refusal {
    /// 401: no token, or one the server does not take.
    Unauthorized,
    /// 403 `insufficient_scope`: a token without a scope the request needs.
    InsufficientScope,
}

impl Authorizer {
    async fn manager(&self) -> Result<AuthorizationManager, AuthError> {
        let mut manager = if self.oauth.private_addresses {
            AuthorizationManager::new_allowing_private_addresses(self.server.as_str()).await?
        } else {
            AuthorizationManager::new(self.server.as_str()).await?
        };
        manager.set_credential_store(Kept {
            store: self.oauth.store.clone(),
            server: self.server.clone(),
        });
        Ok(manager)
    }

    /// The token to send now (refreshed when it ran out), if there is one.
    async fn token(&self) -> Result<Option<String>, AuthError> {
        let mut state = self.state.lock().await;
        if !state.loaded {
            let mut manager = self.manager().await?;
            // Credentials of an earlier run, unless the authorization
            // server changed since. Marked read once it worked: a failure
            // is tried again with the next request.
            if manager.initialize_from_store().await? {
                state.manager = Some(Arc::new(manager));
            }
            state.loaded = true;
        }
        let Some(manager) = &state.manager else {
            return Ok(None);
        };
        match manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            // Nothing usable (a refresh the server rejected): the request
            // goes without, and the server's challenge starts over.
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Answers a refusal of a request sent with `sent`: a refreshed token
    /// for a 401 of one that ran out, else a new authorization for the
    /// server's `challenge`. Nothing, when another request answered it
    /// first. An error past the most authorizations.
    async fn answer(
        &self,
        sent: Option<&str>,
        challenge: &str,
        refusal: Refusal,
    ) -> Result<(), AuthError> {
        let mut state = self.state.lock().await;
        if let Some(manager) = state.manager.clone() {
            let current = manager.get_access_token().await.ok();
            if current.as_deref() != sent {
                return Ok(());
            }
            if let (Refusal::Unauthorized, Some(_), false) = (refusal, sent, state.refreshed) {
                state.refreshed = true;
                if manager.refresh_token().await.is_ok() {
                    let fresh = manager.get_access_token().await.ok();
                    if fresh.is_some() && fresh.as_deref() != sent {
                        return Ok(());
                    }
                }
            }
        }
        if state.authorizations >= self.oauth.most_authorizations {
            return Err(AuthError::AuthorizationFailed(format!(
                "the server still refuses after {} authorizations (its last challenge: {challenge})",
                state.authorizations
            )));
        }
        state.authorizations += 1;
        // A step-up asks for what was asked before and what the challenge
        // names (SEP-2350), so that no scope granted earlier is lost.
        let scopes = match refusal {
            Refusal::InsufficientScope => {
                // Asked before: by this connection, else (tokens of an
                // earlier run) what the kept token was granted, else what
                // the settings say.
                let granted = match &state.manager {
                    Some(manager) if state.asked.is_empty() => manager.get_current_scopes().await,
                    _ => Vec::new(),
                };
                let mut scopes = [&state.asked, &granted, &self.oauth.scopes]
                    .into_iter()
                    .find(|scopes| !scopes.is_empty())
                    .cloned()
                    .unwrap_or_default();
                for scope in self.challenged_scopes(challenge) {
                    if !scopes.contains(&scope) {
                        scopes.push(scope);
                    }
                }
                scopes
            }
            Refusal::Unauthorized => self.oauth.scopes.clone(),
        };
        let manager = self.authorize(challenge, &scopes).await?;
        state.asked = manager.get_current_scopes().await;
        state.refreshed = false;
        state.manager = Some(Arc::new(manager));
        Ok(())
    }

    /// The scopes a `WWW-Authenticate` challenge names.
    fn challenged_scopes(&self, challenge: &str) -> Vec<String> {
        let Ok(base) = reqwest::Url::parse(&self.server) else {
            return Vec::new();
        };
        rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base)
            .scope
            .map(|scope| scope.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Sends the user through an authorization for `challenge`, asking for
    /// `scopes` (or, when none, those the specification's order picks).
    async fn authorize(
        &self,
        challenge: &str,
        scopes: &[String],
    ) -> Result<AuthorizationManager, AuthError> {
        let oauth = &self.oauth;
        let mut request = AuthorizationRequest::new(oauth.redirect_uri.clone())
            .with_client_name(oauth.client_name.clone())
            .with_challenge(challenge.to_owned());
        if !scopes.is_empty() {
            request = request.with_scopes(scopes.iter().cloned());
        }
        if let Some(url) = &oauth.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        if let Some((id, secret)) = &oauth.registered {
            request = request.with_preregistered_client(id.clone());
            if let Some(secret) = secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        let mut flow = OAuthState::Unauthorized(self.manager().await?);
        flow.start_authorization(request).await?;
        let url = flow.get_authorization_url().await?;
        // Every request of the connection waits for this one: a user who
        // never comes back must not hold them forever.
        let back = tokio::time::timeout(oauth.authorize_within, (oauth.authorize)(url))
            .await
            .map_err(|_| {
                AuthError::AuthorizationFailed(format!(
                    "the user's authorization did not come back within {:?}",
                    oauth.authorize_within
                ))
            })?
            .map_err(|reason| {
                AuthError::AuthorizationFailed(format!(
                    "the user's authorization did not come back: {reason}"
                ))
            })?;
        flow.handle_callback_url(&back)
            .await
            .map_err(|error| match error {
                // rmcp keys an authorization's state by its `state`: one it
                // does not know is a forged or stale redirect.
                AuthError::InternalError(reason) if reason.contains("state not found") => {
                    AuthError::AuthorizationFailed(
                        "the redirect's `state` is not the one this authorization sent (a forged or stale redirect)".to_owned(),
                    )
                }
                other => other,
            })?;
        flow.into_authorization_manager().ok_or_else(|| {
            AuthError::InternalError("the authorization ended without a token".to_owned())
        })
    }
}

/// The client's HTTP transport with OAuth: each request carries the
/// connection's token and, refused, is sent again once the refusal is
/// answered.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    http: reqwest::Client,
    auth: Arc<Authorizer>,
}

impl OAuthHttp {
    pub(crate) fn new(server: &str, oauth: McpOAuth) -> Self {
        let authorization = Authorization {
            manager: None,
            loaded: false,
            authorizations: 0,
            asked: Vec::new(),
            refreshed: false,
        };
        Self {
            http: reqwest::Client::default(),
            auth: Arc::new(Authorizer {
                server: server.to_owned(),
                oauth,
                state: tokio::sync::Mutex::new(authorization),
            }),
        }
    }

    /// `send` with the connection's token; a refusal answered, it is sent
    /// again (at most twice per authorization the connection may make: with
    /// its token, and with that token refreshed).
    async fn authorized<T, F, Fut>(&self, send: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let mut tries = 2 * self.auth.oauth.most_authorizations + 2;
        loop {
            let token = self.auth.token().await?;
            let (challenge, refusal) = match send(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(refused)) => {
                    (refused.www_authenticate_header, Refusal::Unauthorized)
                }
                Err(StreamableHttpError::InsufficientScope(refused)) => {
                    (refused.www_authenticate_header, Refusal::InsufficientScope)
                }
                other => return other,
            };
            tries -= 1;
            if tries == 0 {
                return Err(AuthError::AuthorizationFailed(format!(
                    "the server keeps refusing the client's tokens (its last challenge: {challenge})"
                ))
                .into());
            }
            self.auth
                .answer(token.as_deref(), &challenge, refusal)
                .await?;
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _token: Option<String>,
        headers: HashMap<axum::http::HeaderName, axum::http::HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _token: Option<String>,
        headers: HashMap<axum::http::HeaderName, axum::http::HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _token: Option<String>,
        headers: HashMap<axum::http::HeaderName, axum::http::HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.authorized(|token| {
            self.http
                .delete_session(uri.clone(), session_id.clone(), token, headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _token: Option<String>,
        headers: HashMap<axum::http::HeaderName, axum::http::HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.authorized(|token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _token: Option<String>,
        headers: HashMap<axum::http::HeaderName, axum::http::HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.authorized(|token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("behest-tokens-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("tokens.json")
    }

    /// A file store reads nothing before the first save, what was saved
    /// after it (a second save replacing the first, no temporary file
    /// left), and nothing after clear; clearing twice is no error.
    #[tokio::test]
    async fn a_file_store_keeps_the_last_document_until_cleared() {
        let path = scratch("round");
        let store = FileTokenStore::new(&path);
        assert_eq!(store.load().await.unwrap(), None);
        store.save("first".to_owned()).await.unwrap();
        store.save("second".to_owned()).await.unwrap();
        assert_eq!(store.load().await.unwrap().as_deref(), Some("second"));
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, ["tokens.json"], "no temporary file is left");
        store.clear().await.unwrap();
        store.clear().await.unwrap();
        assert_eq!(store.load().await.unwrap(), None);
    }

    /// A store whose folder is gone says where it could not write.
    #[tokio::test]
    async fn a_file_store_that_cannot_write_says_where() {
        let store = FileTokenStore::new("/nonexistent-behest-dir/tokens.json");
        let error = store.save("x".to_owned()).await.unwrap_err();
        assert!(error.contains("/nonexistent-behest-dir"), "{error}");
    }

    /// A kept document that does not read as credentials (a truncated
    /// file, another program's) is as good as none: the user authorizes
    /// again, nothing panics.
    #[tokio::test]
    async fn credentials_that_do_not_read_are_none() {
        let store = Arc::new(MemoryTokenStore::default());
        let kept = Kept {
            store: store.clone(),
            server: "https://a.example/mcp".to_owned(),
        };
        let credentials = StoredCredentials::new("client".to_owned(), None, Vec::new(), None);
        let theirs = serde_json::to_string(&Document {
            server: "https://b.example/mcp".to_owned(),
            credentials,
        })
        .unwrap();
        for junk in ["", "{", "[1, 2]", "{\"client_id\": 7}", theirs.as_str()] {
            store.save(junk.to_owned()).await.unwrap();
            assert!(
                CredentialStore::load(&kept).await.unwrap().is_none(),
                "{junk:?}"
            );
        }
    }
}
