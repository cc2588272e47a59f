//! A game at a table where people sit: the line of moves with who made each and how long it
//! took, positions rebuilt from sparse checkpoints, nature's draws fixed by the seed and the ply,
//! and the rule for taking a person's move back. `meeple play` (the terminal) and `meeple serve`
//! (the web) both keep their game in one; what differs between them is how a seat is asked for
//! its move, not what a move, a draw or an undo is.

use meeple_game::{Action, Error, Game, GameRecord, Player, State, Turn, derive_seed, draw_chance, rng_from_seed};

/// The viewer who holds no seat (a spectator, or the line told to everyone): it is shown only
/// what is public.
pub const SPECTATOR: Player = usize::MAX;

/// A position is kept every this many plies; the others are replayed from the one before.
pub const CHECKPOINT_EVERY: usize = 32;

/// The mover of a chance event in [`Table::mover`]'s byte form.
const NATURE: u8 = u8::MAX;

/// One game of `G` as it is being played: bounded by its actions (4 bytes a ply), one position
/// every [`CHECKPOINT_EVERY`] plies and the latest.
#[derive(Clone)]
pub struct Table<G: Game> {
    game: G,
    seed: u64,
    checkpoints: Vec<G::State>,
    latest: G::State,
    actions: Vec<Action>,
    /// Who made each ply: a seat, or [`NATURE`].
    movers: Vec<u8>,
    ms: Vec<Option<f32>>,
}

impl<G: Game> Table<G> {
    /// A new game of `game` whose chance events are drawn from `seed` (nothing is drawn yet:
    /// see [`Table::draw`]).
    pub fn new(game: G, seed: u64) -> Self {
        let initial = game.initial_state();
        Table {
            game,
            seed,
            checkpoints: vec![initial.clone()],
            latest: initial,
            actions: Vec::new(),
            movers: Vec::new(),
            ms: Vec::new(),
        }
    }

