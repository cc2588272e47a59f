//! Fair shares of the machine's threads. Agents' moves and analyses wait here for threads to
//! think on; whoever waits is served in this order: a move a person is waiting for before an
//! agent-only match's, then the client holding the fewest threads, then first come. Beyond the
//! shared threads a pool keeps a reserve that only a client's first person-facing job may use,
//! so a person's opponent answers at once however busy a stranger keeps the shared threads
//! (searches are budgeted by time, so nothing is preempted: the reserve is what keeps a place
//! free). No client may hold more than the shared threads. Whether a waiting job is a person's
//! is asked again each time threads are handed out: a person who sits down at a table while its
//! agent waits moves that agent up, and a seat nobody holds lends its agents no priority.

use crate::clients::Client;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Who waits for a job's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A person: an agent's move at a table with a person, an analysis someone asked for.
    Person,
    /// Nobody in particular: an agent-only match.
    Background,
}

#[derive(Default, Debug, Clone, Copy)]
struct Use {
    threads: usize,
    person: usize,
}

struct Waiter {
    client: Option<Client>,
    class: Box<dyn Fn() -> Class + Send>,
    threads: usize,
    tx: oneshot::Sender<Grant>,
}

#[derive(Default)]
struct State {
    running: usize,
    background: usize,
    clients: HashMap<Option<Client>, Use>,
    waiting: Vec<Waiter>,
}

/// Threads to think on.
pub struct Pool {
    shared: usize,
    reserve: usize,
    state: Mutex<State>,
}

/// Threads held until dropped.
pub struct Grant {
    pool: Arc<Pool>,
    client: Option<Client>,
    class: Class,
    threads: usize,
    /// Already given back (a grant its waiter had gone before it arrived).
    released: bool,
}

impl Pool {
    pub fn new(shared: usize, reserve: usize) -> Arc<Pool> {
        Arc::new(Pool { shared: shared.max(1), reserve, state: Mutex::new(State::default()) })
    }

    /// Threads free for anyone (the reserve aside).
    pub fn free(&self) -> usize {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.saturating_sub(s.running)
    }

