use crate::{Action, Error, ParamInfo, State};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const CANCEL_SLOTS: usize = 1024;
static CANCELLED: [AtomicBool; CANCEL_SLOTS] = [const { AtomicBool::new(false) }; CANCEL_SLOTS];
static TAKEN: [AtomicBool; CANCEL_SLOTS] = [const { AtomicBool::new(false) }; CANCEL_SLOTS];

/// A way to stop a decision from outside before its time is up (a server whose client went
/// away): one of a fixed set of flags, so that a [`Budget`] stays `Copy`. Searches look at it
/// when they look at the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancel(u16);

impl Cancel {
    /// Whether the decision was told to stop.
    pub fn is_set(self) -> bool {
        CANCELLED[self.0 as usize].load(Ordering::Relaxed)
    }
}

/// Owns a [`Cancel`] flag while a decision runs; [`CancelHandle::cancel`] sets it, dropping the
/// handle frees it for another decision.
#[derive(Debug)]
pub struct CancelHandle(u16);

impl CancelHandle {
    /// A free flag, or `None` when all are in use (the decision then runs to its time).
    pub fn new() -> Option<CancelHandle> {
        (0..CANCEL_SLOTS).find_map(|i| {
            TAKEN[i].compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).ok()?;
            CANCELLED[i].store(false, Ordering::Relaxed);
            Some(CancelHandle(i as u16))
        })
    }

    /// The flag to put in a [`Budget`].
    pub fn token(&self) -> Cancel {
        Cancel(self.0)
    }

    /// Tells the decision to stop.
    pub fn cancel(&self) {
        CANCELLED[self.0 as usize].store(true, Ordering::Relaxed);
    }
}

impl Drop for CancelHandle {
    fn drop(&mut self) {
        CANCELLED[self.0 as usize].store(false, Ordering::Relaxed);
        TAKEN[self.0 as usize].store(false, Ordering::Release);
    }
}

/// Limits on one decision, set from outside the agent (the arena's `--move-time`, a web
/// request). An agent also honours the limits in its own spec; whichever is reached first stops it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Wall-clock time for this move.
    pub time: Option<Duration>,
    /// Search iterations (MCTS playouts).
    pub iterations: Option<u64>,
    /// Search nodes.
    pub nodes: Option<u64>,
    /// Search depth in plies.
    pub depth: Option<u32>,
    /// How long before the end of its time a timed search stops, kept in reserve for delays the
    /// agent cannot control: the machine descheduling it, the caller's own work (the "move
    /// overhead" of chess engines). `None`: 5% of the time, at most 15 ms.
    pub overhead: Option<Duration>,
    /// The moment the answer is due, whatever the agent's own options say: a search that uses
    /// another agent inside (a playout policy) passes its own deadline down, so no nested agent
    /// can keep its caller past its time.
    pub deadline: Option<Instant>,
    /// Stops the decision early when set (searches answer with what they have).
    pub cancel: Option<Cancel>,
}

impl Budget {
    /// No outside limit: the agent's own options decide.
    pub const UNLIMITED: Budget =
        Budget { time: None, iterations: None, nodes: None, depth: None, overhead: None, deadline: None, cancel: None };

    /// A wall-clock budget.
    pub fn time(time: Duration) -> Self {
        Budget { time: Some(time), ..Budget::UNLIMITED }
    }

    /// The budget of an agent called inside a search: no limits but the caller's deadline.
    pub fn nested(deadline: Option<Instant>) -> Self {
        Budget { deadline, ..Budget::UNLIMITED }
    }

