//! What the server asks of a match and hands it: the limits, the requests, the changes it
//! stores before they are applied, and the [`Session`] trait through which it drives any game.

use super::*;

/// The viewer id a spectator's view is computed for: no seat, so nothing hidden is shown.
pub use meeple_arena::SPECTATOR;

/// The longest a person may let an agent think per move.
pub const MAX_MOVE_TIME: Duration = Duration::from_secs(60);
/// The longest an analysis may think.
pub const MAX_ANALYSIS_TIME: Duration = Duration::from_secs(10);
/// The longest pause between moves when watching agents.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// The most log lines one snapshot or event carries (older pages: `log_from`).
pub const LOG_PAGE: usize = 400;

/// A computation to run off the async runtime (an agent's move), and what to do with its result
/// once the match is locked again.
pub type Job = Box<dyn FnOnce() -> Completion + Send>;
/// Takes a finished job back into the match it came from: the change to store, if its result
/// still applies.
pub type Completion = Box<dyn FnOnce(&mut dyn Session) -> Option<Change> + Send>;
/// An analysis to run off the async runtime; it gives the answer to send.
/// A bad advisor spec is an error; a search that fails is an answer with an `error`.
pub type AnalysisJob = Box<dyn FnOnce() -> Result<Value, ApiError> + Send>;

/// What the server allows the agents of a match.
#[derive(Clone, Debug)]
pub struct Allowed {
    /// Directories that specs from clients may load files from.
    pub files: Arc<Vec<PathBuf>>,
    /// The most fixed memory (tables) one agent spec may take.
    pub agent_memory: u64,
    /// The most plies one match may reach.
    pub max_plies: usize,
}

impl Default for Allowed {
    fn default() -> Self {
        Allowed { files: Arc::new(Vec::new()), agent_memory: 64 << 20, max_plies: 20_000 }
    }
}

impl Allowed {
    /// Builds an agent from a client's spec: files only from the allowed directories, its
    /// tables within the per-spec cap. Runs on the calling thread (never an async worker).
    pub fn agent<G: Game>(&self, game: &G, spec: &str, seed: u64) -> Result<BoxedAgent<G::State>, ApiError> {
        let agent = meeple_game::access::restricted(&self.files, || meeple_learn::make_agent(game, spec, seed))
            .map_err(|e| ApiError::bad(e.to_string()))?;
        let bytes = agent.memory_bytes();
        if bytes > self.agent_memory {
            return Err(ApiError::bad(format!(
                "'{spec}' takes {} of tables; this server allows {} per agent (give a smaller tt=)",
                meeple_game::limits::format_bytes(bytes),
                meeple_game::limits::format_bytes(self.agent_memory)
            )));
        }
        Ok(agent)
    }
}

/// What a new match is made of.
#[derive(Clone, Debug)]
pub struct Setup {
    pub game: String,
    /// Agent specs, or `human`, in seat order.
    pub seats: Vec<String>,
    /// The seed a client chose (the match is then "open": whoever knows the seed knows every
    /// deal and die); `None`: a secret one from the operating system.
    pub seed: Option<u64>,
    /// Time each agent may think per move.
    pub move_time: Duration,
    /// Pause before each agent move when no person plays (watching).
    pub delay: Duration,
    /// The person seats the creator plays itself and holds the tokens of (hot seat); every
    /// other person seat gets an invitation. `None`: the first person seat.
    pub play: Option<Vec<Player>>,
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

/// Who a request speaks for, from its token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The seat whose token was given.
    pub seat: Option<Player>,
    /// The match's owner token was given (controls, delete).
    pub owner: bool,
}

/// What a match is, for the store: enough to rebuild it after a restart.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Stored {
    pub game: String,
    pub seats: Vec<String>,
    /// A token per seat: `Some` for a person's seat its creator kept or a player claimed.
    pub tokens: Vec<Option<String>>,
    /// A person seat's invitation: the code that claims it (`tokens` is then `None`), or, once
    /// claimed, the spent code (so claiming it again is told apart from a wrong code).
    #[serde(default)]
    pub invites: Vec<Option<String>>,
    pub owner: String,
    pub seed: u64,
    pub open: bool,
    pub move_time_ms: u64,
    pub delay_ms: u64,
    pub paused: bool,
    /// The seat that resigned, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resigned: Option<Player>,
}

/// What the store writes for a [`Change`], in one transaction: the stored line cut to `keep`
/// plies and these moves from there on, the setup when it changed, the record once the game is
/// over.
#[derive(Clone, Debug, Default)]
pub struct Write {
    pub keep: usize,
    /// `(ply, action, ms)` from `keep` on.
    pub moves: Vec<(usize, Action, Option<f32>)>,
    pub setup: Option<Stored>,
    pub finished: Option<GameRecord>,
}

/// A change to a match, computed from the match as it is, applied once the store has committed
/// its `write`.
pub struct Change {
    pub write: Write,
    pub(super) effect: Effect,
}

pub(super) enum Effect {
    /// Moves that were already shown reach the store (nature's after a restart, the opening deal).
    Saved,
    /// A person's move and nature's that follow it.
    Moves,
    Undo {
        to: usize,
    },
    Control(Control),
    /// A person gave up: the game ends there.
    Resign {
        seat: Player,
    },
    /// Seats claimed, tokens rotated, invitations issued.
    Seats {
        tokens: Vec<Option<String>>,
        invites: Vec<Option<String>>,
    },
    /// An agent's move, with the agent itself (its tree) back, for the line it was computed on.
    Agent {
        seat: Player,
        epoch: u64,
        ply: usize,
        agent: Option<Box<dyn Any + Send>>,
    },
    /// An agent that could not move: the match pauses with why.
    Failed {
        epoch: u64,
        ply: usize,
        error: String,
    },
}