    /// Jobs waiting for threads.
    pub fn waiting(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).waiting.len()
    }

    fn fits(&self, s: &State, client: Option<Client>, class: Class, threads: usize) -> bool {
        let used = s.clients.get(&client).copied().unwrap_or_default();
        if s.running + threads > self.shared + self.reserve {
            return false;
        }
        match class {
            Class::Background => s.background + threads <= self.shared && used.threads + threads <= self.shared,
            Class::Person => used.threads + threads <= self.shared || used.person == 0,
        }
    }

    fn take(&self, s: &mut State, client: Option<Client>, class: Class, threads: usize) {
        s.running += threads;
        if class == Class::Background {
            s.background += threads;
        }
        let used = s.clients.entry(client).or_default();
        used.threads += threads;
        if class == Class::Person {
            used.person += 1;
        }
    }

    fn put_back(&self, s: &mut State, client: Option<Client>, class: Class, threads: usize) {
        s.running -= threads;
        if class == Class::Background {
            s.background -= threads;
        }
        if let Some(used) = s.clients.get_mut(&client) {
            used.threads -= threads;
            if class == Class::Person {
                used.person -= 1;
            }
            if used.threads == 0 && used.person == 0 {
                s.clients.remove(&client);
            }
        }
    }

    /// Hands free threads to the waiters they fit, in the pool's order.
    fn dispatch(self: &Arc<Self>, s: &mut State) {
        loop {
            s.waiting.retain(|w| !w.tx.is_closed());
            let classes: Vec<Class> = s.waiting.iter().map(|w| (w.class)()).collect();
            let pick = (0..s.waiting.len())
                .filter(|&i| {
                    let w = &s.waiting[i];
                    self.fits(s, w.client, classes[i], w.threads)
                })
                .min_by_key(|&i| {
                    let w = &s.waiting[i];
                    let used = s.clients.get(&w.client).map_or(0, |u| u.threads);
                    (classes[i] == Class::Background, used, i)
                });
            let Some(i) = pick else { return };
            let (w, class) = (s.waiting.remove(i), classes[i]);
            self.take(s, w.client, class, w.threads);
            let grant = Grant { pool: self.clone(), client: w.client, class, threads: w.threads, released: false };
            if let Err(mut unwanted) = w.tx.send(grant) {
                // Its waiter went away meanwhile: the threads go back here, under this lock.
                unwanted.released = true;
                self.put_back(s, w.client, class, w.threads);
            }
        }
    }

    /// Looks at the waiters again: someone's class may have changed (a person sat down).
    pub fn recheck(self: &Arc<Self>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatch(&mut s);
    }

    /// Waits for `threads` threads (at most the shared ones) for `client`'s job of `class`.
    /// Dropping the future before it is granted leaves the queue.
    pub async fn acquire(self: &Arc<Self>, client: Option<Client>, class: Class, threads: usize) -> Grant {
        self.acquire_as(client, move || class, threads).await
    }

    /// [`Pool::acquire`] for a job whose class may change while it waits: `class` is asked
    /// whenever threads are handed out (under the pool's lock, so it must only read atomics).
    pub async fn acquire_as(
        self: &Arc<Self>,
        client: Option<Client>,
        class: impl Fn() -> Class + Send + 'static,
        threads: usize,
    ) -> Grant {
        let threads = threads.clamp(1, self.shared);
        let rx = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let (tx, rx) = oneshot::channel();
            s.waiting.push(Waiter { client, class: Box::new(class), threads, tx });
            self.dispatch(&mut s);
            rx
        };
        // The sender lives in the queue until it is granted; the pool outlives every waiter.
        rx.await.expect("a waiter is granted threads or its pool is dropped after it")
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let pool = self.pool.clone();
        let mut s = pool.state.lock().unwrap_or_else(|e| e.into_inner());
        pool.put_back(&mut s, self.client, self.class, self.threads);
        pool.dispatch(&mut s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now<T>(f: impl Future<Output = T>) -> Option<T> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async { tokio::time::timeout(std::time::Duration::from_millis(50), f).await.ok() })
    }

    const A: Option<Client> = Some(Client::V4(1));
    const B: Option<Client> = Some(Client::V4(2));

    #[test]
    fn background_work_leaves_the_reserve_to_people() {
        let pool = Pool::new(2, 1);
        let bg1 = now(pool.acquire(A, Class::Background, 1)).unwrap();
        let bg2 = now(pool.acquire(A, Class::Background, 1)).unwrap();
        assert!(now(pool.acquire(A, Class::Background, 1)).is_none(), "background holds the shared threads only");
        assert_eq!(pool.free(), 0);
        // A person's job, from elsewhere or from the same client, takes the reserve at once.
        let person = now(pool.acquire(B, Class::Person, 1)).unwrap();
        assert!(now(pool.acquire(A, Class::Person, 1)).is_none(), "the reserve is in use");
        drop(person);
        let same = now(pool.acquire(A, Class::Person, 1)).unwrap();
        drop((bg1, bg2, same));
        assert_eq!(pool.free(), 2);
    }

    #[test]
    fn a_client_holds_at_most_the_shared_threads_and_the_fewest_go_first() {
        let pool = Pool::new(2, 1);
        let a1 = now(pool.acquire(A, Class::Person, 1)).unwrap();
        let a2 = now(pool.acquire(A, Class::Person, 1)).unwrap();
        assert!(now(pool.acquire(A, Class::Person, 1)).is_none(), "A holds its two");
        let b1 = now(pool.acquire(B, Class::Person, 1)).unwrap();
        drop(b1);
        let full = Pool::new(2, 0);
        let a1b = now(full.acquire(A, Class::Person, 1)).unwrap();
        let a2b = now(full.acquire(A, Class::Person, 1)).unwrap();
        // Full. A and then B wait; when a thread frees, B (holding none) goes before A (one).
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let pa = full.clone();
            let wait_a = tokio::spawn(async move { pa.acquire(A, Class::Person, 1).await });
            tokio::task::yield_now().await;
            let pb = full.clone();
            let wait_b = tokio::spawn(async move { pb.acquire(B, Class::Person, 1).await });
            tokio::task::yield_now().await;
            assert_eq!(full.waiting(), 2);
            drop(a1b);
            let granted_b = tokio::time::timeout(std::time::Duration::from_millis(100), wait_b).await;
            assert!(granted_b.is_ok(), "B, holding fewer threads, goes first");
            assert!(!wait_a.is_finished());
            wait_a.abort();
        });
        drop((a1, a2, a2b));
    }

    #[test]
    fn a_waiter_becomes_a_persons_when_someone_sits_down() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let pool = Pool::new(1, 1);
        let held = now(pool.acquire(A, Class::Background, 1)).unwrap();
        let seated = Arc::new(AtomicBool::new(false));
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let (p, s) = (pool.clone(), seated.clone());
            let class = move || if s.load(Ordering::Relaxed) { Class::Person } else { Class::Background };
            let mut waiting = tokio::spawn(async move { p.acquire_as(B, class, 1).await });
            let short = std::time::Duration::from_millis(50);
            assert!(tokio::time::timeout(short, &mut waiting).await.is_err(), "nobody at its table: it waits");
            seated.store(true, Ordering::Relaxed);
            pool.recheck();
            let grant = tokio::time::timeout(short, waiting).await;
            assert!(grant.is_ok(), "a person sat down: it takes the reserve");
        });
        drop(held);
    }

    #[test]
    fn a_waiter_that_leaves_gives_back_nothing_it_did_not_get() {
        let pool = Pool::new(1, 0);
        let held = now(pool.acquire(A, Class::Background, 4)).unwrap();
        assert!(now(pool.acquire(B, Class::Background, 1)).is_none());
        drop(held);
        assert_eq!(pool.free(), 1);
        assert_eq!(pool.waiting(), 0);
        let again = now(pool.acquire(B, Class::Background, 1)).unwrap();
        drop(again);
        assert_eq!(pool.free(), 1);
    }
}
