//! The one-ply value agent and the afterstate scorer it shares with the trainer: every legal
//! move valued by the position it leads to, averaged over the chance that follows, all of a
//! decision's positions (or many games') in one forward pass.

use super::*;

/// Where a candidate's value comes from: a row of the network's batch or a game's result.
#[derive(Clone, Copy, Debug)]
pub(super) enum Source {
    Row(u32),
    Result(u32),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Leaf {
    probability: f32,
    /// The chance outcome that led here (none: the move's own afterstate).
    outcome: Option<Action>,
    source: Source,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    action: Action,
    leaves: (u32, u32),
}

/// The afterstates of one or many decisions, gathered for one forward pass.
#[derive(Default)]
pub struct Scorer {
    seats: usize,
    input: usize,
    obs: Vec<f32>,
    rows: usize,
    results: Vec<f32>,
    leaves: Vec<Leaf>,
    candidates: Vec<Candidate>,
    /// Each candidate's value vector (viewer first), after [`Scorer::evaluate`].
    values: Vec<f32>,
    /// The network's outputs by row.
    row_values: Vec<f32>,
    buf: Vec<f32>,
    outcomes: Vec<(Action, f64)>,
    /// Weigh an action by the position it completes where the game gives one
    /// ([`State::completed`]), not by its afterstate.
    completed: bool,
}

impl Scorer {
    /// An empty scorer for a game of `seats` players and a network taking `input` values.
    pub fn new(seats: usize, input: usize) -> Self {
        Scorer { seats, input, ..Scorer::default() }
    }

    /// Forgets every decision.
    pub fn clear(&mut self) {
        self.obs.clear();
        self.rows = 0;
        self.results.clear();
        self.leaves.clear();
        self.candidates.clear();
        self.values.clear();
    }

    /// Adds the afterstates of `actions` in `state` (`mover` to play); returns the range of
    /// their candidates.
    pub fn add<S: State>(&mut self, state: &S, mover: Player, actions: &[Action]) -> std::ops::Range<usize> {
        let first = self.candidates.len();
        for &action in actions {
            let start = self.leaves.len() as u32;
            let next = match self.completed.then(|| state.completed(action)).flatten() {
                Some(done) => done,
                None => {
                    let mut next = state.clone();
                    next.apply_unchecked(action);
                    next
                }
            };
            let mut spread = false;
            if next.turn() == Turn::Chance {
                next.chance_outcomes(&mut self.outcomes);
                if (1..=MAX_OUTCOMES).contains(&self.outcomes.len()) {
                    spread = true;
                    let outcomes = std::mem::take(&mut self.outcomes);
                    for &(o, p) in &outcomes {
                        let mut after = next.clone();
                        after.apply_unchecked(o);
                        self.leaf(&after, mover, p as f32, Some(o));
                    }
                    self.outcomes = outcomes;
                }
            }
            if !spread {
                self.leaf(&next, mover, 1.0, None);
            }
            self.candidates.push(Candidate { action, leaves: (start, self.leaves.len() as u32) });
        }
        first..self.candidates.len()
    }

    fn leaf<S: State>(&mut self, state: &S, mover: Player, probability: f32, outcome: Option<Action>) {
        let source = match state.returns() {
            Some(r) => {
                let at = self.results.len() as u32;
                let r = r.as_slice();
                let n = r.len();
                self.results.extend((0..self.seats).map(|k| if k < n { r[(mover + k) % n] as f32 } else { 0.0 }));
                Source::Result(at)
            }
            None => {
                state.observation(mover, &mut self.buf);
                debug_assert_eq!(self.buf.len(), self.input);
                self.obs.extend_from_slice(&self.buf);
                self.rows += 1;
                Source::Row(self.rows as u32 - 1)
            }
        };
        self.leaves.push(Leaf { probability, outcome, source });
    }

    /// Positions waiting for the network.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Runs the network over every gathered position (one pass; on the calling thread where
    /// `serial`) and values each candidate.
    pub fn evaluate(&mut self, net: &Network, serial: bool) -> Result<(), LearnError> {
        let seats = self.seats;
        self.row_values.clear();
        if self.rows > 0 {
            let out =
                if serial { net.evaluate_serial(&self.obs, self.rows) } else { net.evaluate(&self.obs, self.rows) }
                    .map_err(|e| LearnError::Shape(e.to_string()))?;
            self.row_values = out.values;
        }
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.resize(self.candidates.len() * seats, 0.0);
        for (c, candidate) in self.candidates.iter().enumerate() {
            let out = &mut values[c * seats..(c + 1) * seats];
            for leaf in &self.leaves[candidate.leaves.0 as usize..candidate.leaves.1 as usize] {
                for (o, v) in out.iter_mut().zip(self.leaf_values(leaf)) {
                    *o += leaf.probability * v;
                }
            }
        }
        self.values = values;
        Ok(())
    }

