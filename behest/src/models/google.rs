//! Google's credentials, found as Google's own libraries find them
//! (Application Default Credentials), each a [`TokenSource`] of OAuth
//! access tokens for Vertex AI:
//!
//! 1. the JSON file `GOOGLE_APPLICATION_CREDENTIALS` names: a service
//!    account's key (`"type": "service_account"`: a JWT signed with its key,
//!    exchanged at its `token_uri`) or a user's credentials
//!    (`"type": "authorized_user"`: its refresh token exchanged);
//! 2. the user credentials `gcloud auth application-default login` wrote
//!    (`$CLOUDSDK_CONFIG/application_default_credentials.json`, else
//!    `~/.config/gcloud/application_default_credentials.json`);
//! 3. the metadata server of the machine the code runs on (Compute Engine,
//!    Cloud Run, GKE): `GCE_METADATA_HOST`, else `metadata.google.internal`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::tokens::{AccessToken, TokenSource};
use crate::model::ModelError;

/// The scope Vertex AI's tokens are asked for.
pub const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where Google's token endpoint is, for user credentials that name none.
const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The audience of a service account's JWT: Google's token endpoint,
/// whatever `token_uri` the key names.
const AUDIENCE: &str = "https://oauth2.googleapis.com/token";

/// How long a service account's assertion is good for: Google's longest.
const ASSERTION_LIFE: u64 = 3600;

/// Google credentials: where a client's access tokens come from.
///
/// ```no_run
/// use behest::models::google::GoogleCredentials;
///
/// // As Google's libraries find them (Application Default Credentials).
/// let found = GoogleCredentials::find();
/// // Or a service account's key file.
/// let key = GoogleCredentials::from_file("service-account.json").unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct GoogleCredentials {
    kind: Kind,
    scope: String,
}

#[derive(Clone)]
enum Kind {
    /// Application Default Credentials, looked for at the first token.
    Find,
    ServiceAccount(Box<ServiceAccount>),
    User {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    Metadata {
        host: String,
    },
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Find => f.write_str("ApplicationDefault"),
            Self::ServiceAccount(account) => f
                .debug_struct("ServiceAccount")
                .field("client_email", &account.client_email)
                .finish_non_exhaustive(),
            Self::User { client_id, .. } => f
                .debug_struct("User")
                .field("client_id", client_id)
                .finish_non_exhaustive(),
            Self::Metadata { host } => f.debug_struct("Metadata").field("host", host).finish(),
        }
    }
}

#[derive(Clone)]
struct ServiceAccount {
    client_email: String,
    private_key_id: Option<String>,
    /// The key, PKCS #8 DER.
    key: Vec<u8>,
    token_uri: String,
}

impl GoogleCredentials {
    /// Application Default Credentials, looked for when the first token is
    /// asked: the file `GOOGLE_APPLICATION_CREDENTIALS` names, gcloud's
    /// user credentials, else the metadata server.
    pub fn find() -> Self {
        Self {
            kind: Kind::Find,
            scope: CLOUD_PLATFORM.to_owned(),
        }
    }

