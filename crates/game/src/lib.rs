//! The interfaces every part of meeple is generic over.
//!
//! A [`Game`] is immutable rules plus parameters; it builds initial [`State`]s and describes its
//! spaces (players, actions, observation shape). A state is a small `Clone` value that search can
//! copy in every iteration. An [`Agent`] maps a state and a [`Budget`] to an action. Everything
//! else in meeple (arena, learning, web, Python) only speaks these traits.

pub mod access;
mod agent;
pub mod conformance;
mod error;
mod evaluator;
pub mod limits;
mod perft;
mod record;
mod rng;
mod spec;
pub mod testing;
mod values;
pub mod zobrist;

pub use agent::{Agent, AgentInfo, BoxedAgent, Budget, Cancel, CancelHandle, MoveStat};
pub use error::Error;
pub use evaluator::{BoxedEvaluator, Evaluator, ZeroEvaluator};
pub use perft::{perft, perft_divide};
pub use record::{GameRecord, replay};
pub use rng::{Rng, derive_seed, draw_chance, rng_from_seed, sample_chance, seat_seed};
pub use spec::{DURATION_LIMIT, Options, ParamInfo, Spec, parse_duration, parse_size};
pub use values::Values;

use std::fmt::{Debug, Display};

/// A dense action id in `0..Game::num_actions()` (or `0..Game::max_chance_outcomes()` at chance nodes).
pub type Action = u32;

/// A seat at the table, `0..Game::num_players()`.
pub type Player = usize;

/// The most players any meeple game seats.
pub const MAX_PLAYERS: usize = 6;

/// Who acts in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Turn {
    /// This player chooses the next action.
    Player(Player),
    /// Nature chooses among [`State::chance_outcomes`].
    Chance,
    /// The game is over; [`State::returns`] is defined.
    Terminal,
}

/// Static description of a game: its name, what it is and the parameters its spec accepts.
#[derive(Clone, Copy, Debug)]
pub struct GameInfo {
    /// Name used in spec strings (`connect4`).
    pub name: &'static str,
    /// One line saying what the game is.
    pub about: &'static str,
    /// Parameters accepted after the colon in a spec (`connect4:rows=6,cols=7`).
    pub params: &'static [ParamInfo],
}

/// A section of a game's rules card ([`Game::rules`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RulesSection {
    pub heading: String,
    pub lines: Vec<String>,
}

impl RulesSection {
    pub fn new(heading: &str, lines: &[&str]) -> Self {
        RulesSection { heading: heading.into(), lines: lines.iter().map(|l| l.to_string()).collect() }
    }
}

/// Actions laid out on the observation's board ([`Game::action_planes`]): action `a` is cell
/// `index[a]` of `planes` planes of the board, counted `plane * rows * cols + row * cols + col`
/// where `[_, rows, cols]` is the observation shape. No two actions share a cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionPlanes {
    /// Number of planes (kinds of move).
    pub planes: usize,
    /// Each action id's cell.
    pub index: Vec<u32>,
}

