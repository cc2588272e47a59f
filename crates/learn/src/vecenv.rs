//! The vector environment: many games stepped together, across a thread pool, into flat
//! buffers. One implementation serves both sides: the Python package turns the buffers into
//! numpy arrays (`meeple.VecEnv`), and the Rust learners (DQN, PPO) read them directly, so a
//! learner's whole batch of observations goes through the network in one forward pass.

use crate::make_agent;
use meeple_game::{Action, BoxedAgent, Budget, Error, Game, Player, Rng, State, Turn, derive_seed, rng_from_seed};
use rand::RngExt;
use rayon::prelude::*;

/// How a vector environment is set up (checked by [`VecEnvImpl::new`]).
#[derive(Clone, Debug)]
pub struct VecEnvConfig {
    pub num_envs: usize,
    pub seed: u64,
    /// Threads stepping the games; 1 steps them on the caller's thread.
    pub threads: usize,
    /// Agents for the seats the learner does not play: one spec for all of them, or one per
    /// other seat, the k-th sitting k + 1 seats after the learner. Empty: the learner plays
    /// every seat.
    pub opponents: Vec<String>,
    /// The learner's seat with opponents; `None` draws it for each game.
    pub seat: Option<Player>,
    /// Player moves after which a game is cut off (truncated).
    pub max_turns: Option<u32>,
}

/// The most games one vector environment holds.
pub const MAX_ENVS: usize = 1 << 24;

/// Buffers one step or reset writes, laid out `[env, ...]`: each game's observation from the
/// seat to move (`obs`), its legal actions (`mask`), that seat (`player`), every seat's reward
/// in the step (`rewards`: the result mapped to -1..1 when a game ends, 0 otherwise), and
/// whether the game ended (`terminated`) or was cut off (`truncated`) before it restarted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outputs {
    pub obs: Vec<f32>,
    pub mask: Vec<bool>,
    pub player: Vec<i8>,
    pub rewards: Vec<f32>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
}

/// A vector environment of any game.
pub trait DynVecEnv: Send {
    /// Starts every game (episode 0 of each) into fresh buffers.
    fn reset(&mut self) -> Result<Outputs, Error> {
        let mut out = Outputs::default();
        self.reset_into(&mut out)?;
        Ok(out)
    }
    /// Plays `actions[i]` in game `i` into fresh buffers.
    fn step(&mut self, actions: &[i64]) -> Result<Outputs, Error> {
        let mut out = Outputs::default();
        self.step_into(actions, &mut out)?;
        Ok(out)
    }
    /// [`DynVecEnv::reset`] into the caller's buffers, reused from call to call.
    fn reset_into(&mut self, out: &mut Outputs) -> Result<(), Error>;
    /// [`DynVecEnv::step`] into the caller's buffers, reused from call to call. An illegal action
    /// leaves every game and the buffers as they were.
    fn step_into(&mut self, actions: &[i64], out: &mut Outputs) -> Result<(), Error>;
    /// The observation each game ended on, as seen by the seat that moved last (`[env, ...]`;
    /// rows of games that did not end in the last step hold older values).
    fn final_observation(&self) -> &[f32];
    /// The seeds each game's current episode was started from.
    fn episode_seeds(&self) -> Vec<u64>;
}

struct Slot<S: State> {
    state: S,
    rng: Rng,
    turns: u32,
    episode: u64,
    /// The learner's seat in this episode; `None` without opponents (the learner plays all).
    seat: Option<Player>,
    /// The opponents: the k-th sits k + 1 seats after the learner. Empty without opponents.
    agents: Vec<BoxedAgent<S>>,
    legal: Vec<Action>,
    chance: Vec<(Action, f64)>,
    view: Vec<f32>,
    episode_seed: u64,
}

pub struct VecEnvImpl<G: Game> {
    game: G,
    config: VecEnvConfig,
    slots: Vec<Slot<G::State>>,
    pool: Option<rayon::ThreadPool>,
    final_obs: Vec<f32>,
    obs_len: usize,
    started: bool,
}

