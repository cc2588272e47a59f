//! One match as the server holds it: the states so far, the seats (people or agents), the chance
//! stream and the watch controls. Generic over the game; the server sees it through [`Session`].

use meeple_game::{
    Action, BoxedAgent, Budget, Game, GameRecord, Player, Rng, State, Turn, derive_seed, rng_from_seed, sample_chance,
};
use serde_json::{Value, json};
use std::any::Any;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// The viewer id a spectator's view is computed for: no seat, so nothing hidden is shown.
pub const SPECTATOR: Player = usize::MAX;

/// The longest a person may let an agent think per move.
pub const MAX_MOVE_TIME: Duration = Duration::from_secs(60);
/// The longest an analysis may think.
pub const MAX_ANALYSIS_TIME: Duration = Duration::from_secs(30);
/// The longest pause between moves when watching agents.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// A computation to run off the async runtime (an agent's move), and what to do with its result
/// once the match is locked again.
pub type Job = Box<dyn FnOnce() -> Completion + Send>;
/// Applies a finished job's result to the match it came from.
pub type Completion = Box<dyn FnOnce(&mut dyn Session) + Send>;
/// An analysis to run off the async runtime; it gives the answer to send.
pub type AnalysisJob = Box<dyn FnOnce() -> Value + Send>;

/// What a new match is made of.
#[derive(Clone, Debug)]
pub struct Setup {
    pub game: String,
    /// Agent specs, or `human`, in seat order.
    pub seats: Vec<String>,
    pub seed: u64,
    /// Time each agent may think per move.
    pub move_time: Duration,
    /// Pause before each agent move when no person plays (watching).
    pub delay: Duration,
}

/// A move as a client sends it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveRequest {
    /// The ply the move answers (the snapshot's `ply`): a move sent for an older position is
    /// refused, so a double click or a race with an agent cannot play twice.
    pub ply: usize,
    /// The move in the game's notation.
    pub action: Option<String>,
    /// Or its action id.
    pub id: Option<Action>,
}

/// Watch controls.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub paused: Option<bool>,
    pub delay_ms: Option<u64>,
    /// Play one agent move while paused.
    pub step: Option<bool>,
}

/// A match of any game, as the server drives it.
pub trait Session: Send + Any {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// The match for `viewer` (`None`: a spectator) at `ply` (`None`: the latest).
    fn snapshot(&self, viewer: Option<Player>, ply: Option<usize>) -> Result<Value, ApiError>;
    /// One line for the list of matches.
    fn summary(&self) -> Value;
    /// The seat to move at the latest ply.
    fn mover(&self) -> Option<Player>;
    /// Refuses a viewer who may not see that seat's hidden information.
    fn check_viewer(&self, viewer: Option<Player>) -> Result<(), ApiError>;
    fn submit(&mut self, request: &MoveRequest) -> Result<(), ApiError>;
    fn undo(&mut self) -> Result<usize, ApiError>;
    fn control(&mut self, control: &Control) -> Result<(), ApiError>;
    /// The next agent move to compute, if an agent is to move and may.
    fn next_job(&mut self) -> Option<Job>;
    /// The pause before the next agent move (watching only).
    fn delay(&self) -> Duration;
    /// An agent's advice for the position at `ply`, from what `viewer` knows.
    fn analysis(
        &self,
        agent: &str,
        ply: Option<usize>,
        viewer: Option<Player>,
        time: Duration,
    ) -> Result<AnalysisJob, ApiError>;
    /// The game as an arena record.
    fn record(&self) -> GameRecord;
    /// Whether everything about the match may be shown to anyone (no person plays, the game is
    /// over, or it is a replay): the record holds every hidden deal.
    fn public(&self) -> bool;
    /// Whether an agent is thinking (the match is not idle).
    fn busy(&self) -> bool;
    /// Records a job that died (an agent that panicked).
    fn job_failed(&mut self, why: String);
}

struct Seat<S: State> {
    spec: String,
    /// The agent, absent for a person and while it thinks.
    agent: Option<BoxedAgent<S>>,
    seed: u64,
}

impl<S: State> Seat<S> {
    fn human(&self) -> bool {
        self.spec == "human"
    }
}

