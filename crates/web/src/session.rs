//! One match as the server holds it: the moves so far (positions are rebuilt from sparse
//! checkpoints), the seats (people with their secret tokens, or agents), the chance stream and
//! the watch controls. Generic over the game; the server sees it through [`Session`].
//!
//! Nothing changes a match in place: a move, an undo, a claimed seat is first a [`Change`],
//! computed from the match as it is; the server has the store commit its [`Write`] and only
//! then [`Session::apply`]s it. A change the store cannot write is never played or shown.
//!
//! What a match keeps is bounded: actions (4 bytes a ply) and one position every
//! [`CHECKPOINT_EVERY`] plies, a ply cap, agents only while the game goes on. Nothing slow runs
//! here: agents are built and think inside [`Job`]s the server runs off its async threads and
//! outside the match's lock.

pub use meeple_arena::CHECKPOINT_EVERY;
use meeple_arena::Table;
use meeple_game::{Action, BoxedAgent, Budget, Game, GameRecord, Player, State, Turn};
use serde_json::{Value, json};
use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ApiError;

mod api;
mod open;
pub use api::*;

struct Seat<S: State> {
    spec: String,
    human: bool,
    /// A person seat's token: its creator kept it, or a player claimed it.
    token: Option<String>,
    /// Its invitation: unspent while `token` is `None`, the spent code once claimed.
    invite: Option<String>,
    /// The agent, absent for a person, while it thinks, before it is first built (inside its
    /// first job) and once the game is over.
    agent: Option<BoxedAgent<S>>,
    seed: u64,
    /// [`meeple_game::Agent::memory_bound`] of the agent as first built.
    bound: u64,
}

/// A match of game `G`.
pub struct Live<G: Game> {
    /// The game, its moves and its chance stream: what `meeple play` keeps too.
    table: Table<G>,
    spec: String,
    open: bool,
    owner: String,
    allowed: Allowed,
    seats: Vec<Seat<G::State>>,
    move_time: Duration,
    delay: Duration,
    paused: bool,
    step: bool,
    thinking: Option<Player>,
    /// A job is out: its agent thinking, or stopping after an undo took its line back. Its
    /// agent holds memory until the job comes back, so the match keeps its reservation and
    /// starts no second job until then (`thinking` is cleared by undo at once; this is not).
    out: bool,
    /// Stops the thinking agent's search early (undo, a dropped match).
    cancel: Option<Arc<meeple_game::CancelHandle>>,
    /// Bumped by every undo: a move computed for an older line is dropped.
    epoch: u64,
    error: Option<String>,
    /// Stopped at the ply cap.
    capped: bool,
    /// The seat that resigned: the game is over without its rules' end.
    resigned: Option<Player>,
    /// Why an agent's move is waiting for the store.
    stalled: Option<String>,
    /// A replay of a record: read-only, every seat's view open.
    replay: bool,
    /// The replay is a game this server kept, opened at its end (its page after a restart).
    ended: bool,
    /// Bumped by every change, so a client keeps the newest of the snapshots it receives.
    version: u64,
    /// Plies the store holds, and whether it holds the end.
    saved: usize,
    saved_end: bool,
}

/// Builds a match of the game named by `setup.game`; `tokens` gives each person seat its secret
/// and the match its owner's. Call off the async threads: agents are built here.
pub fn create(
    setup: &Setup,
    allowed: &Allowed,
    tokens: &mut dyn FnMut() -> String,
    os_seed: u64,
) -> Result<Box<dyn Session>, ApiError> {
    meeple_games::with_game!(setup.game.as_str(), |g| Live::new(g, setup, allowed, tokens, os_seed)
        .map(|m| Box::new(m) as Box<dyn Session>))?
}

/// Rebuilds a stored match and its moves (after a restart). Agents are built at their next move.
pub fn restore(
    stored: &Stored,
    moves: &[(Action, Option<f32>)],
    allowed: &Allowed,
) -> Result<Box<dyn Session>, ApiError> {
    meeple_games::with_game!(stored.game.as_str(), |g| Live::restore(g, stored, moves, allowed)
        .map(|m| Box::new(m) as Box<dyn Session>))?
}

/// Opens a record as a read-only match; `ended`: a game this server kept, shown at its end.
pub fn open_replay(
    record: &GameRecord,
    max_plies: usize,
    owner: String,
    ended: bool,
) -> Result<Box<dyn Session>, ApiError> {
    meeple_games::with_game!(record.game.as_str(), |g| Live::replay(g, record, max_plies, owner, ended)
        .map(|m| Box::new(m) as Box<dyn Session>))?
}