    pub fn game(&self) -> &G {
        &self.game
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Plies played.
    pub fn ply(&self) -> usize {
        self.actions.len()
    }

    /// The position now.
    pub fn latest(&self) -> &G::State {
        &self.latest
    }

    /// The moves so far.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Who made ply `k` (0-based): a seat, or `None` for nature.
    pub fn mover(&self, k: usize) -> Option<Player> {
        (self.movers[k] != NATURE).then_some(self.movers[k] as Player)
    }

    /// How long ply `k`'s mover thought, where that was measured.
    pub fn ms(&self, k: usize) -> Option<f32> {
        self.ms[k]
    }

    /// The position after `ply` plies: the checkpoint before it, moved forward.
    pub fn state_at(&self, ply: usize) -> G::State {
        if ply == self.ply() {
            return self.latest.clone();
        }
        let c = ply / CHECKPOINT_EVERY;
        let mut s = self.checkpoints[c].clone();
        for &a in &self.actions[c * CHECKPOINT_EVERY..ply] {
            s.apply_unchecked(a);
        }
        s
    }

    /// Plays `action` (checked against the rules) by whoever is to move, `ms` its thinking time.
    pub fn push(&mut self, action: Action, ms: Option<f32>) -> Result<(), Error> {
        let mover = match self.latest.turn() {
            Turn::Player(p) => p.min(254) as u8,
            _ => NATURE,
        };
        self.latest.apply(action)?;
        self.actions.push(action);
        self.movers.push(mover);
        self.ms.push(ms);
        if self.ply().is_multiple_of(CHECKPOINT_EVERY) {
            self.checkpoints.push(self.latest.clone());
        }
        Ok(())
    }

    /// Takes the line back to `ply` plies.
    pub fn truncate(&mut self, ply: usize) {
        self.latest = self.state_at(ply);
        self.actions.truncate(ply);
        self.movers.truncate(ply);
        self.ms.truncate(ply);
        self.checkpoints.truncate(ply / CHECKPOINT_EVERY + 1);
    }

    /// Nature's draw in `state` at `ply`: from the table's seed and the ply alone, so a
    /// restarted server draws what it would have, and undo never draws again.
    pub fn draw(&self, state: &G::State, ply: usize, outcomes: &mut Vec<(Action, f64)>) -> Action {
        draw_chance(state, outcomes, &mut rng_from_seed(derive_seed(derive_seed(self.seed, 0), ply as u64)))
    }

    /// Nature moves until a seat is to move or the game ends.
    pub fn resolve_chance(&mut self) {
        let mut outcomes = Vec::new();
        while self.latest.turn() == Turn::Chance {
            let a = self.draw(&self.latest, self.ply(), &mut outcomes);
            self.push(a, None).expect("a listed chance outcome applies");
        }
    }

    /// `first` and nature's moves after it (until `stop(ply, state)`), played on a copy of the
    /// latest position: the moves, and the position they lead to. The table is not changed.
    #[allow(clippy::type_complexity)]
    pub fn follow(
        &self,
        first: Action,
        ms: Option<f32>,
        stop: impl Fn(usize, &G::State) -> bool,
    ) -> Result<(Vec<(Action, Option<f32>)>, G::State), Error> {
        let mut state = self.latest.clone();
        state.apply(first)?;
        let mut moves = vec![(first, ms)];
        let mut outcomes = Vec::new();
        while state.turn() == Turn::Chance && !stop(self.ply() + moves.len(), &state) {
            let a = self.draw(&state, self.ply() + moves.len(), &mut outcomes);
            state.apply(a)?;
            moves.push((a, None));
        }
        Ok((moves, state))
    }

    /// What an undo takes back: the ply before the last move of a seat `person` says is a
    /// person's, and that seat. Refused once the game is over, past a chance event (what
    /// nature showed cannot be unseen) and past another seat's answer to a question (a Catan
    /// offer): taking the question back would let it be asked again and again.
    pub fn undo_target(&self, person: impl Fn(Player) -> bool) -> Result<(usize, Player), String> {
        if self.latest.is_terminal() {
            return Err("the game is over: its moves stand".into());
        }
        for k in (0..self.ply()).rev() {
            match self.mover(k) {
                None => return Err("cannot undo past a chance event (dice, a draw)".into()),
                Some(p) if person(p) => return Ok((k, p)),
                _ if self.state_at(k).unanswered().is_some() => {
                    return Err("cannot undo past other players' answers to an offer".into());
                }
                _ => {}
            }
        }
        Err("there is no move of a person to take back".into())
    }

    /// The moves `from..to` as `viewer` may know them: for each, its ply (1-based), its mover,
    /// its notation, its words and its time.
    pub fn line(&self, from: usize, to: usize, viewer: Player) -> Vec<Played> {
        let mut lines = Vec::with_capacity(to - from);
        let mut s = self.state_at(from);
        for k in from..to {
            let a = self.actions[k];
            lines.push(Played {
                ply: k + 1,
                mover: self.mover(k),
                text: s.action_to_string_for(viewer, a),
                words: s.describe_for(viewer, a),
                ms: self.ms[k],
            });
            s.apply_unchecked(a);
        }
        lines
    }

    /// The game along `line` from the start, ending in `last`, as an arena record: `agents`
    /// names the seats, `resigned` the seat that gave up, if one did.
    pub fn record_of(
        &self,
        line: impl Iterator<Item = Action>,
        last: &G::State,
        agents: Vec<String>,
        resigned: Option<Player>,
    ) -> GameRecord {
        let mut actions = Vec::with_capacity(self.actions.len() + 4);
        let mut s = self.checkpoints[0].clone();
        for a in line {
            actions.push(s.action_to_string(a));
            s.apply_unchecked(a);
        }
        GameRecord {
            game: self.game.spec().to_string(),
            seed: self.seed,
            returns: match resigned {
                Some(p) => Some(GameRecord::resignation_returns(agents.len(), p)),
                None => last.returns().map(|r| r.to_vec()),
            },
            agents,
            actions,
            scores: last.scores().to_vec(),
            metrics: if last.is_terminal() {
                last.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            } else {
                Default::default()
            },
            resigned,
        }
    }

    /// The game so far as an arena record.
    pub fn record(&self, agents: Vec<String>, resigned: Option<Player>) -> GameRecord {
        self.record_of(self.actions.iter().copied(), &self.latest, agents, resigned)
    }
}

/// One move of a table's line as a viewer may know it.
#[derive(Clone, Debug, PartialEq)]
pub struct Played {
    /// 1-based.
    pub ply: usize,
    /// The seat that moved, `None` for nature.
    pub mover: Option<Player>,
    /// Its notation.
    pub text: String,
    /// In words.
    pub words: String,
    pub ms: Option<f32>,
}

impl Played {
    /// The move in words, with its notation where the two differ (the notation is what a
    /// person types).
    pub fn in_words(&self) -> String {
        if self.words == self.text { self.text.clone() } else { format!("{} ({})", self.words, self.text) }
    }
}