/// A match of game `G`.
pub struct Live<G: Game> {
    game: G,
    spec: String,
    seed: u64,
    seats: Vec<Seat<G::State>>,
    /// `states[k]`: the position after `k` plies (chance outcomes count as plies).
    states: Vec<G::State>,
    actions: Vec<Action>,
    move_ms: Vec<Option<f64>>,
    chance: Rng,
    move_time: Duration,
    delay: Duration,
    paused: bool,
    step: bool,
    thinking: Option<Player>,
    /// Bumped by every undo: a move computed for an older line is dropped.
    epoch: u64,
    error: Option<String>,
    /// A replay of a record: read-only, every seat's view open.
    replay: bool,
    /// Bumped by every change, so a client keeps the newest of the snapshots it receives (an
    /// answer to its move may arrive after the event announcing the reply to it).
    version: u64,
}

/// Builds a match of the game named by `setup.game`.
pub fn create(setup: &Setup) -> Result<Box<dyn Session>, ApiError> {
    meeple_games::with_game!(setup.game.as_str(), |g| Live::new(g, setup).map(|m| Box::new(m) as Box<dyn Session>))?
}

/// Opens a record as a read-only match.
pub fn open_replay(record: &GameRecord) -> Result<Box<dyn Session>, ApiError> {
    meeple_games::with_game!(record.game.as_str(), |g| Live::replay(g, record)
        .map(|m| Box::new(m) as Box<dyn Session>))?
}

impl<G: Game> Live<G> {
    fn new(game: G, setup: &Setup) -> Result<Self, ApiError> {
        let n = game.num_players();
        if setup.seats.len() != n {
            return Err(ApiError::bad(format!(
                "{} has {n} seats; {} were given (an agent spec or \"human\" for each)",
                game.spec(),
                setup.seats.len()
            )));
        }
        if setup.move_time.is_zero() || setup.move_time > MAX_MOVE_TIME {
            return Err(ApiError::bad(format!(
                "move time {} ms is outside 1..={} ms",
                setup.move_time.as_millis(),
                MAX_MOVE_TIME.as_millis()
            )));
        }
        if setup.delay > MAX_DELAY {
            return Err(ApiError::bad(format!("delay is above {} ms", MAX_DELAY.as_millis())));
        }
        let mut seats = Vec::with_capacity(n);
        for (i, spec) in setup.seats.iter().enumerate() {
            let spec = spec.trim();
            let seed = derive_seed(setup.seed, 1 + i as u64);
            let agent = if spec == "human" {
                None
            } else {
                Some(
                    meeple_learn::make_agent(&game, spec, seed)
                        .map_err(|e| ApiError::bad(format!("seat {i}: {e} (or \"human\")")))?,
                )
            };
            seats.push(Seat { spec: agent.as_ref().map_or_else(|| "human".to_string(), |a| a.spec()), agent, seed });
        }
        let mut live = Live {
            spec: game.spec().to_string(),
            states: vec![game.initial_state()],
            game,
            seed: setup.seed,
            seats,
            actions: Vec::new(),
            move_ms: Vec::new(),
            chance: rng_from_seed(derive_seed(setup.seed, 0)),
            move_time: setup.move_time,
            delay: setup.delay,
            paused: false,
            step: false,
            thinking: None,
            epoch: 0,
            error: None,
            replay: false,
            version: 0,
        };
        live.resolve_chance();
        Ok(live)
    }

    fn replay(game: G, record: &GameRecord) -> Result<Self, ApiError> {
        let states = meeple_game::replay(&game, record).map_err(|e| ApiError::unprocessable(e.to_string()))?;
        let mut actions = Vec::with_capacity(record.actions.len());
        for (s, text) in states.iter().zip(&record.actions) {
            actions.push(s.parse_action(text).map_err(|e| ApiError::unprocessable(e.to_string()))?);
        }
        let n = game.num_players();
        let seats = (0..n)
            .map(|i| Seat { spec: record.agents.get(i).cloned().unwrap_or_else(|| "?".into()), agent: None, seed: 0 })
            .collect();
        Ok(Live {
            spec: game.spec().to_string(),
            game,
            seed: record.seed,
            seats,
            move_ms: vec![None; actions.len()],
            actions,
            states,
            chance: rng_from_seed(0),
            move_time: Duration::from_secs(1),
            delay: Duration::ZERO,
            paused: true,
            step: false,
            thinking: None,
            epoch: 0,
            error: None,
            replay: true,
            version: 0,
        })
    }

    fn latest(&self) -> &G::State {
        self.states.last().expect("a match always has its initial state")
    }