/// Whether a match at `ply` plies in `state` has reached a ply cap of `cap` (a replay has none).
fn capped<S: State>(cap: usize, replay: bool, ply: usize, state: &S) -> bool {
    ply >= cap && !state.is_terminal() && !replay
}

fn turn_json(turn: Turn) -> Value {
    match turn {
        Turn::Player(p) => json!({ "kind": "player", "player": p }),
        Turn::Chance => json!({ "kind": "chance" }),
        Turn::Terminal => json!({ "kind": "terminal" }),
    }
}

/// Tokens are compared in time that does not depend on where they differ.
fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl<G: Game> Live<G> {
    fn latest_ply(&self) -> usize {
        self.table.ply()
    }

    fn state_at(&self, ply: usize) -> G::State {
        self.table.state_at(ply)
    }

    fn push(&mut self, action: Action, ms: Option<f32>) -> Result<(), meeple_game::Error> {
        self.table.push(action, ms)?;
        self.version += 1;
        if self.table.latest().is_terminal() {
            // The game is over: its agents (tables, trees) are not needed any more.
            for seat in &mut self.seats {
                seat.agent = None;
            }
        }
        Ok(())
    }

    /// Takes the line back to `ply` plies.
    fn truncate(&mut self, ply: usize) {
        self.table.truncate(ply);
        self.saved = self.saved.min(ply);
        self.version += 1;
    }

    /// Nature moves at once (a new match's deal, a restored match's next draw).
    fn resolve_chance(&mut self) {
        let mut outcomes = Vec::new();
        while self.table.latest().turn() == Turn::Chance && !self.halted() {
            let a = self.table.draw(self.table.latest(), self.latest_ply(), &mut outcomes);
            self.push(a, None).expect("a listed chance outcome applies");
            self.check_cap();
        }
    }

    /// Whether a match at `ply` plies in `state` has reached the server's ply cap.
    fn capped_at(&self, ply: usize, state: &G::State) -> bool {
        capped(self.allowed.max_plies, self.replay, ply, state)
    }

    /// No more moves: the server's ply cap, or a resignation.
    fn halted(&self) -> bool {
        self.capped || self.resigned.is_some()
    }

    fn check_cap(&mut self) {
        if self.capped_at(self.latest_ply(), self.table.latest()) {
            self.capped = true;
            self.error = Some(format!("the match stopped at this server's limit of {} plies", self.allowed.max_plies));
            for seat in &mut self.seats {
                seat.agent = None;
            }
        }
    }

    /// `first` and nature's moves after it (to the ply cap), played on a copy of the latest
    /// position: the moves, and the position they lead to.
    #[allow(clippy::type_complexity)]
    fn follow(
        &self,
        first: Action,
        ms: Option<f32>,
    ) -> Result<(Vec<(Action, Option<f32>)>, G::State), meeple_game::Error> {
        let (cap, replay) = (self.allowed.max_plies, self.replay);
        self.table.follow(first, ms, |ply, state| capped(cap, replay, ply, state))
    }

    /// The change that cuts the line to `base` plies and plays `new` after it (leading to
    /// `last`), writing whatever the store has not seen before `base` too.
    fn change(
        &self,
        base: usize,
        new: Vec<(Action, Option<f32>)>,
        last: Option<&G::State>,
        setup: Option<Stored>,
        effect: Effect,
    ) -> Change {
        let keep = self.saved.min(base);
        let mut moves: Vec<(usize, Action, Option<f32>)> =
            (keep..base).map(|k| (k, self.table.actions()[k], self.table.ms(k))).collect();
        moves.extend(new.iter().enumerate().map(|(i, &(a, ms))| (base + i, a, ms)));
        let finished = match last {
            Some(s) if s.is_terminal() || self.capped_at(base + new.len(), s) => {
                let line = self.table.actions()[..base].iter().copied().chain(new.iter().map(|m| m.0));
                Some(self.record_of(line, s))
            }
            Some(_) => None,
            None => (base == self.latest_ply() && self.finished() && !self.saved_end).then(|| self.record()),
        };
        Change { write: Write { keep, moves, setup, finished }, effect }
    }

    /// A change of who holds the seats: tokens and invitations.
    fn seats_change(&self, tokens: Vec<Option<String>>, invites: Vec<Option<String>>) -> Change {
        let setup = self.stored().map(|s| Stored { tokens: tokens.clone(), invites: invites.clone(), ..s });
        self.change(self.latest_ply(), Vec::new(), None, setup, Effect::Seats { tokens, invites })
    }

    /// The change that pauses the match because an agent could not move.
    fn failed(&self, error: String) -> Change {
        let setup = self.stored().map(|s| Stored { paused: true, ..s });
        let (epoch, ply) = (self.epoch, self.latest_ply());
        self.change(ply, Vec::new(), None, setup, Effect::Failed { epoch, ply, error })
    }

    /// The game along `line` from the start, ending in `last`, as an arena record.
    fn record_of(&self, line: impl Iterator<Item = Action>, last: &G::State) -> GameRecord {
        let agents = self.seats.iter().map(|s| s.spec.clone()).collect();
        self.table.record_of(line, last, agents, self.resigned)
    }

    fn has_human(&self) -> bool {
        self.seats.iter().any(|s| s.human)
    }

    fn status(&self) -> &'static str {
        if self.ended {
            "over"
        } else if self.replay {
            "replay"
        } else if self.table.latest().is_terminal() || self.resigned.is_some() {
            "over"
        } else if self.capped {
            "stopped"
        } else if self.stalled.is_some() {
            "stalled"
        } else if self.thinking.is_some() {
            "thinking"
        } else if self.paused {
            "paused"
        } else {
            "playing"
        }
    }

    fn log_lines(&self, from: usize, to: usize, who: Player) -> Vec<Value> {
        let line = self.table.line(from, to, who).into_iter();
        line.map(|m| match m.mover {
            None => json!({ "ply": m.ply, "chance": true, "text": m.text, "words": m.words }),
            Some(p) => json!({ "ply": m.ply, "player": p, "text": m.text, "words": m.words, "ms": m.ms }),
        })
        .collect()
    }

    /// The position before the last person's move, if nature has not moved since, and whose move
    /// it was.
    fn undo_target(&self) -> Result<(usize, Player), String> {
        if self.halted() {
            return Err("the game is over: its moves stand".into());
        }
        self.table.undo_target(|p| self.seats[p].human)
    }
}