/// A seat and the secret handed out for it: its token, or its invitation's code.
pub type Handed = (Player, String);

/// A match of any game, as the server drives it.
pub trait Session: Send + Any {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Who `token` speaks for in this match.
    fn access(&self, token: Option<&str>) -> Access;
    /// The match for `viewer` (`None`: a spectator) at `ply` (`None`: the latest), with the log
    /// lines from `log_from` (default: the last page).
    fn snapshot(&self, viewer: Option<Player>, ply: Option<usize>, log_from: Option<usize>) -> Result<Value, ApiError>;
    /// One line for the list of matches.
    fn summary(&self) -> Value;
    /// How many seats the game has.
    fn seats(&self) -> usize;
    /// The seat to move at the latest ply.
    fn mover(&self) -> Option<Player>;
    /// The latest ply.
    fn ply(&self) -> usize;
    /// Refuses a viewer the asker may not be.
    fn check_viewer(&self, viewer: Option<Player>, access: Access) -> Result<(), ApiError>;
    /// A person's move, with nature's that follow it.
    fn submit(&self, request: &MoveRequest, access: Access) -> Result<Change, ApiError>;
    /// Takes back the last person's move (and the agents' replies), if `ply` is the ply the
    /// match is at (a second click of the same undo is stale); gives the ply it goes back to.
    fn undo(&self, ply: usize, access: Access) -> Result<(Change, usize), ApiError>;
    fn control(&self, control: &Control) -> Result<Change, ApiError>;
    /// The seat of `access` gives up: the game ends, that seat scoring nothing and the others
    /// sharing the win. Refused where other people play on at a table of more than two seats
    /// (one person's resignation would end their game).
    fn resign(&self, access: Access) -> Result<Change, ApiError>;
    /// Claims the person seat whose invitation is `invite` for whoever holds `token` from now
    /// on; gives the seat.
    fn claim(&self, invite: &str, token: String) -> Result<(Change, Player), ApiError>;
    /// Replaces the asker's seat token with `token`; gives the seat.
    fn rotate(&self, access: Access, token: String) -> Result<(Change, Player), ApiError>;
    /// Issues `code` as the invitation of an unclaimed person seat, voiding the one before.
    fn invite(&self, seat: Player, code: String) -> Result<Change, ApiError>;
    /// The moves nature made since the store last wrote (after a restart), as a change.
    fn unsaved(&self) -> Option<Change>;
    /// Whether `change` still fits the match (an agent's move whose line an undo took back no
    /// longer does).
    fn valid(&self, change: &Change) -> bool;
    /// Applies a change the store has committed. False: the match has moved on (an undo took
    /// back the line an agent's move was computed on) and nothing changed.
    fn apply(&mut self, change: Change) -> bool;
    /// Shows the players why an agent's move is waiting for the store (`None`: it no longer is).
    fn stall(&mut self, why: Option<String>);
    /// The next agent move to compute, if an agent is to move and may.
    fn next_job(&mut self) -> Option<Job>;
    /// The ply at which a person must answer another player's question ([`State::unanswered`]),
    /// if one must now, and whether that answer is their only legal move (then it is made for
    /// them at once: nobody clicks "decline" for an offer they cannot pay).
    fn awaiting_answer(&self) -> Option<(usize, bool)>;
    /// The answer made for a person who let the time pass at `ply` (stale if the match moved).
    fn answer_for_absent(&self, ply: usize) -> Result<Change, ApiError>;
    /// The pause before the next agent move (watching only).
    fn delay(&self) -> Duration;
    /// An agent's advice for the position at `ply`, from what `viewer` knows; the advisor is
    /// built inside the job.
    fn analysis(
        &self,
        agent: &str,
        ply: Option<usize>,
        viewer: Option<Player>,
        time: Duration,
        cancel: Option<meeple_game::Cancel>,
    ) -> Result<AnalysisJob, ApiError>;
    /// The game as an arena record.
    fn record(&self) -> GameRecord;
    /// Whether everything about the match may be shown to anyone (no person plays, the game is
    /// over, or it is a replay): the record holds every hidden deal.
    fn public(&self) -> bool;
    /// Whether a person plays at this table (an agent's move there is one a person waits for).
    fn has_person(&self) -> bool;
    /// Whether an agent is thinking (the match is not idle).
    fn busy(&self) -> bool;
    /// Whether the game is over (or stopped at its ply cap).
    fn finished(&self) -> bool;
    /// The memory the agents may hold at most ([`meeple_game::Agent::memory_bound`]), counted
    /// when they are built.
    fn agents_bound(&self) -> u64;
    /// Records a job that died (an agent that panicked): the change that pauses the match.
    fn job_failed(&mut self, why: String) -> Option<Change>;
    /// Tells a thinking agent to stop at once (the match is dropped); its move is not played.
    fn stop_thinking(&mut self);
    /// The match is dropped: stops a thinking agent and drops the idle ones. Returns whether an
    /// agent is still out thinking (its job holds it until it stops).
    fn close(&mut self) -> bool;
    /// What the store needs to know of this match.
    fn stored(&self) -> Option<Stored>;
    /// The seats whose tokens this server holds for the creator (`play`), and the invitations of
    /// the others: `(seat, token)` and `(seat, code)`.
    fn handed_out(&self) -> (Vec<Handed>, Vec<Handed>);
}
