//! Locking that outlives a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it back if a thread panicked while holding it:
/// behest's locks guard state that is consistent between statements (a
/// panic in a handler or a sink leaves nothing half-written), so a
/// poisoned lock carries no damage worth spreading as more panics.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
