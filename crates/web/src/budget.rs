//! One memory budget for the whole server: matches (their moves and checkpoints), agents (their
//! tables and the trees they may grow), analyses, replays and uploads reserve from it before
//! they take memory, and give it back when they are dropped. Each client may hold a share of it
//! at most, and no more than half of what the others leave free, so a few clients cannot leave
//! the others nothing. A request that does not fit is
//! refused (503 when the server is full, 429 when the client holds its share) instead of the
//! machine running out.

use crate::clients::Client;
use crate::error::ApiError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub struct Budget {
    total: u64,
    /// The most one client may hold.
    share: u64,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    all: u64,
    clients: HashMap<Client, u64>,
}

/// Memory held against the budget until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    client: Option<Client>,
    bytes: u64,
}

impl Budget {
    pub fn new(total: u64, share: u64) -> Arc<Budget> {
        Arc::new(Budget { total, share: share.min(total), used: Mutex::new(Used::default()) })
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn share(&self) -> u64 {
        self.share
    }

    pub fn used(&self) -> u64 {
        self.used.lock().unwrap_or_else(|e| e.into_inner()).all
    }

    /// Takes `bytes` for `what`, counted to `client` (`None`: nobody's share, as for matches
    /// resumed at start), or says why not.
    pub fn reserve(self: &Arc<Self>, bytes: u64, what: &str, client: Option<Client>) -> Result<Reservation, ApiError> {
        let f = meeple_game::limits::format_bytes;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = client {
            let mine = used.clients.get(&c).copied().unwrap_or(0);
            let cap = crate::clients::fair_share(self.total, used.all - mine, self.share);
            if mine.saturating_add(bytes) > cap {
                return Err(ApiError::too_many(format!(
                    "this address's share of the server's memory ({}: at most {}, and half of what others leave free) cannot hold {what} ({} more; it holds {}): finish or delete one of its matches first",
                    f(cap),
                    f(self.share),
                    f(bytes),
                    f(mine)
                )));
            }
        }
        if used.all.saturating_add(bytes) > self.total {
            return Err(ApiError::busy(format!(
                "the server's memory budget cannot hold {what} ({} more; {} of {} in use): try later or a smaller one",
                f(bytes),
                f(used.all),
                f(self.total)
            )));
        }
        used.all += bytes;
        if let Some(c) = client {
            *used.clients.entry(c).or_insert(0) += bytes;
        }
        Ok(Reservation { budget: self.clone(), client, bytes })
    }
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds `other` to this reservation (one match's storage and its agents); both must be
    /// the same client's.
    pub fn join(&mut self, mut other: Reservation) {
        debug_assert_eq!(self.client, other.client);
        self.bytes += std::mem::take(&mut other.bytes);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        used.all = used.all.saturating_sub(self.bytes);
        if let Some(c) = self.client
            && let Some(mine) = used.clients.get_mut(&c)
        {
            *mine = mine.saturating_sub(self.bytes);
            if *mine == 0 {
                used.clients.remove(&c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_add_up_and_come_back() {
        let b = Budget::new(100, 100);
        let mut a = b.reserve(60, "a", None).unwrap();
        assert!(b.reserve(50, "b", None).is_err());
        let c = b.reserve(40, "c", None).unwrap();
        assert_eq!(b.used(), 100);
        drop(c);
        a.join(b.reserve(10, "d", None).unwrap());
        assert_eq!(b.used(), 70);
        drop(a);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_client_holds_its_share_at_most() {
        let b = Budget::new(100, 40);
        let one = Some(Client::V4(1));
        let x = b.reserve(30, "x", one).unwrap();
        let e = b.reserve(20, "y", one).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::TOO_MANY_REQUESTS, "{}", e.message);
        assert!(e.message.contains("share"), "{}", e.message);
        // Beside the first's 30, the second's share is half of the 70 left.
        assert!(b.reserve(40, "z", Some(Client::V4(2))).is_err());
        let other = b.reserve(35, "z", Some(Client::V4(2))).unwrap();
        assert_eq!(b.used(), 65);
        drop(x);
        assert!(b.reserve(40, "again", one).is_err());
        let again = b.reserve(30, "again", one).unwrap();
        let full = b.reserve(70, "w", None).unwrap_err();
        assert_eq!(full.status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        drop((other, again));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn shares_shrink_as_the_budget_fills_and_a_newcomer_still_fits() {
        let b = Budget::new(1000, 250);
        let mut held = Vec::new();
        let mut took = Vec::new();
        for k in 0..8 {
            let c = Some(Client::V4(k));
            let mut mine = 0;
            while let Ok(r) = b.reserve(10, "m", c) {
                held.push(r);
                mine += 10;
            }
            took.push(mine);
        }
        assert_eq!(took[..4], [250, 250, 250, 120], "the share, then half of what is left");
        assert!(took.iter().all(|&t| t > 0), "every newcomer found room: {took:?}");
    }
}