    fn ply(&self) -> usize {
        self.states.len() - 1
    }

    fn push(&mut self, action: Action, ms: Option<f64>) -> Result<(), meeple_game::Error> {
        let mut next = self.latest().clone();
        next.apply(action)?;
        self.states.push(next);
        self.actions.push(action);
        self.move_ms.push(ms);
        self.version += 1;
        Ok(())
    }

    /// Nature moves at once, from the match's own seeded stream.
    fn resolve_chance(&mut self) {
        let mut outcomes = Vec::new();
        while self.latest().turn() == Turn::Chance {
            self.latest().chance_outcomes(&mut outcomes);
            let a = sample_chance(&outcomes, &mut self.chance);
            self.push(a, None).expect("a listed chance outcome applies");
        }
    }

    fn has_human(&self) -> bool {
        self.seats.iter().any(|s| s.human())
    }

    fn build_agent(&self, seat: usize) -> Result<BoxedAgent<G::State>, meeple_game::Error> {
        let s = &self.seats[seat];
        meeple_learn::make_agent(&self.game, &s.spec, s.seed)
    }

    fn turn_json(turn: Turn) -> Value {
        match turn {
            Turn::Player(p) => json!({ "kind": "player", "player": p }),
            Turn::Chance => json!({ "kind": "chance" }),
            Turn::Terminal => json!({ "kind": "terminal" }),
        }
    }

    fn status(&self) -> &'static str {
        if self.replay {
            "replay"
        } else if self.latest().is_terminal() {
            "over"
        } else if self.thinking.is_some() {
            "thinking"
        } else if self.paused {
            "paused"
        } else {
            "playing"
        }
    }
}

