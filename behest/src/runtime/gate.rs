//! The concurrency limit of a runtime: at most `limit` calls hold a place
//! at once.
//!
//! A free place is taken with one atomic operation and given back with
//! two, where a `tokio::sync::Semaphore` takes its waiters' lock on every
//! release: the uncontended case, nearly every call, costs a few
//! nanoseconds. Calls that find the gate full wait on a `Notify`, in the
//! order they came; each place given back while some wait wakes the
//! first, and no newcomer takes a place while any call waits.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use tokio::sync::Notify;

#[derive(Debug)]
pub(super) struct Gate {
    limit: usize,
    taken: AtomicUsize,
    /// Calls between their first look at a full gate and their place.
    waiting: AtomicUsize,
    freed: Notify,
}

/// A place in the gate, given back when dropped.
#[derive(Debug)]
pub(super) struct Place<'a>(&'a Gate);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let gate = self.0;
        gate.taken.fetch_sub(1, SeqCst);
        // Sequentially consistent with the waiter's `waiting` increment
        // and its own try: either it sees this place free, or this sees
        // it waiting and wakes it (`Notify` keeps a wake-up that comes
        // before the waiter listens).
        if gate.waiting.load(SeqCst) > 0 {
            gate.freed.notify_one();
        }
    }
}

impl Gate {
    /// A gate of `limit` places (at least one).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            taken: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// A free place, if there is one and no call waits for one: a newcomer
    /// does not pass the calls queued before it.
    pub fn try_enter(&self) -> Option<Place<'_>> {
        if self.waiting.load(SeqCst) > 0 {
            return None;
        }
        self.take()
    }

    /// A free place, queue or not.
    fn take(&self) -> Option<Place<'_>> {
        self.taken
            .fetch_update(SeqCst, SeqCst, |taken| {
                (taken < self.limit).then_some(taken + 1)
            })
            .ok()
            .map(|_| Place(self))
    }

    /// A place, once one is free. Cancel-safe: dropping the future gives
    /// up its turn (and a wake-up it got passes to another waiter).
    pub async fn enter(&self) -> Place<'_> {
        let _waiting = Waiting::new(&self.waiting);
        loop {
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            // Listening before the try: a place freed in between wakes
            // this future rather than going unnoticed.
            freed.as_mut().enable();
            if let Some(place) = self.take() {
                return place;
            }
            freed.await;
        }
    }
}

/// Counts a waiting call for as long as it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, SeqCst);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Gate;

    #[test]
    fn a_full_gate_refuses_until_a_place_is_given_back() {
        let gate = Gate::new(2);
        let first = gate.try_enter().expect("a free place");
        let _second = gate.try_enter().expect("a free place");
        assert!(gate.try_enter().is_none());
        drop(first);
        assert!(gate.try_enter().is_some());
    }

    #[test]
    fn a_limit_of_zero_is_one_place() {
        let gate = Gate::new(0);
        let _only = gate.try_enter().expect("one place");
        assert!(gate.try_enter().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiters_get_every_place_given_back_and_never_more_than_the_limit() {
        let gate = Arc::new(Gate::new(3));
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (gate, inside) = (gate.clone(), inside.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let _place = gate.enter().await;
                        let now = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        assert!(now <= 3, "{now} calls inside a gate of 3");
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        // A lost wake-up would leave a task waiting for ever.
        let all = futures::future::try_join_all(tasks);
        tokio::time::timeout(Duration::from_secs(60), all)
            .await
            .expect("every waiter got in")
            .expect("no task panicked");
        assert_eq!(gate.taken.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_newcomer_does_not_pass_a_call_that_waits() {
        let gate = Gate::new(1);
        let held = gate.try_enter().unwrap();
        let mut waiter = Box::pin(gate.enter());
        assert!(futures::poll!(waiter.as_mut()).is_pending());
        drop(held);
        // The freed place is the waiter's.
        assert!(gate.try_enter().is_none());
        let place = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter got the place");
        drop(place);
        assert!(gate.try_enter().is_some());
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_passes_its_turn_on() {
        let gate = Gate::new(1);
        let held = gate.try_enter().unwrap();
        let mut quitter = Box::pin(gate.enter());
        let mut stayer = Box::pin(gate.enter());
        // Both listen.
        assert!(futures::poll!(quitter.as_mut()).is_pending());
        assert!(futures::poll!(stayer.as_mut()).is_pending());
        drop(held);
        drop(quitter);
        let place = tokio::time::timeout(Duration::from_secs(5), stayer)
            .await
            .expect("the place passed to the other waiter");
        drop(place);
        assert_eq!(gate.waiting.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