impl<G: Game> VecEnvImpl<G> {
    pub fn new(game: G, config: VecEnvConfig) -> Result<Self, Error> {
        let n = config.num_envs;
        if n == 0 || n > MAX_ENVS {
            return Err(Error::Invalid(format!("num_envs {n}: give 1 to {MAX_ENVS}")));
        }
        let players = game.num_players();
        // Each step returns fresh arrays and keeps the final observations: refuse a size whose
        // games and buffers would not fit in a quarter of the memory.
        let obs_len: usize = game.observation_shape().iter().product();
        let per_env = (2 * obs_len * 4 + game.num_actions() + players * 4 + 3 + size_of::<Slot<G::State>>()) as u64;
        let need = per_env.saturating_mul(n as u64);
        let room = meeple_game::limits::memory() / 4;
        if need > room {
            return Err(Error::Invalid(format!(
                "num_envs {n}: the step buffers of {} need {} ({} per game), more than a quarter of this machine's memory ({}); give at most {}",
                game.spec(),
                meeple_game::limits::format_bytes(need),
                meeple_game::limits::format_bytes(per_env),
                meeple_game::limits::format_bytes(room),
                room / per_env.max(1)
            )));
        }
        if let Some(s) = config.seat
            && s >= players
        {
            return Err(Error::Invalid(format!("seat {s}: {} has seats 0 to {}", game.spec(), players - 1)));
        }
        let others = players - 1;
        if !config.opponents.is_empty() && config.opponents.len() != 1 && config.opponents.len() != others {
            return Err(Error::Invalid(format!(
                "{} opponents given: {} has {others} seat(s) besides the learner's; give one spec for all or one per seat",
                config.opponents.len(),
                game.spec()
            )));
        }
        if config.max_turns == Some(0) {
            return Err(Error::Invalid("max_turns 0: give a positive number of moves, or None".into()));
        }
        // Check the opponents' specs once, with a clear error, before building thousands of them.
        for spec in &config.opponents {
            make_agent(&game, spec, 0)?;
        }
        let pool = if config.threads > 1 {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(config.threads)
                    .build()
                    .map_err(|e| Error::Invalid(format!("cannot start {} threads: {e}", config.threads)))?,
            )
        } else {
            None
        };
        let mut slots = Vec::with_capacity(n);
        for i in 0..n {
            let mut agents = Vec::new();
            if !config.opponents.is_empty() {
                for k in 0..others {
                    let spec = &config.opponents[if config.opponents.len() == 1 { 0 } else { k }];
                    let seed = derive_seed(config.seed, (i * players + k) as u64 | 1 << 62);
                    agents.push(make_agent(&game, spec, seed)?);
                }
            }
            slots.push(Slot {
                state: game.initial_state(),
                rng: rng_from_seed(0),
                turns: 0,
                episode: 0,
                seat: None,
                agents,
                legal: Vec::new(),
                chance: Vec::new(),
                view: Vec::new(),
                episode_seed: 0,
            });
        }
        Ok(VecEnvImpl { final_obs: vec![0.0; n * obs_len], game, config, slots, pool, obs_len, started: false })
    }

    /// Game `i`'s current position: where its seat to move (the learner's, with opponents)
    /// sees the observation of the last reset or step.
    pub fn state(&self, i: usize) -> &G::State {
        &self.slots[i].state
    }

    /// Sizes `out` for this environment and clears what a step writes in part (masks, rewards,
    /// flags); the observations are written whole.
    fn clear(&self, out: &mut Outputs) {
        let n = self.slots.len();
        let p = self.game.num_players();
        out.obs.resize(n * self.obs_len, 0.0);
        out.rewards.clear();
        out.rewards.resize(n * p, 0.0);
        out.mask.clear();
        out.mask.resize(n * self.game.num_actions(), false);
        out.player.resize(n, 0);
        for v in [&mut out.terminated, &mut out.truncated] {
            v.clear();
            v.resize(n, false);
        }
    }

    /// Runs `f` on every game with its rows of the outputs, on the pool if there is one.
    fn each(
        &mut self,
        out: &mut Outputs,
        final_rows: bool,
        f: impl Fn(&mut Slot<G::State>, Row<'_>, usize) -> Result<(), Error> + Sync + Send,
    ) -> Result<(), Error> {
        let ol = self.obs_len;
        let al = self.game.num_actions();
        let p = self.game.num_players();
        let final_obs: &mut [f32] = if final_rows { &mut self.final_obs } else { &mut [] };
        let mut finals: Vec<&mut [f32]> = if final_rows { final_obs.chunks_mut(ol).collect() } else { Vec::new() };
        if !final_rows {
            finals.resize_with(self.slots.len(), Default::default);
        }
        let work = (
            self.slots.par_iter_mut(),
            out.obs.par_chunks_mut(ol),
            out.mask.par_chunks_mut(al),
            out.player.par_iter_mut(),
            out.rewards.par_chunks_mut(p),
            out.terminated.par_iter_mut(),
            out.truncated.par_iter_mut(),
            finals.par_iter_mut(),
        )
            .into_par_iter()
            .enumerate();
        let run = |(i, (slot, obs, mask, player, rewards, terminated, truncated, fin))| {
            let fin: &mut &mut [f32] = fin;
            f(slot, Row { obs, mask, player, rewards, terminated, truncated, fin }, i)
        };
        match &self.pool {
            Some(pool) => pool.install(|| work.try_for_each(run)),
            None => work.try_for_each(run),
        }
    }
}

/// One game's rows of the outputs.
pub struct Row<'a> {
    obs: &'a mut [f32],
    mask: &'a mut [bool],
    player: &'a mut i8,
    rewards: &'a mut [f32],
    terminated: &'a mut bool,
    truncated: &'a mut bool,
    fin: &'a mut [f32],
}

