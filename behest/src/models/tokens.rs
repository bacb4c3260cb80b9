//! Bearer tokens that expire (Microsoft Entra ID, Google's OAuth): asked
//! of a source when the one held is near its end, and sent in place of a
//! key.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use crate::model::ModelError;

/// A bearer token and when it stops being good.
#[derive(Clone)]
pub struct AccessToken {
    /// The token, sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// When it expires.
    pub expires_at: SystemTime,
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"***")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Where a client's bearer tokens come from: Microsoft Entra ID for Azure
/// OpenAI (scope `https://cognitiveservices.azure.com/.default`), say,
/// through the credential library of your choice. Asked again when the
/// token held has less than five minutes left.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use behest::models::{AccessToken, TokenSource};
/// use behest::ModelError;
///
/// struct Fixed;
///
/// impl TokenSource for Fixed {
///     fn token(&self) -> futures::future::BoxFuture<'_, Result<AccessToken, ModelError>> {
///         Box::pin(async {
///             Ok(AccessToken {
///                 token: "eyJ0eXAi…".to_owned(),
///                 expires_at: SystemTime::now() + Duration::from_secs(3600),
///             })
///         })
///     }
/// }
/// ```
pub trait TokenSource: Send + Sync + 'static {
    /// A fresh token.
    fn token(&self) -> BoxFuture<'_, Result<AccessToken, ModelError>>;
}

/// How long before its end a token is replaced: a request that starts
/// with it must not outlive it.
const REFRESH_BEFORE: Duration = Duration::from_secs(300);

/// A token source and the token it gave last, shared by a client's clones.
#[derive(Clone)]
pub struct Tokens {
    source: Arc<dyn TokenSource>,
    /// The token held, and when it was had.
    held: Arc<tokio::sync::Mutex<Option<(AccessToken, SystemTime)>>>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens").finish_non_exhaustive()
    }
}

impl Tokens {
    pub(crate) fn new(source: impl TokenSource) -> Self {
        Self {
            source: Arc::new(source),
            held: Arc::default(),
        }
    }

    /// The token to send: the one held while it has time left, else a new
    /// one (asked once, however many requests wait for it).
    pub(crate) async fn bearer(&self) -> Result<String, ModelError> {
        let mut held = self.held.lock().await;
        let now = SystemTime::now();
        // Replaced five minutes before its end, or, for a token given for
        // less than ten minutes, halfway through its life.
        let fresh = held.as_ref().is_some_and(|(token, had)| {
            let life = token.expires_at.duration_since(*had).unwrap_or_default();
            let margin = REFRESH_BEFORE.min(life / 2);
            token
                .expires_at
                .duration_since(now)
                .is_ok_and(|left| left > margin)
        });
        if !fresh {
            let token = self.source.token().await.map_err(|error| {
                ModelError::new(format!("no bearer token could be had: {}", error.message))
                    .with_kind("token")
                    .retryable(error.retryable)
            })?;
            *held = Some((token, now));
        }
        Ok(held
            .as_ref()
            .map(|(token, _)| token.token.clone())
            .unwrap_or_default())
    }
}
