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
/// token held has less than five minutes left, or when the API refused it
/// (401); given 60 s to answer.
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

/// How long a token source may take to give a token.
const TOKEN_TIME_LIMIT: Duration = Duration::from_secs(60);

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

    /// Drops the token held, when the API refused it (revoked before its
    /// time): the next request asks the source again.
    pub(crate) async fn forget(&self, refused: &str) {
        let mut held = self.held.lock().await;
        if held
            .as_ref()
            .is_some_and(|(token, _)| token.token == refused)
        {
            *held = None;
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
            let token = tokio::time::timeout(TOKEN_TIME_LIMIT, self.source.token())
                .await
                .map_err(|_| {
                    ModelError::new(format!(
                        "no bearer token could be had: the token source did not answer in {} s",
                        TOKEN_TIME_LIMIT.as_secs()
                    ))
                    .with_kind("token")
                    .retryable(true)
                    .timed_out(true)
                })?
                .map_err(|error| {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that never answers fails the request after the limit, on
    /// tokio's paused clock, as a timeout worth another try.
    #[tokio::test(start_paused = true)]
    async fn a_source_that_never_answers_times_out() {
        struct Never;
        impl TokenSource for Never {
            fn token(&self) -> BoxFuture<'_, Result<AccessToken, ModelError>> {
                Box::pin(futures::future::pending())
            }
        }
        let started = tokio::time::Instant::now();
        let error = Tokens::new(Never).bearer().await.unwrap_err();
        assert_eq!(started.elapsed(), TOKEN_TIME_LIMIT);
        assert!(error.timed_out && error.retryable, "{error:?}");
        assert!(error.message.contains("60 s"), "{error}");
        assert_eq!(error.kind.as_deref(), Some("token"));
    }
}
