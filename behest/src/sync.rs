//! Locking that outlives a panic elsewhere, and what a caught panic said.

use std::any::Any;
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

/// The message of a caught panic's `payload`, when it is text (as
/// `panic!` with a message makes it).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}