    /// The credentials of a JSON key file: a service account's, or a
    /// user's (`authorized_user`).
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self, ModelError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|error| {
            ModelError::new(format!(
                "the Google credentials file `{}` could not be read: {error}",
                path.display()
            ))
        })?;
        Self::from_json(&text)
    }

    /// The credentials of a JSON key, as its file holds it.
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let value: Value = serde_json::from_str(text).map_err(|error| {
            credentials_error(format!("the Google credentials are not JSON: {error}"))
        })?;
        let field = |name: &str| value.get(name).and_then(Value::as_str);
        let required = |name: &str| {
            field(name).map(str::to_owned).ok_or_else(|| {
                credentials_error(format!("the Google credentials have no `{name}`"))
            })
        };
        let kind = match field("type") {
            Some("service_account") => Kind::ServiceAccount(Box::new(ServiceAccount {
                client_email: required("client_email")?,
                private_key_id: field("private_key_id").map(str::to_owned),
                key: pem_to_der(&required("private_key")?)?,
                token_uri: field("token_uri").unwrap_or(TOKEN_URI).to_owned(),
            })),
            Some("authorized_user") => Kind::User {
                client_id: required("client_id")?,
                client_secret: required("client_secret")?,
                refresh_token: required("refresh_token")?,
                token_uri: field("token_uri").unwrap_or(TOKEN_URI).to_owned(),
            },
            other => {
                return Err(credentials_error(format!(
                    "Google credentials of type {} are not supported: give a service account's \
                     key or user credentials (`gcloud auth application-default login`), or a \
                     token source of your own",
                    other.map_or_else(|| "(none)".to_owned(), |kind| format!("`{kind}`"))
                )))
            }
        };
        // The key must sign: a key that cannot is said now, not at the
        // first request.
        if let Kind::ServiceAccount(account) = &kind {
            ring::signature::RsaKeyPair::from_pkcs8(&account.key).map_err(|error| {
                credentials_error(format!(
                    "the service account's `private_key` is not an RSA key in PKCS #8: {error}"
                ))
            })?;
        }
        Ok(Self {
            kind,
            scope: CLOUD_PLATFORM.to_owned(),
        })
    }

    /// The metadata server at `host` (`metadata.google.internal` on Google
    /// Cloud): the tokens of the machine's service account.
    pub fn metadata_server(host: impl Into<String>) -> Self {
        Self {
            kind: Kind::Metadata { host: host.into() },
            scope: CLOUD_PLATFORM.to_owned(),
        }
    }

    /// Tokens for these scopes (space-separated) instead of
    /// `cloud-platform`.
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// The credentials Application Default Credentials name now.
    fn resolve(&self) -> Result<Self, ModelError> {
        if !matches!(self.kind, Kind::Find) {
            return Ok(self.clone());
        }
        let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        let found = if let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") {
            Self::from_file(PathBuf::from(path))?
        } else if let Some(path) = gcloud_file().filter(|path| path.is_file()) {
            Self::from_file(path)?
        } else {
            let host = std::env::var("GCE_METADATA_HOST")
                .or_else(|_| std::env::var("GCE_METADATA_ROOT"))
                .ok()
                .filter(|host| !host.is_empty())
                .unwrap_or_else(|| "metadata.google.internal".to_owned());
            Self::metadata_server(host)
        };
        Ok(found.scope(self.scope.clone()))
    }

    /// A service account's signed assertion as of `now`: what its token
    /// request sends.
    fn assertion(account: &ServiceAccount, scope: &str, now: u64) -> Result<String, ModelError> {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(id) = &account.private_key_id {
            header["kid"] = json!(id);
        }
        let claims = json!({
            "iss": account.client_email,
            "scope": scope,
            "aud": AUDIENCE,
            "iat": now,
            "exp": now.saturating_add(ASSERTION_LIFE),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let key = ring::signature::RsaKeyPair::from_pkcs8(&account.key).map_err(|error| {
            credentials_error(format!("the service account's key cannot sign: {error}"))
        })?;
        let mut signature = vec![0; key.public().modulus_len()];
        key.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signing_input.as_bytes(),
            &mut signature,
        )
        .map_err(|_| credentials_error("the service account's key could not sign".to_owned()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }

    async fn fetch(&self) -> Result<AccessToken, ModelError> {
        let credentials = self.resolve()?;
        let client = super::http::client()?;
        let request = match &credentials.kind {
            Kind::Find => unreachable!("resolved above"),
            Kind::ServiceAccount(account) => {
                let now = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |elapsed| elapsed.as_secs());
                let assertion = Self::assertion(account, &credentials.scope, now)?;
                form(
                    client.post(&account.token_uri),
                    &[
                        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                        ("assertion", &assertion),
                    ],
                )
            }
            Kind::User {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => form(
                client.post(token_uri),
                &[
                    ("grant_type", "refresh_token"),
                    ("client_id", client_id),
                    ("client_secret", client_secret),
                    ("refresh_token", refresh_token),
                ],
            ),
            Kind::Metadata { host } => {
                let scopes = credentials.scope.split_whitespace().collect::<Vec<_>>();
                let query: String = form_urlencoded::Serializer::new(String::new())
                    .append_pair("scopes", &scopes.join(","))
                    .finish();
                client
                    .get(format!(
                        "http://{host}/computeMetadata/v1/instance/service-accounts/default/token?{query}"
                    ))
                    .header("Metadata-Flavor", "Google")
            }
        };
        let response = tokio::time::timeout(Duration::from_secs(30), request.send())
            .await
            .map_err(|_| token_error("the token endpoint did not answer in 30 s", true))?
            .map_err(|error| {
                token_error(
                    &format!("the token endpoint could not be reached: {error}"),
                    true,
                )
            })?;
        let status = response.status();
        let body = tokio::time::timeout(Duration::from_secs(30), response.text())
            .await
            .map_err(|_| token_error("the token endpoint did not answer in 30 s", true))?
            .map_err(|error| {
                token_error(&format!("the token's answer broke off: {error}"), true)
            })?;
        let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            // OAuth's error: `error` and `error_description`.
            let why = answer
                .get("error_description")
                .or_else(|| answer.get("error"))
                .and_then(Value::as_str)
                .map_or_else(|| body.chars().take(300).collect(), str::to_owned);
            return Err(token_error(
                &format!("the token endpoint answered {status}: {why}"),
                status.is_server_error() || status.as_u16() == 429,
            ));
        }
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                token_error("the token endpoint's answer has no `access_token`", false)
            })?;
        // `expires_in` may come as a number or as text.
        let expires_in = match answer.get("expires_in") {
            Some(Value::Number(seconds)) => seconds.as_u64(),
            Some(Value::String(seconds)) => seconds.parse().ok(),
            _ => None,
        }
        .unwrap_or(3600)
        // Google's tokens live an hour; a day at most is believed.
        .min(86_400);
        Ok(AccessToken {
            token: token.to_owned(),
            expires_at: SystemTime::now() + Duration::from_secs(expires_in),
        })
    }
}

impl TokenSource for GoogleCredentials {
    fn token(&self) -> BoxFuture<'_, Result<AccessToken, ModelError>> {
        Box::pin(self.fetch())
    }
}

/// A request with `fields` as its form body.
fn form(request: reqwest::RequestBuilder, fields: &[(&str, &str)]) -> reqwest::RequestBuilder {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    request
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
}

/// Where gcloud keeps the user's Application Default Credentials.
fn gcloud_file() -> Option<PathBuf> {
    let config = std::env::var_os("CLOUDSDK_CONFIG")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            if cfg!(windows) {
                std::env::var_os("APPDATA").map(|dir| PathBuf::from(dir).join("gcloud"))
            } else {
                std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config/gcloud"))
            }
        })?;
    Some(config.join("application_default_credentials.json"))
}

/// The DER bytes of a PEM block (`-----BEGIN PRIVATE KEY-----`).
fn pem_to_der(pem: &str) -> Result<Vec<u8>, ModelError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("-----") && !line.is_empty())
        .collect();
    STANDARD.decode(body).map_err(|error| {
        credentials_error(format!(
            "the service account's `private_key` is not PEM: {error}"
        ))
    })
}

fn credentials_error(message: String) -> ModelError {
    ModelError::new(message).with_kind("credentials")
}

fn token_error(message: &str, retryable: bool) -> ModelError {
    ModelError::new(message).retryable(retryable)
}