impl<S: State> Slot<S> {
    /// Starts episode `self.episode` from its seed and plays until the learner is to move.
    fn start(&mut self, base: u64, index: usize, envs: usize, seat: Option<Player>, initial: &S) -> Result<(), Error> {
        let seed = base.wrapping_add(index as u64).wrapping_add(self.episode.wrapping_mul(envs as u64));
        self.episode_seed = seed;
        self.state = initial.clone();
        self.rng = rng_from_seed(seed);
        self.turns = 0;
        let players = self.agents.len() + 1;
        self.seat = match seat {
            _ if self.agents.is_empty() => None,
            Some(s) => Some(s),
            None => Some(rng_from_seed(derive_seed(seed, 1)).random_range(0..players)),
        };
        self.advance(None)
    }

    /// Resolves chance and lets opponents move until the learner is to move, the game ends or it
    /// reaches `max_turns`.
    fn advance(&mut self, max_turns: Option<u32>) -> Result<(), Error> {
        loop {
            match self.state.turn() {
                Turn::Chance => {
                    let a = meeple_game::draw_chance(&self.state, &mut self.chance, &mut self.rng);
                    self.state.apply_unchecked(a);
                }
                Turn::Player(p) if Some(p) != self.seat && max_turns.is_none_or(|m| self.turns < m) => {
                    let Some(learner) = self.seat else { return Ok(()) };
                    let players = self.agents.len() + 1;
                    let agent = &mut self.agents[(p + players - learner - 1) % players];
                    let a = agent.act(&self.state, &Budget::UNLIMITED)?;
                    self.state.apply(a)?;
                    self.turns += 1;
                }
                _ => return Ok(()),
            }
        }
    }

    fn write(&mut self, row: &mut Row<'_>) {
        let mover = self.state.current_player().or(self.seat).unwrap_or(0);
        self.state.observation(mover, &mut self.view);
        row.obs.copy_from_slice(&self.view);
        self.state.legal_actions(&mut self.legal);
        // The row comes cleared from `clear`.
        for &a in &self.legal {
            row.mask[a as usize] = true;
        }
        *row.player = mover as i8;
    }
}

impl<G: Game> DynVecEnv for VecEnvImpl<G> {
    fn reset_into(&mut self, out: &mut Outputs) -> Result<(), Error> {
        self.clear(out);
        let initial = self.game.initial_state();
        let (base, envs, seat) = (self.config.seed, self.slots.len(), self.config.seat);
        self.each(out, false, |slot, mut row, i| {
            slot.episode = 0;
            slot.start(base, i, envs, seat, &initial)?;
            slot.write(&mut row);
            Ok(())
        })?;
        self.started = true;
        Ok(())
    }

    fn step_into(&mut self, actions: &[i64], out: &mut Outputs) -> Result<(), Error> {
        if !self.started {
            return Err(Error::Invalid("step() before reset(): call reset() first".into()));
        }
        let n = self.slots.len();
        if actions.len() != n {
            return Err(Error::Invalid(format!(
                "{} actions for {n} environments: give one per environment",
                actions.len()
            )));
        }
        let al = self.game.num_actions();
        // Every action is checked before any game moves, so an error leaves all of them as they were.
        for (i, (&a, slot)) in actions.iter().zip(&self.slots).enumerate() {
            if a < 0 || a as u64 >= al as u64 {
                return Err(Error::Invalid(format!(
                    "environment {i}: action {a} is out of range: actions are 0 to {}",
                    al - 1
                )));
            }
            if slot.legal.binary_search(&(a as Action)).is_err() {
                return Err(Error::Invalid(format!(
                    "environment {i}: {}",
                    Error::IllegalAction { action: a as Action, reason: slot.state.illegal_reason(a as Action) }
                )));
            }
        }
        self.clear(out);
        let initial = self.game.initial_state();
        let (base, envs, seat, max_turns) = (self.config.seed, n, self.config.seat, self.config.max_turns);
        self.each(out, true, |slot, mut row, i| {
            let mover = slot.state.current_player().unwrap_or(0);
            slot.state.apply_unchecked(actions[i] as Action);
            slot.turns += 1;
            slot.advance(max_turns)?;
            let over = slot.state.turn() == Turn::Terminal;
            let cut = !over && max_turns.is_some_and(|m| slot.turns >= m);
            if over || cut {
                let viewer = slot.seat.unwrap_or(mover);
                slot.state.observation(viewer, &mut slot.view);
                row.fin.copy_from_slice(&slot.view);
                if let Some(r) = slot.state.returns() {
                    for (out, &v) in row.rewards.iter_mut().zip(r.as_slice()) {
                        *out = (2.0 * v - 1.0).clamp(-1.0, 1.0) as f32;
                    }
                }
                *row.terminated = over;
                *row.truncated = cut;
                slot.episode += 1;
                slot.start(base, i, envs, seat, &initial)?;
            }
            slot.write(&mut row);
            Ok(())
        })?;
        Ok(())
    }

    fn final_observation(&self) -> &[f32] {
        &self.final_obs
    }

    fn episode_seeds(&self) -> Vec<u64> {
        self.slots.iter().map(|s| s.episode_seed).collect()
    }
}
