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
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    kept: BTreeMap<SessionId, Kept>,
    /// The version each deleted session's id goes on from, so that a
    /// writer who read it before the delete cannot write onto a new one.
    deleted: BTreeMap<SessionId, u64>,
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
        let loaded = sessions.kept.get(id).map_or_else(
            || Loaded {
                version: sessions.deleted.get(id).copied().unwrap_or(0),
                ..Loaded::default()
            },
            |kept| Loaded {
                messages: kept.messages.clone(),
                version: kept.version,
                paused: kept.paused.values().cloned().collect(),
            },
        );
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
            .kept
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
        let mut sessions = crate::sync::lock(&self.sessions);
        let gone = sessions.kept.remove(id);
        if let Some(kept) = &gone {
            sessions
                .deleted
                .insert(id.clone(), kept.version.saturating_add(1));
        }
        Box::pin(std::future::ready(Ok(gone.is_some())))
    }

    fn prune(&self, idle_since: SystemTime) -> BoxFuture<'_, Result<u64, SessionError>> {
        let mut sessions = crate::sync::lock(&self.sessions);
        let idle: Vec<SessionId> = sessions
            .kept
            .iter()
            .filter(|(_, kept)| kept.updated_at < idle_since)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            if let Some(kept) = sessions.kept.remove(id) {
                sessions
                    .deleted
                    .insert(id.clone(), kept.version.saturating_add(1));
            }
        }
        Box::pin(std::future::ready(Ok(idle.len() as u64)))
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
        let Sessions { kept, deleted } = &mut *sessions;
        let from = deleted.get(id).copied().unwrap_or(0);
        let kept = kept.entry(id.clone()).or_insert_with(|| Kept {
            messages: Vec::new(),
            version: from,
            paused: BTreeMap::new(),
            updated_at: SystemTime::now(),
        });
        if kept.version != expected {
            let fresh = kept.messages.is_empty() && kept.paused.is_empty() && kept.version == from;
            if fresh {
                sessions.kept.remove(id);
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
