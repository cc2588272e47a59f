//! Each client's open connections, so that one at its share makes way for its newest instead of
//! refusing it. Every address of this machine is one client (the person's browser and any local
//! process alike): were new connections refused at the share, a process holding idle sockets
//! would cut the browser off. A connection answering a request (an event stream included, for
//! as long as its body flows) is busy and never closed so; an idle one (a keep-alive between
//! requests, or one that has not finished sending a request) is, the longest idle first.

use crate::clients::Client;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Notify;

/// One open connection.
pub(crate) struct Conn {
    /// Requests being answered on it (a response's body counts until it ends).
    busy: AtomicUsize,
    /// When it last became idle (or opened).
    idle_since: Mutex<Instant>,
    /// Told to close: the task serving it drops it.
    pub(crate) close: Notify,
}

impl Conn {
    pub(crate) fn new() -> Arc<Conn> {
        Arc::new(Conn { busy: AtomicUsize::new(0), idle_since: Mutex::new(Instant::now()), close: Notify::new() })
    }

    fn idle(&self) -> Option<Instant> {
        (self.busy.load(Ordering::Acquire) == 0).then(|| *self.idle_since.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Marks its connection busy while it lives: held by a request's handling and then by its
/// response's body.
pub(crate) struct Busy(Arc<Conn>);

impl Busy {
    pub(crate) fn new(conn: &Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy(conn.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Default)]
pub(crate) struct Open {
    by_client: Mutex<HashMap<Client, Vec<Arc<Conn>>>>,
    /// Clients with a newcomer waiting for a connection to make way (one at a time each).
    waiting: Mutex<HashSet<Client>>,
}

impl Open {
    pub(crate) fn add(&self, client: Client, conn: &Arc<Conn>) {
        self.by_client.lock().unwrap_or_else(|e| e.into_inner()).entry(client).or_default().push(conn.clone());
    }

    pub(crate) fn remove(&self, client: Client, conn: &Arc<Conn>) {
        let mut all = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = all.get_mut(&client) {
            list.retain(|c| !Arc::ptr_eq(c, conn));
            if list.is_empty() {
                all.remove(&client);
            }
        }
    }

    /// Tells `client`'s longest idle connection to close; whether it had one.
    pub(crate) fn evict_idle(&self, client: Client) -> bool {
        let all = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        let oldest =
            all.get(&client).and_then(|list| list.iter().filter_map(|c| Some((c.idle()?, c))).min_by_key(|x| x.0));
        match oldest {
            Some((_, c)) => {
                c.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Marks `client` as having a newcomer waiting; false if one waits already.
    pub(crate) fn wait(&self, client: Client) -> bool {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).insert(client)
    }

    pub(crate) fn done_waiting(&self, client: Client) {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_connection_makes_way_and_a_busy_one_never() {
        let open = Open::default();
        let client = Client::V4(1);
        let (a, b) = (Conn::new(), Conn::new());
        open.add(client, &a);
        open.add(client, &b);
        let busy_a = Busy::new(&a);
        assert!(open.evict_idle(client), "b is idle");
        let closed = b.close.notified();
        drop(closed);
        let busy_b = Busy::new(&b);
        assert!(!open.evict_idle(client), "both busy: none makes way");
        drop(busy_a);
        assert!(open.evict_idle(client), "a is idle again");
        drop(busy_b);
        open.remove(client, &a);
        open.remove(client, &b);
        assert!(!open.evict_idle(client));
    }
}