/// A game: immutable rules and parameters, shareable across threads.
pub trait Game: Clone + Debug + Send + Sync + 'static {
    /// The state type this game's positions are stored in.
    type State: State;

    /// Name, description and accepted parameters.
    const INFO: GameInfo;

    /// Builds the game from a spec whose name is `INFO.name`; unknown keys or bad values are errors.
    fn from_spec(spec: &Spec) -> Result<Self, Error>;

    /// The canonical spec of this game with every parameter spelled out.
    fn spec(&self) -> Spec;

    /// The game a network is trained for: [`Game::spec`] with the options that a network reads
    /// from its observation brought to one value, so one network plays every game that shares
    /// it (Santorini's gods are planes of its input, so a network trained on random pairings
    /// plays any fixed pairing). Games that share a network spec have the same observation and
    /// action shapes. The default is the spec itself: every option changes the network's game.
    fn network_spec(&self) -> Spec {
        self.spec()
    }

    /// Number of seats.
    fn num_players(&self) -> usize;

    /// Number of distinct player actions; every legal action is below it.
    fn num_actions(&self) -> usize;

    /// Number of distinct chance outcomes (0 for deterministic games).
    fn max_chance_outcomes(&self) -> usize {
        0
    }

    /// Shape of [`State::observation`]; its product is the length of every observation.
    fn observation_shape(&self) -> Vec<usize>;

    /// Where actions sit on the observation's board, for games whose actions are placements
    /// (Cathedral: a building, turned one way, at a square). A network can then score every
    /// placement with a convolution, one plane per kind of move, instead of one dense weight row
    /// per action id. `None` (the default) where actions are not placements.
    fn action_planes(&self) -> Option<ActionPlanes> {
        None
    }

    /// Whether this game's observation is `narrower`'s with values appended and its action ids
    /// `narrower`'s with more after them, so that a network trained on `narrower` can start this
    /// game's training with the new inputs and actions weighted zero (Catan with player trading
    /// extends the same Catan without it). False unless a game says so.
    fn extends(&self, narrower: &Self) -> bool {
        let _ = narrower;
        false
    }

    /// The state before the first move.
    fn initial_state(&self) -> Self::State;

    /// Builds an agent that belongs to this game (a rules-based player), if `spec` names one.
    /// Generic agents (random, search) live in `meeple-search`; this hook lets a game register
    /// its own without the search crate knowing any game.
    fn game_agent(&self, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<Self::State>, Error>> {
        let _ = (spec, seed);
        None
    }

    /// Descriptions of the agents [`Game::game_agent`] can build.
    fn game_agent_infos(&self) -> Vec<AgentInfo> {
        Vec::new()
    }

    /// Builds the evaluator named by `spec` (`eval=NAME` in search specs), if this game has one
    /// by that name. `zero` exists for every game and is handled by the search crate.
    fn evaluator(&self, spec: &Spec) -> Option<Result<BoxedEvaluator<Self::State>, Error>> {
        let _ = spec;
        None
    }

    /// Descriptions of this game's evaluators (name, what it values, options).
    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        Vec::new()
    }

    /// Agent specs that make good fixed rungs of a learning ladder for this game, beside the
    /// generic ones every game gets (`random`, `mcts`): a quick search with the game's own
    /// evaluator, or its rules-based player. None by default.
    fn ladder_agents(&self) -> Vec<String> {
        Vec::new()
    }

    /// The rules in short, as a card beside the board: sections of a heading and lines in
    /// words, for this setting of the game (its options change the rules; Catan's trading,
    /// Santorini's gods). Empty for a game without one.
    fn rules(&self) -> Vec<RulesSection> {
        Vec::new()
    }

    /// The agents a person meets at a table by default: `(opponent, advisor)`, the strongest
    /// for this game by measurement (the page offers them first). A network is named by its
    /// file in the shipped `models/` folder, which the server always allows.
    fn table_agents(&self) -> (String, String) {
        ("mcts:time=1s".into(), "mcts:time=2s".into())
    }

    /// What `meeple tune` tunes for this game when the user names nothing, if the game has a
    /// tuned heuristic of its own.
    fn tuning_defaults(&self) -> Option<TuningDefaults> {
        None
    }
}

/// A game's default weight-tuning problem ([`Game::tuning_defaults`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuningDefaults {
    /// The tuned agent, with `{params}` (or `{NAME}`) where the values go.
    pub agent: &'static str,
    /// The opponent of every tuning match.
    pub opponent: &'static str,
    /// The parameters and their ranges, `name=low..high` or `name=low..high:log`.
    pub params: &'static [&'static str],
    /// Where the search starts, one value per parameter.
    pub start: &'static [f64],
}

