//! Sessions kept in this process's memory: for tests, and for one process
//! that may forget its conversations when it stops.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::store::codec;
use super::{
    Change, Commit, Loaded, PausedRun, RunChange, SessionError, SessionId, SessionInfo,
    SessionStore,
};
use crate::conversation::Message;

/// A [`SessionStore`] in memory, with the same rules as one on a
/// database: versions, conflicts, the write limit.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<BTreeMap<SessionId, Kept>>,
}

#[derive(Debug)]
struct Kept {
    messages: Vec<Message>,
    version: u64,
    paused: BTreeMap<String, PausedRun>,
    updated_at: SystemTime,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SessionStore for MemoryStore {
    fn load<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<Loaded, SessionError>> {
        let sessions = crate::sync::lock(&self.sessions);
        let loaded = sessions
            .get(id)
            .map_or_else(Loaded::default, |kept| Loaded {
                messages: kept.messages.clone(),
                version: kept.version,
                paused: kept.paused.values().cloned().collect(),
            });
        Box::pin(std::future::ready(Ok(loaded)))
    }

    fn commit<'a>(
        &'a self,
        id: &'a SessionId,
        expected: u64,
        commit: Commit<'a>,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(std::future::ready(self.write(id, expected, commit)))
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a SessionId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, SessionError>> {
        let sessions = crate::sync::lock(&self.sessions);
        let listed = sessions
            .iter()
            .filter(|(id, _)| after.is_none_or(|after| *id > after))
            .take(limit)
            .map(|(id, kept)| SessionInfo {
                id: id.clone(),
                version: kept.version,
                messages: kept.messages.len() as u64,
                updated_at: kept.updated_at,
            })
            .collect();
        Box::pin(std::future::ready(Ok(listed)))
    }

    fn delete<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<bool, SessionError>> {
        let gone = crate::sync::lock(&self.sessions).remove(id).is_some();
        Box::pin(std::future::ready(Ok(gone)))
    }

    fn prune(&self, idle_since: SystemTime) -> BoxFuture<'_, Result<u64, SessionError>> {
        let mut sessions = crate::sync::lock(&self.sessions);
        let before = sessions.len();
        sessions.retain(|_, kept| kept.updated_at >= idle_since);
        Box::pin(std::future::ready(Ok((before - sessions.len()) as u64)))
    }
}

impl MemoryStore {
    fn write(
        &self,
        id: &SessionId,
        expected: u64,
        commit: Commit<'_>,
    ) -> Result<u64, SessionError> {
        // The same limit as a store on a database, checked the same way.
        codec::encode(&commit)?;
        let mut sessions = crate::sync::lock(&self.sessions);
        let kept = sessions.entry(id.clone()).or_insert_with(|| Kept {
            messages: Vec::new(),
            version: 0,
            paused: BTreeMap::new(),
            updated_at: SystemTime::now(),
        });
        if kept.version != expected {
            let fresh = kept.version == 0;
            if fresh {
                sessions.remove(id);
            }
            return Err(SessionError::Conflict {
                session: id.to_string(),
                expected,
            });
        }
        match commit.messages {
            Some(Change::Append(messages)) => kept.messages.extend_from_slice(messages),
            Some(Change::Replace(messages)) => kept.messages = messages.to_vec(),
            None => {}
        }
        match commit.run {
            Some(RunChange::Save(run)) => {
                kept.paused.insert(run.run_id().to_owned(), run.clone());
            }
            Some(RunChange::Remove(run_id)) => {
                kept.paused.remove(run_id);
            }
            None => {}
        }
        kept.version += 1;
        kept.updated_at = SystemTime::now();
        Ok(kept.version)
    }
}