    /// Whether the decision was told to stop from outside.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_set)
    }

    /// The time limit of a decision: the tighter of the agent's own `time` option and this
    /// budget's.
    pub fn time_for(&self, own: Option<Duration>) -> Option<Duration> {
        match (own, self.time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a decision is on a clock (a time limit or a deadline): such searches play a
    /// forced move at once.
    pub fn is_timed(&self, own: Option<Duration>) -> bool {
        self.time_for(own).is_some() || self.deadline.is_some()
    }

    /// When a search that started at `start` must stop: [`Budget::overhead`] before its time
    /// (the agent's own `time` or this budget's, the tighter) is up, by default a little (5%,
    /// at most 15 ms) so that finishing the last step, choosing the move and a busy machine's
    /// scheduling delays stay within it; and never after [`Budget::deadline`]. `None` when
    /// neither limits it, and also when the time is so long that no clock can represent its
    /// end (saturating instead of overflowing).
    pub fn stop_at(&self, start: Instant, own: Option<Duration>) -> Option<Instant> {
        let by_time = self.time_for(own).and_then(|t| {
            let reserve = self.overhead.unwrap_or_else(|| (t / 20).min(Duration::from_millis(15)));
            start.checked_add(t.saturating_sub(reserve))
        });
        match (by_time, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A player: chooses an action for the player to move. Agents may keep state between moves (a
/// search tree to reuse); a new game gets a new agent.
pub trait Agent<S: State>: Send {
    /// The spec this agent was built from, with every option spelled out.
    fn spec(&self) -> String;

    /// Chooses a legal action for `state.current_player()`.
    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error>;

    /// The fixed memory the agent takes while it plays (transposition tables, its nested
    /// agents'), in bytes, known before its first move: a tournament adds it up over the games
    /// it plays at once and refuses a match the machine cannot hold. Search trees that grow
    /// with the budget are bounded separately and not counted.
    fn memory_bytes(&self) -> u64 {
        0
    }

    /// The most memory the agent may hold while it plays: [`Agent::memory_bytes`] plus what its
    /// search trees may grow to (searches that keep a tree stop growing it at
    /// [`crate::limits::max_tree_bytes`]). A server that runs agents for strangers reserves this
    /// much for each.
    fn memory_bound(&self) -> u64 {
        self.memory_bytes()
    }

    /// The moves the last [`Agent::act`] weighed, best first, with what its search saw of each
    /// (for people: an analysis panel, a verbose log). Empty for agents that keep no statistics.
    fn analysis(&self) -> Vec<MoveStat> {
        Vec::new()
    }

    /// The line the last [`Agent::act`] expects, its chosen move first (alpha-beta's principal
    /// variation, MCTS's most visited path); empty for agents that do not look ahead.
    fn line(&self) -> Vec<Action> {
        Vec::new()
    }
}

/// One move an agent weighed, as [`Agent::analysis`] reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveStat {
    pub action: Action,
    /// Search visits (MCTS, AlphaZero).
    pub visits: Option<u64>,
    /// The mover's expected result after the move, in 0..=1 (win 1, loss 0), where the search
    /// estimates one.
    pub value: Option<f64>,
}

/// An agent behind a pointer, as registries build them from specs.
pub type BoxedAgent<S> = Box<dyn Agent<S>>;

/// Static description of an agent: name, one line, options with defaults.
#[derive(Clone, Copy, Debug)]
pub struct AgentInfo {
    /// Name used in spec strings.
    pub name: &'static str,
    /// What the agent does.
    pub about: &'static str,
    /// Options accepted after the colon.
    pub params: &'static [ParamInfo],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_keeps_the_overhead_in_reserve_and_meets_the_deadline() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let at = |b: Budget, own| b.stop_at(start, own);
        assert_eq!(at(Budget::time(ms(300)), None), Some(start + ms(285)), "default: 5%, at most 15 ms");
        assert_eq!(at(Budget::time(ms(100)), None), Some(start + ms(95)));
        assert_eq!(at(Budget::UNLIMITED, Some(ms(100))), Some(start + ms(95)), "the agent's own time");
        assert_eq!(at(Budget::time(ms(300)), Some(ms(100))), Some(start + ms(95)), "the tighter time");
        let reserve = Budget { overhead: Some(ms(60)), ..Budget::time(ms(300)) };
        assert_eq!(at(reserve, None), Some(start + ms(240)));
        let all = Budget { overhead: Some(ms(500)), ..Budget::time(ms(300)) };
        assert_eq!(at(all, None), Some(start), "an overhead beyond the time leaves none");
        let nested = Budget::nested(Some(start + ms(10)));
        assert_eq!(at(nested, Some(ms(300))), Some(start + ms(10)), "the caller's deadline comes first");
        assert_eq!(at(nested, None), Some(start + ms(10)));
        assert!(nested.is_timed(None) && !Budget::UNLIMITED.is_timed(None));
        assert_eq!(at(Budget::UNLIMITED, None), None);
    }

    #[test]
    fn an_endless_time_saturates_instead_of_overflowing() {
        let start = Instant::now();
        let forever = Budget::time(Duration::from_secs(9_300_000_000_000_000_000));
        assert_eq!(forever.stop_at(start, None), None, "no representable end: no deadline");
        let capped = Budget { deadline: Some(start), ..forever };
        assert_eq!(capped.stop_at(start, Some(Duration::MAX)), Some(start));
    }
}