/// A position: small, `Clone`, and cheap enough to copy in every search iteration.
pub trait State: Clone + Debug + Display + PartialEq + Send + Sync + 'static {
    /// Whether [`State::is_legal`] answers without generating the legal moves (search then
    /// tries its table and killer moves before generating the rest).
    const CHEAP_IS_LEGAL: bool = false;

    /// Who acts now.
    fn turn(&self) -> Turn;

    /// The position a one-ply value agent weighs for `action` where the afterstate hides what the
    /// action leads to because other players decide it: Catan's offer, whose afterstate is the
    /// offer on the table, is weighed by the position after the trade it would complete. `None`
    /// (the default): the afterstate itself.
    fn completed(&self, action: Action) -> Option<Self> {
        let _ = action;
        None
    }

    /// The move made for the player to move if they do not answer in time, where the move is
    /// an answer to a question another player put to them (Catan: declining an offer), so that
    /// one absent person cannot hold everyone's game. `None` (the default): the player's own
    /// decision, which waits for them.
    fn unanswered(&self) -> Option<Action> {
        None
    }

    /// Clears `out` and fills it with the legal actions of the player to move (ascending ids,
    /// no duplicates). Leaves it empty at chance and terminal states.
    fn legal_actions(&self, out: &mut Vec<Action>);

    /// Clears `out` and fills it with the chance outcomes and their probabilities (summing to 1).
    /// Empty unless `turn()` is `Turn::Chance`.
    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
    }

    /// A uniformly random legal action of the player to move, for playouts. `buf` is scratch
    /// space. Games may override it with something faster than listing every action (counting
    /// moves, then decoding the chosen one); the conformance kit checks the result is legal.
    fn random_action(&self, rng: &mut Rng, buf: &mut Vec<Action>) -> Action {
        use rand::RngExt;
        self.legal_actions(buf);
        buf[rng.random_range(0..buf.len())]
    }

    /// Applies an action known to be legal (or a chance outcome known to be possible). Search
    /// calls this in its hot loop; an illegal action here is a caller bug and may leave the state
    /// meaningless, but must not cause undefined behaviour.
    fn apply_unchecked(&mut self, action: Action);

    /// Whether `action` may be applied now (a legal action, or a possible chance outcome).
    fn is_legal(&self, action: Action) -> bool {
        match self.turn() {
            Turn::Terminal => false,
            Turn::Player(_) => {
                let mut buf = Vec::new();
                self.legal_actions(&mut buf);
                buf.contains(&action)
            }
            Turn::Chance => {
                let mut buf = Vec::new();
                self.chance_outcomes(&mut buf);
                buf.iter().any(|&(a, _)| a == action)
            }
        }
    }

    /// Applies `action` if it is legal; otherwise returns an error and leaves the state unchanged.
    fn apply(&mut self, action: Action) -> Result<(), Error> {
        if self.turn() == Turn::Terminal {
            return Err(Error::GameOver);
        }
        if !self.is_legal(action) {
            return Err(Error::IllegalAction { action, reason: self.illegal_reason(action) });
        }
        self.apply_unchecked(action);
        Ok(())
    }

    /// Why `action` is not legal here, for error messages. Games may say more than the default.
    fn illegal_reason(&self, action: Action) -> String {
        let mut legal = Vec::new();
        self.legal_actions(&mut legal);
        let shown: Vec<String> = legal.iter().map(|&a| self.action_to_string(a)).collect();
        format!("action id {action} is not legal here; legal: {}", shown.join(" "))
    }

    /// Per-player results once the game is over (win 1, loss 0, draw 0.5, or the game's
    /// ranking values); `None` before the end.
    fn returns(&self) -> Option<Values>;

    /// Game-specific figures of a finished game that tournaments average and report (Catan:
    /// dice rolls and turns). Names are stable keys; empty for most games.
    fn metrics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Per-player game scores (points, margins, tie-breaks); defined at every state.
    fn scores(&self) -> Values;

    /// Writes `player`'s view of the state into `out` (cleared first), laid out as
    /// `Game::observation_shape()`, every value in `0..=1`. Hidden information is absent from it.
    fn observation(&self, player: Player, out: &mut Vec<f32>);

    /// `player`'s view of the state as text (the full board for perfect-information games).
    fn observation_string(&self, player: Player) -> String {
        let _ = player;
        self.to_string()
    }

    /// The number of symmetries of positions (rotations, reflections) that learning may use to
    /// augment its data; 1 (the identity alone) by default. Symmetry 0 is the identity.
    fn symmetries(&self) -> usize {
        1
    }

    /// The position under symmetry `k` (`0..symmetries()`): rules commute with it, so the
    /// image of a legal move is legal in the image and leads to the image of the result.
    fn symmetric(&self, k: usize) -> Self {
        let _ = k;
        self.clone()
    }

    /// The action of [`State::symmetric`]`(k)` that does what `action` does here.
    fn symmetric_action(&self, action: Action, k: usize) -> Action {
        let _ = k;
        action
    }

    /// Who holds each cell of the board now, from `player`'s view, for learning's ownership
    /// target (as KataGo's): `out` gets one value per cell of the observation's board planes
    /// (row-major, as `observation` lays out a plane), 1 where `player` holds the cell, -1 where
    /// another seat does, 0 where nobody does. Read at the end of a game, it says how the game
    /// was won, cell by cell. Returns false (and leaves `out` empty) where the game has no
    /// such notion, the default.
    fn ownership(&self, player: Player, out: &mut Vec<f32>) -> bool {
        let _ = player;
        out.clear();
        false
    }

    /// How far apart the seats' final [`State::scores`] can end, for learning's score-margin
    /// target (KataGo's auxiliary score): at the end of a game, the mover's score minus the best
    /// other seat's, over this scale and clamped to -1..=1, says by how much the game was won
    /// where the result says only who won. `None` (the default) where the scores say no more
    /// than the result.
    fn score_scale(&self) -> Option<f32> {
        None
    }

    /// Named text views beside the board that a person can ask for at the terminal (Cathedral
    /// `pieces`, Sagrada `cards`): `(name, what it shows)`.
    fn text_views(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// View `name` (one of [`State::text_views`]) as `viewer` sees it; `None` if the game has
    /// no such view.
    fn text_view(&self, viewer: Player, name: &str) -> Option<String> {
        let _ = (viewer, name);
        None
    }

    /// A picture of the legal `action` before it is made, for moves that are hard to picture
    /// from their notation (Cathedral: the board with the building drawn in); `None` where the
    /// notation says it all.
    fn preview(&self, action: Action) -> Option<String> {
        let _ = action;
        None
    }

    /// What a page needs to draw the position for `viewer` (`None`: a spectator), as plain JSON
    /// data: the board, hands, counters. Whatever `viewer` may not see (another player's hand or
    /// private card) is absent, not hidden by the page. The default is the text board, which
    /// suits perfect-information games only.
    fn view(&self, viewer: Option<Player>) -> serde_json::Value {
        let text = match viewer {
            Some(p) => self.observation_string(p),
            None => self.to_string(),
        };
        serde_json::json!({ "text": text })
    }

    /// The clicks that enter the legal `action` on a page, as targets `kind:name`: a board
    /// target the view draws (`c:b2` a cell, `w:a1` a worker, `d:R5` a die, `v:12` a corner) or a
    /// button (`btn:pass`). A page highlights the first targets of all legal paths, narrows them
    /// with each click and submits once one action is left, so no path may be a prefix of
    /// another's. The default is one button with the action's notation.
    fn action_path(&self, action: Action) -> Vec<String> {
        vec![format!("btn:{}", self.action_to_string(action))]
    }

    /// Samples a full state consistent with what `player` knows (for determinized search).
    /// The identity for perfect-information games.
    fn determinize(&self, player: Player, rng: &mut Rng) -> Self {
        let _ = (player, rng);
        self.clone()
    }

    /// Like [`State::determinize`], but the world's later chance events stay open, each with
    /// its real odds, where `determinize` may fix them in advance (a Sagrada world fixes every
    /// later draw, as ISMCTS wants of one iteration's world). For searches that model chance
    /// themselves over many simulations of one sampled world (AlphaZero's): a fixed future
    /// there would let every simulation see the dice to come. The default is `determinize`.
    fn determinize_open(&self, player: Player, rng: &mut Rng) -> Self {
        self.determinize(player, rng)
    }

    /// A 64-bit hash of the position; equal states hash equal.
    fn zobrist(&self) -> u64;

    /// The action in the game's notation (also used for chance outcomes at chance nodes).
    fn action_to_string(&self, action: Action) -> String;

    /// The action (or chance outcome) as `viewer` sees it: like [`State::action_to_string`] with
    /// whatever `viewer` may not know masked (a card dealt to another player). The default
    /// hides nothing.
    fn action_to_string_for(&self, viewer: Player, action: Action) -> String {
        let _ = viewer;
        self.action_to_string(action)
    }

    /// What the player to move is asked to do now, in words for a person at the table ("Choose
    /// a player to rob", "Discard 4 cards"); `None` where "your move" says it all.
    fn prompt(&self) -> Option<String> {
        None
    }

    /// The action (or chance outcome) in words for a person, as `viewer` may know it: a button's
    /// label and a log line ("settlement at corner 12", "dice: 8"). The default is the notation
    /// as [`State::action_to_string_for`] gives it.
    fn describe_for(&self, viewer: Player, action: Action) -> String {
        self.action_to_string_for(viewer, action)
    }

    /// Reads an action in the game's notation. Only the text is checked; legality is for `apply`.
    fn parse_action(&self, text: &str) -> Result<Action, Error>;

    /// The player to move, if any.
    fn current_player(&self) -> Option<Player> {
        match self.turn() {
            Turn::Player(p) => Some(p),
            _ => None,
        }
    }

    /// Whether the game is over.
    fn is_terminal(&self) -> bool {
        self.turn() == Turn::Terminal
    }
}
