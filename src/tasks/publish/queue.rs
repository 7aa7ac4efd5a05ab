//! The bounded queue between the streaming thread and a publisher's
//! sending thread, and the counts both sides keep.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A publisher's counts of messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Delivered: acknowledged by the broker (QoS 1), written to the
    /// connection (QoS 0) or appended to the file.
    pub sent: u64,
    /// Waiting: in the queue, or handed to the connection and not yet
    /// delivered.
    pub queued: u64,
    /// Lost: pushed out of a full queue (the oldest go first), or still
    /// waiting when the publisher closed.
    pub dropped: u64,
}

#[derive(Debug, Default)]
pub(super) struct Shared {
    queue: Mutex<VecDeque<Vec<u8>>>,
    changed: Condvar,
    max: usize,
    pub sent: AtomicU64,
    pub dropped: AtomicU64,
    /// Taken from the queue, not yet delivered.
    pub in_flight: AtomicU64,
    pub stop: AtomicBool,
    /// The connection is up (always true for a file).
    pub connected: AtomicBool,
}

impl Shared {
    pub fn new(max: usize) -> Shared {
        Shared {
            max: max.max(1),
            ..Default::default()
        }
    }

    /// Queues `message` without waiting; a full queue drops its oldest.
    pub fn push(&self, message: Vec<u8>) {
        let mut q = self.queue.lock().unwrap();
        if q.len() >= self.max {
            q.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.push_back(message);
        drop(q);
        self.changed.notify_all();
    }

    /// The next message once the connection is up, counted in flight;
    /// `None` when stopping.
    pub fn next(&self) -> Option<Vec<u8>> {
        let mut q = self.queue.lock().unwrap();
        loop {
            if self.stop.load(Ordering::Acquire) {
                return None;
            }
            if self.connected.load(Ordering::Acquire) {
                if let Some(m) = q.pop_front() {
                    self.in_flight.fetch_add(1, Ordering::Relaxed);
                    return Some(m);
                }
            }
            q = self
                .changed
                .wait_timeout(q, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }

    /// One message in flight was delivered (after [`Shared::stop`] counted
    /// it dropped, it stays so).
    pub fn delivered(&self) {
        let was_in_flight = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if was_in_flight {
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        self.changed.notify_all();
    }

    pub fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::Release);
        self.changed.notify_all();
    }

    pub fn counts(&self) -> Counts {
        let waiting = self.queue.lock().unwrap().len() as u64;
        Counts {
            sent: self.sent.load(Ordering::Relaxed),
            queued: waiting + self.in_flight.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// Waits until nothing is queued or in flight, up to `timeout`; true
    /// when everything went.
    pub fn drain(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        let mut q = self.queue.lock().unwrap();
        loop {
            if q.is_empty() && self.in_flight.load(Ordering::Relaxed) == 0 {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            q = self
                .changed
                .wait_timeout(q, (until - now).min(Duration::from_millis(50)))
                .unwrap()
                .0;
        }
    }

    /// Stops the sending side; whatever still waits is counted dropped.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let mut q = self.queue.lock().unwrap();
        let left = q.len() as u64 + self.in_flight.swap(0, Ordering::Relaxed);
        q.clear();
        self.dropped.fetch_add(left, Ordering::Relaxed);
        drop(q);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_its_oldest_and_counts_it() {
        let s = Shared::new(2);
        for i in 0..5u8 {
            s.push(vec![i]);
        }
        assert_eq!(
            s.counts(),
            Counts {
                sent: 0,
                queued: 2,
                dropped: 3
            }
        );
        s.set_connected(true);
        assert_eq!(s.next(), Some(vec![3]));
        s.delivered();
        assert!(!s.drain(Duration::from_millis(10)));
        s.stop();
        assert_eq!(
            s.counts(),
            Counts {
                sent: 1,
                queued: 0,
                dropped: 4
            }
        );
        assert_eq!(s.next(), None);
    }
}