impl<G: Game> Session for Live<G> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn check_viewer(&self, viewer: Option<Player>) -> Result<(), ApiError> {
        let Some(v) = viewer else { return Ok(()) };
        if v >= self.seats.len() {
            return Err(ApiError::bad(format!("viewer {v} is not a seat: seats are 0..{}", self.seats.len())));
        }
        // A person sees their own seat; other seats' hidden information only once nobody can
        // profit from it (no person plays, or the game is over).
        if self.seats[v].human() || self.public() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "seat {v} is an agent's: a person at this table may view their own seat or be a spectator"
            )))
        }
    }

    fn snapshot(&self, viewer: Option<Player>, ply: Option<usize>) -> Result<Value, ApiError> {
        self.check_viewer(viewer)?;
        let latest = self.ply();
        let ply = ply.unwrap_or(latest);
        if ply > latest {
            return Err(ApiError::bad(format!("ply {ply} is beyond the last ply, {latest}")));
        }
        let state = &self.states[ply];
        let who = viewer.unwrap_or(SPECTATOR);
        let log: Vec<Value> = (0..ply)
            .map(|k| {
                let before = &self.states[k];
                let text = before.action_to_string_for(who, self.actions[k]);
                match before.turn() {
                    Turn::Player(p) => json!({ "ply": k + 1, "player": p, "text": text, "ms": self.move_ms[k] }),
                    _ => json!({ "ply": k + 1, "chance": true, "text": text }),
                }
            })
            .collect();
        let mover = state.current_player();
        let may_move = ply == latest
            && !self.replay
            && self.thinking.is_none()
            && mover.is_some_and(|p| viewer == Some(p) && self.seats[p].human());
        let mut legal = Vec::new();
        if may_move {
            let mut ids = Vec::new();
            state.legal_actions(&mut ids);
            legal = ids
                .iter()
                .map(|&a| json!({ "id": a, "text": state.action_to_string(a), "path": state.action_path(a) }))
                .collect();
        }
        let result = state.returns().map(|r| json!({ "returns": r.as_slice(), "scores": state.scores().as_slice() }));
        let seats: Vec<Value> = self.seats.iter().map(|s| json!({ "spec": s.spec, "human": s.human() })).collect();
        // The last human move can be taken back unless nature moved since.
        let undoable = !self.replay && self.undo_target().is_ok();
        Ok(json!({
            "game": self.spec, "name": G::INFO.name, "seed": self.seed, "ply": ply, "plies": latest,
            "viewer": viewer, "seats": seats, "turn": Self::turn_json(state.turn()), "view": state.view(viewer),
            "legal": legal, "log": log, "result": result, "status": self.status(), "thinking": self.thinking,
            "paused": self.paused, "delay_ms": self.delay.as_millis() as u64, "move_time_ms": self.move_time.as_millis() as u64,
            "error": self.error, "replay": self.replay, "undoable": undoable, "version": self.version,
        }))
    }

    fn summary(&self) -> Value {
        let seats: Vec<&str> = self.seats.iter().map(|s| s.spec.as_str()).collect();
        json!({ "game": self.spec, "seats": seats, "ply": self.ply(), "status": self.status(), "seed": self.seed })
    }

    fn mover(&self) -> Option<Player> {
        self.latest().current_player()
    }

    fn submit(&mut self, request: &MoveRequest) -> Result<(), ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        if request.ply != self.ply() {
            return Err(ApiError::conflict(
                format!("stale move: it answers ply {}, the game is at ply {}", request.ply, self.ply()),
                self.ply(),
            ));
        }
        let state = self.latest();
        let mover = match state.turn() {
            Turn::Terminal => return Err(ApiError::conflict("the game is over", self.ply())),
            Turn::Chance => unreachable!("chance is resolved at once"),
            Turn::Player(p) => p,
        };
        if !self.seats[mover].human() {
            return Err(ApiError::conflict(
                format!("seat {mover} ({}) is to move, not a person", self.seats[mover].spec),
                self.ply(),
            ));
        }
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
                if action as usize >= self.game.num_actions() {
                    format!("action id {action} is outside 0..{}", self.game.num_actions())
                } else {
                    state.illegal_reason(action)
                }
            )));
        }
        self.push(action, None).map_err(|e| ApiError::unprocessable(e.to_string()))?;
        self.resolve_chance();
        self.error = None;
        Ok(())
    }

    fn undo(&mut self) -> Result<usize, ApiError> {
        if self.replay {
            return Err(ApiError::conflict("a replay is read-only", self.ply()));
        }
        let target = self.undo_target().map_err(|why| ApiError::conflict(why, self.ply()))?;
        self.states.truncate(target + 1);
        self.actions.truncate(target);
        self.move_ms.truncate(target);
        self.epoch += 1;
        self.version += 1;
        self.thinking = None;
        self.error = None;
        // Agents may keep a search tree of the line that was taken back: start them afresh.
        for seat in 0..self.seats.len() {
            if !self.seats[seat].human() {
                self.seats[seat].agent = self.build_agent(seat).ok();
            }
        }
        Ok(target)
    }

    fn control(&mut self, control: &Control) -> Result<(), ApiError> {
        if let Some(ms) = control.delay_ms {
            let d = Duration::from_millis(ms);
            if d > MAX_DELAY {
                return Err(ApiError::bad(format!("delay_ms {ms} is above {}", MAX_DELAY.as_millis())));
            }
            self.delay = d;
        }
        if let Some(p) = control.paused {
            self.paused = p;
        }
        if control.step == Some(true) {
            self.step = true;
        }
        self.version += 1;
        Ok(())
    }

    fn delay(&self) -> Duration {
        if self.has_human() { Duration::ZERO } else { self.delay }
    }

    fn next_job(&mut self) -> Option<Job> {
        if self.replay || self.thinking.is_some() || (self.paused && !self.step) {
            return None;
        }
        let Turn::Player(p) = self.latest().turn() else { return None };
        if self.seats[p].human() {
            return None;
        }
        let agent = match self.seats[p].agent.take() {
            Some(a) => a,
            None => match self.build_agent(p) {
                Ok(a) => a,
                Err(e) => {
                    self.error = Some(format!("seat {p}: {e}"));
                    self.paused = true;
                    return None;
                }
            },
        };
        self.step = false;
        self.thinking = Some(p);
        self.version += 1;
        let state = self.latest().clone();
        let (epoch, ply, budget) = (self.epoch, self.ply(), Budget::time(self.move_time));
        let mut agent = agent;
        Some(Box::new(move || {
            let start = Instant::now();
            let chosen = agent.act(&state, &budget);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            Box::new(move |session: &mut dyn Session| {
                let Some(live) = session.as_any_mut().downcast_mut::<Live<G>>() else { return };
                live.version += 1;
                if live.epoch != epoch || live.ply() != ply {
                    // Taken back while it thought: the agent's tree belongs to another line.
                    live.seats[p].agent = live.build_agent(p).ok();
                    return;
                }
                live.thinking = None;
                live.seats[p].agent = Some(agent);
                match chosen {
                    Ok(a) => match live.push(a, Some(ms)) {
                        Ok(()) => live.resolve_chance(),
                        Err(e) => {
                            live.error = Some(format!("seat {p} ({}) chose an illegal move: {e}", live.seats[p].spec));
                            live.paused = true;
                        }
                    },
                    Err(e) => {
                        live.error = Some(format!("seat {p} ({}) failed: {e}", live.seats[p].spec));
                        live.paused = true;
                    }
                }
            }) as Completion
        }))
    }

    fn analysis(
        &self,
        agent: &str,
        ply: Option<usize>,
        viewer: Option<Player>,
        time: Duration,
    ) -> Result<AnalysisJob, ApiError> {
        self.check_viewer(viewer)?;
        let ply = ply.unwrap_or(self.ply());
        let Some(state) = self.states.get(ply) else {
            return Err(ApiError::bad(format!("ply {ply} is beyond the last ply, {}", self.ply())));
        };
        let Turn::Player(mover) = state.turn() else {
            return Err(ApiError::conflict("nobody is to move at this ply", self.ply()));
        };
        if time.is_zero() || time > MAX_ANALYSIS_TIME {
            return Err(ApiError::bad(format!("analysis time must be 1..={} ms", MAX_ANALYSIS_TIME.as_millis())));
        }
        // The agent thinks from what the asker knows: a world sampled from the viewer's view (the
        // mover's own when nobody at the table is a person).
        let knower = match viewer {
            Some(v) => v,
            None if self.public() => mover,
            None => return Err(ApiError::forbidden("a spectator of a game with people in it cannot ask for advice")),
        };
        let mut rng = rng_from_seed(derive_seed(self.seed, 0xa11a + ply as u64));
        let world = state.determinize(knower, &mut rng);
        let mut advisor = meeple_learn::make_agent(&self.game, agent, derive_seed(self.seed, 0xad71ce))
            .map_err(|e| ApiError::bad(format!("agent: {e}")))?;
        let spec = advisor.spec();
        let budget = Budget::time(time);
        let shown = state.clone();
        Ok(Box::new(move || {
            let start = Instant::now();
            let chosen = advisor.act(&world, &budget);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            match chosen {
                Ok(a) => {
                    let top: Vec<Value> = advisor
                        .analysis()
                        .iter()
                        .take(8)
                        .map(|m| json!({ "id": m.action, "text": shown.action_to_string(m.action), "visits": m.visits, "value": m.value }))
                        .collect();
                    json!({
                        "agent": spec, "ply": ply, "id": a, "text": shown.action_to_string(a), "path": shown.action_path(a),
                        "ms": ms, "top": top,
                    })
                }
                Err(e) => json!({ "agent": spec, "ply": ply, "error": e.to_string() }),
            }
        }))
    }

    fn record(&self) -> GameRecord {
        let last = self.latest();
        GameRecord {
            game: self.spec.clone(),
            seed: self.seed,
            agents: self.seats.iter().map(|s| s.spec.clone()).collect(),
            actions: self.states.iter().zip(&self.actions).map(|(s, &a)| s.action_to_string(a)).collect(),
            returns: last.returns().map(|r| r.to_vec()),
            scores: last.scores().to_vec(),
            metrics: if last.is_terminal() {
                last.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            } else {
                Default::default()
            },
        }
    }

    fn public(&self) -> bool {
        self.replay || !self.has_human() || self.latest().is_terminal()
    }

    fn busy(&self) -> bool {
        self.thinking.is_some()
    }

    fn job_failed(&mut self, why: String) {
        self.version += 1;
        if let Some(p) = self.thinking.take() {
            self.error = Some(format!("seat {p} ({}) stopped: {why}", self.seats[p].spec));
            self.paused = true;
            self.seats[p].agent = self.build_agent(p).ok();
        }
    }
}

impl<G: Game> Live<G> {
    /// The position before the last person's move, if nature has not moved since it.
    fn undo_target(&self) -> Result<usize, String> {
        for k in (0..self.ply()).rev() {
            match self.states[k].turn() {
                Turn::Chance => return Err("cannot undo past a chance event (dice, a draw)".into()),
                Turn::Player(p) if self.seats[p].human() => return Ok(k),
                _ => {}
            }
        }
        Err("there is no move of a person to take back".into())
    }
}