    fn leaf_values(&self, leaf: &Leaf) -> &[f32] {
        let s = self.seats;
        match leaf.source {
            Source::Row(r) => &self.row_values[r as usize * s..(r as usize + 1) * s],
            Source::Result(at) => &self.results[at as usize..at as usize + s],
        }
    }

    /// Candidate `c`'s action and value vector (mover first).
    pub fn candidate(&self, c: usize) -> (Action, &[f32]) {
        (self.candidates[c].action, &self.values[c * self.seats..(c + 1) * self.seats])
    }

    /// The candidate in `range` the mover values most (ties broken by `rng`).
    pub fn best(&self, range: std::ops::Range<usize>, rng: &mut Rng) -> usize {
        let mut best = range.start;
        let mut ties = 0u32;
        let mut top = f32::NEG_INFINITY;
        for c in range {
            let v = self.values[c * self.seats];
            if v > top + 1e-7 {
                (best, top, ties) = (c, v, 1);
            } else if (v - top).abs() <= 1e-7 {
                ties += 1;
                if rng.random_range(0..ties) == 0 {
                    best = c;
                }
            }
        }
        best
    }

    /// The observation and value vector of candidate `c`'s position after `outcome` (the chance
    /// outcome that followed, none where the move's afterstate was valued whole); none for a
    /// finished game or an outcome not among those scored.
    pub fn position(&self, c: usize, outcome: Option<Action>) -> Option<(&[f32], &[f32])> {
        let candidate = self.candidates[c];
        let leaves = &self.leaves[candidate.leaves.0 as usize..candidate.leaves.1 as usize];
        let leaf = if leaves.len() == 1 && leaves[0].outcome.is_none() {
            &leaves[0]
        } else {
            leaves.iter().find(|l| l.outcome == outcome && outcome.is_some())?
        };
        match leaf.source {
            Source::Row(r) => {
                let r = r as usize;
                Some((&self.obs[r * self.input..(r + 1) * self.input], self.leaf_values(leaf)))
            }
            Source::Result(_) => None,
        }
    }
}

/// The one-ply agent on a value network: plays the move whose afterstate the network values
/// most for the mover, averaging over chance outcomes. Deterministic but for ties (`seed`).
pub struct ValueAgent<S> {
    name: String,
    net: Arc<Network>,
    model: String,
    scorer: Scorer,
    legal: Vec<Action>,
    rng: Rng,
    _state: std::marker::PhantomData<fn(&S)>,
}

impl<S: State> ValueAgent<S> {
    /// The agent `name` (`value` or `catan-td`) on `net`, loaded from `model`.
    pub fn new(name: &str, net: Arc<Network>, model: &str, seats: usize, seed: u64) -> Self {
        let input = net.config().input_len();
        ValueAgent {
            name: name.to_string(),
            net,
            model: model.to_string(),
            scorer: Scorer::new(seats, input),
            legal: Vec::new(),
            rng: rng_from_seed(seed),
            _state: std::marker::PhantomData,
        }
    }

    /// Weighs each action by the position it completes where the game gives one
    /// ([`State::completed`]: Catan's offers and answers by the trade), not by its afterstate.
    pub fn weigh_completed(mut self, on: bool) -> Self {
        self.scorer.completed = on;
        self
    }
}

impl<S: State> Agent<S> for ValueAgent<S> {
    fn spec(&self) -> String {
        let offer = if self.scorer.completed { ",offer=trade" } else { "" };
        format!("{}:model={}{offer}", self.name, self.model)
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        let mover = state.current_player().ok_or_else(|| Error::Invalid("no player to move".into()))?;
        state.legal_actions(&mut self.legal);
        match self.legal.len() {
            0 => return Err(Error::Invalid("no legal move".into())),
            1 => return Ok(self.legal[0]),
            _ => {}
        }
        self.scorer.clear();
        let range = self.scorer.add(state, mover, &self.legal);
        self.scorer.evaluate(&self.net, false).map_err(Error::from)?;
        Ok(self.scorer.candidate(self.scorer.best(range, &mut self.rng)).0)
    }
}