impl<G: Game> Session for Live<G> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn access(&self, token: Option<&str>) -> Access {
        let Some(t) = token.filter(|t| !t.is_empty()) else { return Access::default() };
        let seat = self.seats.iter().position(|s| s.token.as_deref().is_some_and(|mine| same_token(mine, t)));
        Access { seat, owner: !self.owner.is_empty() && same_token(&self.owner, t) }
    }

    fn check_viewer(&self, viewer: Option<Player>, access: Access) -> Result<(), ApiError> {
        let Some(v) = viewer else { return Ok(()) };
        if v >= self.seats.len() {
            return Err(ApiError::bad(format!("viewer {v} is not a seat: seats are 0..{}", self.seats.len())));
        }
        // A person sees their own seat; other seats' hidden information only once nobody can
        // profit from it (no person plays, or the game is over).
        if access.seat == Some(v) || self.public() {
            Ok(())
        } else if self.seats[v].human {
            Err(ApiError::forbidden(format!("seat {v}'s view needs that seat's token (from its join link)")))
        } else {
            Err(ApiError::forbidden(format!(
                "seat {v} is an agent's: a person at this table may view their own seat or be a spectator"
            )))
        }
    }

    fn snapshot(&self, viewer: Option<Player>, ply: Option<usize>, log_from: Option<usize>) -> Result<Value, ApiError> {
        let latest = self.latest_ply();
        let ply = ply.unwrap_or(latest);
        if ply > latest {
            return Err(ApiError::bad(format!("ply {ply} is beyond the last ply, {latest}")));
        }
        let state = self.state_at(ply);
        let who = viewer.unwrap_or(SPECTATOR);
        let start = match log_from {
            Some(f) => f.min(ply),
            None => ply.saturating_sub(LOG_PAGE),
        };
        let end = ply.min(start + LOG_PAGE);
        let log = self.log_lines(start, end, who);
        let mover = state.current_player();
        let may_move = ply == latest
            && !self.replay
            && !self.halted()
            && self.thinking.is_none()
            && mover.is_some_and(|p| viewer == Some(p) && self.seats[p].human);
        let mut legal = Vec::new();
        if may_move {
            let mut ids = Vec::new();
            state.legal_actions(&mut ids);
            legal = ids
                .iter()
                .map(|&a| {
                    json!({ "id": a, "text": state.action_to_string(a), "words": state.describe_for(who, a), "path": state.action_path(a) })
                })
                .collect();
        }
        let result = match self.resigned.filter(|_| ply == latest) {
            Some(p) => Some(json!({
                "returns": GameRecord::resignation_returns(self.seats.len(), p), "scores": state.scores().as_slice(),
                "resigned": p,
            })),
            None => state.returns().map(|r| json!({ "returns": r.as_slice(), "scores": state.scores().as_slice() })),
        };
        // Whether a person holds each person seat (a seat whose invitation is unclaimed waits).
        let seats: Vec<Value> = self
            .seats
            .iter()
            .map(|s| json!({ "spec": s.spec, "human": s.human, "seated": s.token.is_some() }))
            .collect();
        let undoable = !self.replay && self.undo_target().is_ok_and(|(_, p)| viewer == Some(p));
        // The last move a player made before this ply, to mark on the board: its click targets,
        // and those of every step of that player's turn (a multi-step turn, Catan's builds),
        // back to another player's move.
        let t = &self.table;
        let last = (0..ply).rev().find_map(|k| t.mover(k).map(|p| (k, p))).map(|(k, player)| {
            let first = (0..k).rev().find(|&j| t.mover(j).is_some_and(|q| q != player)).map_or(0, |j| j + 1);
            let paths: Vec<Vec<String>> = (first..=k)
                .filter(|&j| t.mover(j) == Some(player))
                .map(|j| self.state_at(j).action_path(t.actions()[j]))
                .collect();
            json!({ "ply": k + 1, "player": player, "path": paths.last(), "turn": paths })
        });
        let prompt = if state.is_terminal() { None } else { state.prompt() };
        // The seed fixes every deal and die: it is shown once nothing it could reveal matters;
        // as a string, since JavaScript's numbers round a u64 above 2^53.
        let seed = if self.public() { json!(self.table.seed().to_string()) } else { Value::Null };
        Ok(json!({
            "game": self.spec, "name": G::INFO.name, "seed": seed, "open": self.open, "ply": ply, "plies": latest,
            "viewer": viewer, "seats": seats, "turn": turn_json(state.turn()), "view": state.view(viewer),
            "legal": legal, "log": log, "log_start": start, "result": result, "status": self.status(),
            "thinking": self.thinking, "paused": self.paused, "delay_ms": self.delay.as_millis() as u64,
            "move_time_ms": self.move_time.as_millis() as u64, "error": self.stalled.as_ref().or(self.error.as_ref()), "replay": self.replay,
            "undoable": undoable, "version": self.version, "prompt": prompt, "last": last,
        }))
    }

    fn summary(&self) -> Value {
        let seats: Vec<&str> = self.seats.iter().map(|s| s.spec.as_str()).collect();
        let seed = if self.public() { json!(self.table.seed().to_string()) } else { Value::Null };
        json!({ "game": self.spec, "seats": seats, "ply": self.latest_ply(), "status": self.status(), "open": self.open, "seed": seed })
    }

    fn seats(&self) -> usize {
        self.seats.len()
    }

    fn mover(&self) -> Option<Player> {
        self.table.latest().current_player()
    }

    fn ply(&self) -> usize {
        self.latest_ply()
    }

    fn submit(&self, request: &MoveRequest, access: Access) -> Result<Change, ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        if self.capped {
            return Err(ApiError::conflict("the match has stopped at the server's ply limit", self.ply()));
        }
        if let Some(p) = self.resigned {
            return Err(ApiError::conflict(format!("the game is over: seat {p} resigned"), self.ply()));
        }
        if request.ply != self.ply() {
            return Err(ApiError::conflict(
                format!("stale move: it answers ply {}, the game is at ply {}", request.ply, self.ply()),
                self.ply(),
            ));
        }
        let mover = match self.table.latest().turn() {
            Turn::Terminal => return Err(ApiError::conflict("the game is over", self.ply())),
            Turn::Chance => return Err(ApiError::conflict("nature is to move", self.ply())),
            Turn::Player(p) => p,
        };
        if !self.seats[mover].human {
            return Err(ApiError::conflict(
                format!("seat {mover} ({}) is to move, not a person", self.seats[mover].spec),
                self.ply(),
            ));
        }
        if access.seat != Some(mover) {
            return Err(ApiError::forbidden(format!(
                "seat {mover} is to move: its move needs that seat's token (from its join link)"
            )));
        }
        let state = self.table.latest();
        let action = match (&request.action, request.id) {
            (Some(text), None) => state.parse_action(text).map_err(|e| ApiError::unprocessable(e.to_string()))?,
            (None, Some(id)) => id,
            _ => {
                return Err(ApiError::bad("give the move as \"action\" (notation) or \"id\" (action id), one of them"));
            }
        };
        if !state.is_legal(action) {
            return Err(ApiError::unprocessable(format!(
                "illegal move: {}",
                if action as usize >= self.table.game().num_actions() {
                    format!("action id {action} is outside 0..{}", self.table.game().num_actions())
                } else {
                    state.illegal_reason(action)
                }
            )));
        }
        let (new, last) = self.follow(action, None).map_err(|e| ApiError::unprocessable(e.to_string()))?;
        Ok(self.change(self.latest_ply(), new, Some(&last), None, Effect::Moves))
    }

    fn undo(&self, ply: usize, access: Access) -> Result<(Change, usize), ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        if ply != self.ply() {
            return Err(ApiError::conflict(
                format!("stale undo: it was asked at ply {ply}, the game is at ply {}", self.ply()),
                self.ply(),
            ));
        }
        let (target, whose) = self.undo_target().map_err(|why| ApiError::conflict(why, self.ply()))?;
        if access.seat != Some(whose) {
            return Err(ApiError::forbidden(format!(
                "the move to take back is seat {whose}'s: only that seat's token may take it back"
            )));
        }
        Ok((self.change(target, Vec::new(), None, None, Effect::Undo { to: target }), target))
    }

    fn control(&self, control: &Control) -> Result<Change, ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        if let Some(ms) = control.delay_ms
            && Duration::from_millis(ms) > MAX_DELAY
        {
            return Err(ApiError::bad(format!("delay_ms {ms} is above {}", MAX_DELAY.as_millis())));
        }
        // The controls are for watching agents: the owner of a table with people at it must not
        // hold their game (or pace it).
        if self.has_human() {
            return Err(ApiError::conflict(
                "pause, step and the pause between moves are for matches of agents only: people play at this one",
                self.ply(),
            ));
        }
        let setup = self.stored().map(|s| Stored {
            delay_ms: control.delay_ms.unwrap_or(s.delay_ms),
            paused: control.paused.unwrap_or(s.paused),
            ..s
        });
        Ok(self.change(self.latest_ply(), Vec::new(), None, setup, Effect::Control(control.clone())))
    }

    fn resign(&self, access: Access) -> Result<Change, ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        let Some(p) = access.seat.filter(|&p| self.seats[p].human) else {
            return Err(ApiError::forbidden("resigning needs the token of a person's seat"));
        };
        if self.finished() {
            return Err(ApiError::conflict("the game is over already", self.ply()));
        }
        let others = (0..self.seats.len()).filter(|&q| q != p && self.seats[q].human).count();
        if self.seats.len() > 2 && others > 0 {
            return Err(ApiError::conflict(
                format!(
                    "{others} other {} at this table: a resignation would end their game too (leave the page instead; \
                     an offer put to you is declined for you after the server's answer time)",
                    if others == 1 { "person plays" } else { "people play" }
                ),
                self.ply(),
            ));
        }
        let setup = self.stored().map(|s| Stored { resigned: Some(p), ..s });
        let mut change = self.change(self.latest_ply(), Vec::new(), None, setup, Effect::Resign { seat: p });
        let mut record = self.record();
        record.returns = Some(GameRecord::resignation_returns(self.seats.len(), p));
        record.metrics = Default::default();
        record.resigned = Some(p);
        change.write.finished = Some(record);
        Ok(change)
    }

    fn claim(&self, invite: &str, token: String) -> Result<(Change, Player), ApiError> {
        let found = (!invite.is_empty())
            .then(|| self.seats.iter().position(|s| s.invite.as_deref().is_some_and(|c| same_token(c, invite))))
            .flatten();
        let Some(p) = found else {
            return Err(ApiError::forbidden(
                "this invitation is not one of this match's: the link is mistyped, or its table's owner issued the seat a new one",
            ));
        };
        if self.seats[p].token.is_some() {
            return Err(ApiError::conflict(
                format!("seat {p}'s invitation has been used: the seat is taken (ask whoever sent the link)"),
                self.ply(),
            ));
        }
        let mut tokens: Vec<Option<String>> = self.seats.iter().map(|s| s.token.clone()).collect();
        tokens[p] = Some(token);
        let invites = self.seats.iter().map(|s| s.invite.clone()).collect();
        Ok((self.seats_change(tokens, invites), p))
    }

    fn rotate(&self, access: Access, token: String) -> Result<(Change, Player), ApiError> {
        let Some(p) = access.seat else {
            return Err(ApiError::forbidden("a new token for a seat needs that seat's token"));
        };
        let mut tokens: Vec<Option<String>> = self.seats.iter().map(|s| s.token.clone()).collect();
        tokens[p] = Some(token);
        let invites = self.seats.iter().map(|s| s.invite.clone()).collect();
        Ok((self.seats_change(tokens, invites), p))
    }

    fn invite(&self, seat: Player, code: String) -> Result<Change, ApiError> {
        let Some(s) = self.seats.get(seat) else {
            return Err(ApiError::bad(format!("seat {seat} is not a seat: seats are 0..{}", self.seats.len())));
        };
        if !s.human {
            return Err(ApiError::bad(format!("seat {seat} is an agent's: only a person's seat has an invitation")));
        }
        if s.token.is_some() {
            return Err(ApiError::conflict(
                format!(
                    "seat {seat} is taken (claimed, or kept by its creator): its invitation cannot be issued again"
                ),
                self.ply(),
            ));
        }
        let tokens = self.seats.iter().map(|s| s.token.clone()).collect();
        let mut invites: Vec<Option<String>> = self.seats.iter().map(|s| s.invite.clone()).collect();
        invites[seat] = Some(code);
        Ok(self.seats_change(tokens, invites))
    }

    fn unsaved(&self) -> Option<Change> {
        let behind = self.saved < self.latest_ply() || (self.finished() && !self.saved_end);
        (behind && !self.replay).then(|| self.change(self.latest_ply(), Vec::new(), None, None, Effect::Saved))
    }

    fn valid(&self, change: &Change) -> bool {
        match &change.effect {
            Effect::Agent { epoch, ply, .. } | Effect::Failed { epoch, ply, .. } => {
                *epoch == self.epoch && *ply == self.latest_ply()
            }
            _ => true,
        }
    }

    fn apply(&mut self, change: Change) -> bool {
        if !self.valid(&change) {
            return false;
        }
        let Change { write, effect } = change;
        if let Effect::Undo { to } = effect {
            self.truncate(to);
        }
        if let Effect::Resign { seat } = effect {
            self.resigned = Some(seat);
        }
        for &(k, a, ms) in &write.moves {
            if k < self.latest_ply() {
                continue;
            }
            // Computed on this very line, under the same gate: it applies.
            if let Err(e) = self.push(a, ms) {
                self.error = Some(format!("a stored move did not apply: {e}"));
                break;
            }
            self.check_cap();
        }
        self.saved = self.latest_ply();
        self.saved_end = self.finished();
        match effect {
            Effect::Saved => {}
            Effect::Moves => self.error = None,
            Effect::Undo { .. } => {
                self.epoch += 1;
                self.thinking = None;
                self.stop_thinking();
                self.error = None;
                // Agents may keep a search tree of the line that was taken back: they start
                // afresh at their next move (built inside that job, not here under the lock).
                for seat in &mut self.seats {
                    seat.agent = None;
                }
            }
            Effect::Resign { .. } => {
                self.epoch += 1;
                self.thinking = None;
                self.stop_thinking();
                for seat in &mut self.seats {
                    seat.agent = None;
                }
            }
            Effect::Control(c) => {
                if let Some(ms) = c.delay_ms {
                    self.delay = Duration::from_millis(ms);
                }
                if let Some(p) = c.paused {
                    self.paused = p;
                }
                if c.step == Some(true) {
                    self.step = true;
                }
            }
            Effect::Seats { tokens, invites } => {
                for ((seat, token), invite) in self.seats.iter_mut().zip(tokens).zip(invites) {
                    seat.token = token;
                    seat.invite = invite;
                }
            }
            Effect::Agent { seat, agent, .. } => {
                self.thinking = None;
                self.cancel = None;
                self.stalled = None;
                if !self.table.latest().is_terminal() && !self.halted() {
                    self.seats[seat].agent = agent.and_then(|a| a.downcast::<BoxedAgent<G::State>>().ok()).map(|a| *a);
                }
            }
            Effect::Failed { error, .. } => {
                self.thinking = None;
                self.cancel = None;
                self.stalled = None;
                self.error = Some(error);
                self.paused = true;
            }
        }
        self.version += 1;
        true
    }

    fn stall(&mut self, why: Option<String>) {
        self.stalled = why;
        self.version += 1;
    }

    fn delay(&self) -> Duration {
        if self.has_human() { Duration::ZERO } else { self.delay }
    }

    fn awaiting_answer(&self) -> Option<(usize, bool)> {
        if self.replay || self.halted() {
            return None;
        }
        let Turn::Player(p) = self.table.latest().turn() else { return None };
        let default = self.table.latest().unanswered().filter(|_| self.seats[p].human)?;
        let mut legal = Vec::new();
        self.table.latest().legal_actions(&mut legal);
        Some((self.ply(), legal == [default]))
    }

    fn answer_for_absent(&self, ply: usize) -> Result<Change, ApiError> {
        if self.awaiting_answer().map(|(at, _)| at) != Some(ply) || ply != self.latest_ply() {
            return Err(ApiError::conflict("answered meanwhile", self.ply()));
        }
        let action =
            self.table.latest().unanswered().ok_or_else(|| ApiError::conflict("nothing to answer", self.ply()))?;
        let (new, last) = self.follow(action, None).map_err(|e| ApiError::unprocessable(e.to_string()))?;
        Ok(self.change(self.latest_ply(), new, Some(&last), None, Effect::Moves))
    }

    fn next_job(&mut self) -> Option<Job> {
        if self.replay || self.halted() || self.out || self.thinking.is_some() || (self.paused && !self.step) {
            return None;
        }
        let Turn::Player(p) = self.table.latest().turn() else { return None };
        if self.seats[p].human {
            return None;
        }
        let agent = self.seats[p].agent.take();
        self.step = false;
        self.thinking = Some(p);
        self.out = true;
        self.version += 1;
        let state = self.table.latest().clone();
        let cancel = meeple_game::CancelHandle::new().map(Arc::new);
        let budget = Budget { cancel: cancel.as_ref().map(|c| c.token()), ..Budget::time(self.move_time) };
        self.cancel = cancel.clone();
        let (epoch, ply) = (self.epoch, self.ply());
        let (game, spec, seed, allowed) =
            (self.table.game().clone(), self.seats[p].spec.clone(), self.seats[p].seed, self.allowed.clone());
        Some(Box::new(move || {
            let _flag = cancel;
            let built = match agent {
                Some(a) => Ok(a),
                None => allowed.agent(&game, &spec, seed).map_err(|e| e.message),
            };
            let start = Instant::now();
            let (agent, chosen) = match built {
                Ok(mut a) => {
                    let chosen = a.act(&state, &budget).map_err(|e| e.to_string());
                    (Some(a), chosen)
                }
                Err(e) => (None, Err(e)),
            };
            let ms = start.elapsed().as_secs_f64() * 1e3;
            Box::new(move |session: &mut dyn Session| {
                let live = session.as_any_mut().downcast_mut::<Live<G>>()?;
                live.version += 1;
                live.out = false;
                if live.epoch != epoch || live.ply() != ply {
                    // Taken back while it thought: the agent's tree belongs to another line.
                    return None;
                }
                let spec = &live.seats[p].spec;
                Some(match chosen {
                    Ok(a) => match live.follow(a, Some(ms as f32)) {
                        Ok((new, last)) => {
                            let agent = agent.map(|a| Box::new(a) as Box<dyn Any + Send>);
                            live.change(ply, new, Some(&last), None, Effect::Agent { seat: p, epoch, ply, agent })
                        }
                        Err(e) => live.failed(format!("seat {p} ({spec}) chose an illegal move: {e}")),
                    },
                    Err(e) => live.failed(format!("seat {p} ({spec}) failed: {e}")),
                })
            }) as Completion
        }))
    }

    fn analysis(
        &self,
        agent: &str,
        ply: Option<usize>,
        viewer: Option<Player>,
        time: Duration,
        cancel: Option<meeple_game::Cancel>,
    ) -> Result<AnalysisJob, ApiError> {
        let ply = ply.unwrap_or(self.ply());
        if ply > self.ply() {
            return Err(ApiError::bad(format!("ply {ply} is beyond the last ply, {}", self.ply())));
        }
        let state = self.state_at(ply);
        let Turn::Player(mover) = state.turn() else {
            return Err(ApiError::conflict("nobody is to move at this ply", self.ply()));
        };
        if time.is_zero() || time > MAX_ANALYSIS_TIME {
            return Err(ApiError::bad(format!("analysis time must be 1..={} ms", MAX_ANALYSIS_TIME.as_millis())));
        }
        // The agent thinks from what the asker knows: a world sampled from the viewer's view (the
        // mover's own when everything is public).
        let knower = match viewer {
            Some(v) => v,
            None if self.public() => mover,
            None => return Err(ApiError::forbidden("a spectator of a game with people in it cannot ask for advice")),
        };
        // Fresh randomness for the sampled world: the match's seed must not leak through it.
        let mut rng = meeple_game::rng_from_seed(crate::random_u64());
        let world = state.determinize(knower, &mut rng);
        let (game, spec, allowed) = (self.table.game().clone(), agent.to_string(), self.allowed.clone());
        spec.parse::<meeple_game::Spec>().map_err(|e| ApiError::bad(format!("agent: {e}")))?;
        let budget = Budget { cancel, ..Budget::time(time) };
        let shown = state;
        Ok(Box::new(move || {
            let mut advisor = allowed
                .agent(&game, &spec, crate::random_u64())
                .map_err(|e| ApiError::bad(format!("agent: {}", e.message)))?;
            let start = Instant::now();
            let chosen = advisor.act(&world, &budget);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            let spec = advisor.spec();
            match chosen {
                Ok(a) => {
                    let stats = advisor.analysis();
                    let top: Vec<Value> = stats
                        .iter()
                        .take(8)
                        .map(|m| json!({ "id": m.action, "text": shown.action_to_string(m.action), "visits": m.visits, "value": m.value }))
                        .collect();
                    // The mover's expected result after the chosen move, where the search has one.
                    let value = stats.iter().find(|m| m.action == a).and_then(|m| m.value);
                    // The line the search expects, in words, played on the world it searched,
                    // up to the first chance event (what the dice will say is not known).
                    let mut expected = advisor.line();
                    if expected.first() != Some(&a) {
                        expected = vec![a];
                    }
                    let mut line = Vec::new();
                    let mut s = world.clone();
                    for &m in expected.iter().take(12) {
                        let Turn::Player(p) = s.turn() else { break };
                        if !s.is_legal(m) {
                            break;
                        }
                        line.push(json!({
                            "player": p, "text": s.action_to_string(m), "words": s.describe_for(knower, m),
                            "path": s.action_path(m),
                        }));
                        s.apply_unchecked(m);
                    }
                    Ok(json!({
                        "agent": spec, "ply": ply, "id": a, "text": shown.action_to_string(a), "path": shown.action_path(a),
                        "words": shown.describe_for(knower, a), "mover": mover, "value": value, "line": line,
                        "ms": ms, "top": top,
                    }))
                }
                Err(e) => Ok(json!({ "agent": spec, "ply": ply, "error": e.to_string() })),
            }
        }))
    }

    fn record(&self) -> GameRecord {
        self.table.record(self.seats.iter().map(|s| s.spec.clone()).collect(), self.resigned)
    }

    fn public(&self) -> bool {
        self.replay || !self.has_human() || self.table.latest().is_terminal() || self.halted()
    }

    fn has_person(&self) -> bool {
        self.has_human()
    }

    fn busy(&self) -> bool {
        self.out
    }

    fn finished(&self) -> bool {
        self.table.latest().is_terminal() || self.halted()
    }

    fn agents_bound(&self) -> u64 {
        self.seats.iter().map(|s| s.bound).sum()
    }

    fn job_failed(&mut self, why: String) -> Option<Change> {
        self.version += 1;
        self.out = false;
        let p = self.thinking?;
        Some(self.failed(format!("seat {p} ({}) stopped: {why}", self.seats[p].spec)))
    }

    fn stop_thinking(&mut self) {
        if let Some(c) = self.cancel.take() {
            c.cancel();
        }
    }

    fn close(&mut self) -> bool {
        self.stop_thinking();
        for seat in &mut self.seats {
            seat.agent = None;
        }
        self.out
    }

    fn stored(&self) -> Option<Stored> {
        if self.replay {
            return None;
        }
        Some(Stored {
            game: self.spec.clone(),
            seats: self.seats.iter().map(|s| s.spec.clone()).collect(),
            tokens: self.seats.iter().map(|s| s.token.clone()).collect(),
            invites: self.seats.iter().map(|s| s.invite.clone()).collect(),
            owner: self.owner.clone(),
            seed: self.table.seed(),
            open: self.open,
            move_time_ms: self.move_time.as_millis() as u64,
            delay_ms: self.delay.as_millis() as u64,
            paused: self.paused,
            resigned: self.resigned,
        })
    }

    fn handed_out(&self) -> (Vec<Handed>, Vec<Handed>) {
        let mut kept = Vec::new();
        let mut invited = Vec::new();
        for (i, s) in self.seats.iter().enumerate() {
            match (&s.token, &s.invite) {
                (Some(t), None) => kept.push((i, t.clone())),
                (None, Some(c)) => invited.push((i, c.clone())),
                _ => {}
            }
        }
        (kept, invited)
    }
}
