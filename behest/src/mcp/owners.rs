//! Who owns which MCP session, and what each identity holds: sessions it is
//! opening, requests it has in flight. Kept as digests of the identities:
//! no token is held.

use std::sync::Arc;

use super::sessions::McpSessions;

/// Which identity opened each session, so that no other can use it. Kept
/// as digests: the map holds no token.
#[derive(Default)]
pub(super) struct SessionOwners {
    owners: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// Sessions being opened, by identity digest.
    opening: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
    /// Requests in flight on sessions, by identity digest.
    in_flight: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
}

/// A count by identity digest, one of it held until dropped.
pub(super) struct Counted {
    digest: u64,
    counts: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
}

/// A session being opened for an identity, counted until dropped.
pub(super) struct Opening(Counted);

impl Opening {
    /// How many sessions of the identity are being opened, others than
    /// this one.
    pub(super) fn pending(&self) -> usize {
        crate::sync::lock(&self.0.counts)
            .get(&self.0.digest)
            .map_or(0, |count| count - 1)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut counts = crate::sync::lock(&self.counts);
        if let Some(count) = counts.get_mut(&self.digest) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.digest);
            }
        }
    }
}

impl SessionOwners {
    fn digest(token: &str) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        // A fixed-key hash of the process: equal tokens, equal digests.
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let mut hasher = KEYS.get_or_init(Default::default).build_hasher();
        hasher.write(token.as_bytes());
        hasher.finish()
    }

    /// Records `session`'s owner, forgetting sessions that ended on their
    /// own (idle) since the last one opened.
    pub(super) fn open(&self, session: String, identity: &str, open: &McpSessions) {
        let mut owners = crate::sync::lock(&self.owners);
        owners.retain(|session, _| open.contains(session));
        owners.insert(session, Self::digest(identity));
    }

    /// One more request of `identity` in flight, or `None` at `limit`.
    pub(super) fn in_flight(&self, identity: &str, limit: usize) -> Option<Counted> {
        let digest = Self::digest(identity);
        let mut counts = crate::sync::lock(&self.in_flight);
        let count = counts.entry(digest).or_default();
        if *count >= limit.max(1) {
            return None;
        }
        *count += 1;
        Some(Counted {
            digest,
            counts: self.in_flight.clone(),
        })
    }

    /// Counts a session of `identity` as being opened.
    pub(super) fn begin_opening(&self, identity: &str) -> Opening {
        let digest = Self::digest(identity);
        *crate::sync::lock(&self.opening).entry(digest).or_default() += 1;
        Opening(Counted {
            digest,
            counts: self.opening.clone(),
        })
    }

    /// The open sessions `identity` opened.
    pub(super) fn owned_by(&self, identity: &str, open: &McpSessions) -> Vec<String> {
        let digest = Self::digest(identity);
        crate::sync::lock(&self.owners)
            .iter()
            .filter(|(session, owner)| **owner == digest && open.contains(session))
            .map(|(session, _)| session.clone())
            .collect()
    }

    /// Whether `session` may be used by `identity`: it was opened by it,
    /// or it is not one this server opened (rmcp answers for those).
    pub(super) fn belongs(&self, session: &str, identity: &str) -> bool {
        crate::sync::lock(&self.owners)
            .get(session)
            .is_none_or(|owner| *owner == Self::digest(identity))
    }

    pub(super) fn end(&self, session: &str) {
        crate::sync::lock(&self.owners).remove(session);
    }
}
