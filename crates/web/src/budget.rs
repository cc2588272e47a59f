//! One memory budget for the whole server: matches (their moves and checkpoints), agents (their
//! tables and the trees they may grow), analyses and replays reserve from it before they take
//! memory, and give it back when they are dropped. A request that does not fit is refused with
//! 503 instead of the machine running out.

use crate::error::ApiError;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub struct Budget {
    total: u64,
    used: Mutex<u64>,
}

/// Memory held against the budget until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Budget {
    pub fn new(total: u64) -> Arc<Budget> {
        Arc::new(Budget { total, used: Mutex::new(0) })
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `bytes` for `what`, or says why not.
    pub fn reserve(self: &Arc<Self>, bytes: u64, what: &str) -> Result<Reservation, ApiError> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if used.saturating_add(bytes) > self.total {
            let f = meeple_game::limits::format_bytes;
            return Err(ApiError::busy(format!(
                "the server's memory budget cannot hold {what} ({} more; {} of {} in use): try later or a smaller one",
                f(bytes),
                f(*used),
                f(self.total)
            )));
        }
        *used += bytes;
        Ok(Reservation { budget: self.clone(), bytes })
    }
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds `other` to this reservation (one match's storage and its agents).
    pub fn join(&mut self, mut other: Reservation) {
        self.bytes += std::mem::take(&mut other.bytes);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_add_up_and_come_back() {
        let b = Budget::new(100);
        let mut a = b.reserve(60, "a").unwrap();
        assert!(b.reserve(50, "b").is_err());
        let c = b.reserve(40, "c").unwrap();
        assert_eq!(b.used(), 100);
        drop(c);
        a.join(b.reserve(10, "d").unwrap());
        assert_eq!(b.used(), 70);
        drop(a);
        assert_eq!(b.used(), 0);
    }
}
