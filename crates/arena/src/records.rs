//! Game records: one checksummed JSON line per game, written in game order and read back by
//! every reader (`meeple arena --resume`, `meeple replay`, `meeple plot`, the web page's replays,
//! Python's `read_records`) by the same rules.

use crate::config::{MatchConfig, MatchSettings};
use crate::schedule::{game_slot, pairings};
use meeple_game::{Error, Game, GameRecord, State, Turn};
use serde::{Deserialize, Serialize};

/// One finished game.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlayedGame {
    /// Index in the match, `0..games`.
    pub index: usize,
    /// `seating[seat]` is the index of the agent in that seat.
    pub seating: Vec<usize>,
    /// The replayable record (agents in seat order).
    #[serde(flatten)]
    pub record: GameRecord,
    /// Milliseconds each player action took, in order (chance outcomes excluded).
    pub move_ms: Vec<f64>,
    /// Seat of each player action, parallel to `move_ms`.
    pub move_seats: Vec<usize>,
    /// The settings of the match it belongs to (checked when a run resumes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<MatchSettings>,
    /// A checksum of the line it was written as ([`PlayedGame::to_line`]): a record corrupted
    /// or edited after it was written is refused when a run resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

impl PlayedGame {
    /// The game as one line of a records file (JSON, without a newline), with its checksum.
    pub fn to_line(&self) -> String {
        let mut g = self.clone();
        g.check = None;
        g.check = Some(checksum(&serde_json::to_string(&g).expect("records serialise")));
        serde_json::to_string(&g).expect("records serialise")
    }

    /// Reads one line of a records file, refusing one whose checksum does not match (or that has
    /// none: written before records had one, or not by meeple).
    pub fn from_line(line: &str) -> Result<Self, Error> {
        let value = serde_json::from_str(line).map_err(|e| Error::Record(format!("not a game record: {e}")))?;
        Self::from_value(value)
    }

    /// [`PlayedGame::from_line`] on a line already parsed as JSON.
    pub fn from_value(value: serde_json::Value) -> Result<Self, Error> {
        let mut g: PlayedGame =
            serde_json::from_value(value).map_err(|e| Error::Record(format!("not a game record: {e}")))?;
        let Some(check) = g.check.take() else {
            return Err(Error::Record(format!(
                "game {} has no checksum: not a record this meeple wrote; start again with --force",
                g.index
            )));
        };
        if checksum(&serde_json::to_string(&g).expect("records serialise")) != check {
            return Err(Error::Record(format!(
                "game {} does not match its checksum: the line was changed after it was written",
                g.index
            )));
        }
        g.check = Some(check);
        Ok(g)
    }
}

/// FNV-1a over the bytes, as 16 hex digits: stable across machines and versions.
fn checksum(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Checks a game read back from a records file before a resumed run counts it: its settings,
/// slot (seed, seating, agents), and a replay through the rules to the returns it claims.
pub(crate) fn check_resumed<G: Game>(
    game: &G,
    config: &MatchConfig,
    settings: &MatchSettings,
    g: &PlayedGame,
    total: usize,
) -> Result<(), Error> {
    let i = g.index;
    let mismatch = |what: &str| {
        Error::Record(format!("game {i} in the records has another {what}: the records were made with other arguments"))
    };
    if i >= total {
        return Err(Error::Record(format!("game {i} is beyond this match's {total} games")));
    }
    match &g.settings {
        None => {
            return Err(Error::Record(format!(
                "game {i} in the records carries no match settings (written by an older meeple), so it cannot be \
                 checked; start again with --force"
            )));
        }
        Some(s) => {
            let single = pairings(game.num_players(), config).len() == 1;
            if let Some(diff) = s.difference(settings, single) {
                return Err(Error::Record(format!("game {i}: {diff}")));
            }
        }
    }
    if g.record.game != game.spec().to_string() {
        return Err(mismatch("game"));
    }
    let (seating, seed) = game_slot(game.num_players(), config, i);
    if g.seating != seating || g.record.agents != seating.iter().map(|&a| config.agents[a].clone()).collect::<Vec<_>>()
    {
        return Err(mismatch("seating or agents"));
    }
    if g.record.seed != seed {
        return Err(mismatch("seed"));
    }
    if g.record.returns.is_none() {
        return Err(Error::Record(format!("game {i} in the records did not finish")));
    }
    if g.record.scores.is_empty() {
        return Err(Error::Record(format!("game {i} in the records has no scores: not a record meeple wrote")));
    }
    let states = meeple_game::replay(game, &g.record).map_err(|e| {
        let why = match e {
            Error::Record(why) => why,
            other => other.to_string(),
        };
        Error::Record(format!("game {i} in the records does not replay: {why}"))
    })?;
    let agent_moves = states.iter().filter(|s| matches!(s.turn(), Turn::Player(_))).count();
    let timed = g.move_ms.len();
    if timed != g.move_seats.len()
        || timed + config.opening_plies != agent_moves
        || g.move_seats.iter().any(|&s| s >= game.num_players())
        || g.move_ms.iter().any(|&ms| !(ms.is_finite() && ms >= 0.0))
    {
        return Err(Error::Record(format!(
            "game {i} in the records has move times that do not fit its {agent_moves} moves"
        )));
    }
    Ok(())
}

/// One line of a records file: a game from `meeple arena --records` (checksummed, with its
/// match's settings and move times), or a plain game record (`{"game", "seed", "agents",
/// "actions", ...}`) where the reader accepts those.
#[derive(Clone, Debug)]
pub enum Entry {
    Played(Box<PlayedGame>),
    Plain(GameRecord),
}

impl Entry {
    /// The replayable record.
    pub fn into_record(self) -> GameRecord {
        match self {
            Entry::Played(g) => g.record,
            Entry::Plain(r) => r,
        }
    }
}

/// What a reader accepts.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// Plain game records beside arena lines (`meeple replay`, the web page); otherwise every
    /// line must be an arena record with its checksum.
    pub plain: bool,
    /// Most games: a file with more is refused (a match's size, a page's replay limit).
    pub max_games: usize,
    /// A last line without its newline that does not parse (cut off when a run was killed) is
    /// left out instead of refused: resuming allows it, since the game is played again.
    pub allow_cut_last_line: bool,
}

impl ReadOptions {
    /// Arena records only, at most `max_games`, a cut last line refused.
    pub fn arena(max_games: usize) -> Self {
        ReadOptions { plain: false, max_games, allow_cut_last_line: false }
    }
}

/// What a records file held.
#[derive(Clone, Debug, Default)]
pub struct Records {
    pub entries: Vec<Entry>,
    /// Games read (the entries, or those handed to [`visit`]'s callback).
    pub games: usize,
    /// Bytes of the file up to the end of its last whole line.
    pub whole_bytes: u64,
    /// The number of a cut last line that was left out ([`ReadOptions::allow_cut_last_line`]).
    pub cut_line: Option<usize>,
}

impl Records {
    /// The arena games (plain records left out).
    pub fn played(self) -> Vec<PlayedGame> {
        self.entries
            .into_iter()
            .filter_map(|e| match e {
                Entry::Played(g) => Some(*g),
                Entry::Plain(_) => None,
            })
            .collect()
    }
}

/// Reads one line: an arena record (checksum checked) or, where `plain` allows, a plain record.
/// A line is an arena record when it carries a checksum (`"check"`) or a game index.
pub fn parse_line(text: &str, plain: bool) -> Result<Entry, Error> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::Record(format!("not a game record (not JSON: {e})")))?;
    let arena = value.get("check").is_some() || value.get("index").is_some();
    if arena || !plain {
        return PlayedGame::from_value(value).map(|g| Entry::Played(Box::new(g)));
    }
    serde_json::from_value(value).map(Entry::Plain).map_err(|e| Error::Record(format!("not a game record: {e}")))
}

/// Reads a records file by `options`; every error names the file and the line.
pub fn read(path: &std::path::Path, options: ReadOptions) -> Result<Records, Error> {
    let mut entries = Vec::new();
    let mut records = visit(path, options, &mut |e| entries.push(e))?;
    records.entries = entries;
    Ok(records)
}

/// [`read`] handing each entry to `each` as it is read instead of keeping them (memory stays
/// that of one line); the returned [`Records`] has no entries.
pub fn visit(path: &std::path::Path, options: ReadOptions, each: &mut dyn FnMut(Entry)) -> Result<Records, Error> {
    let name = format!("records file '{}'", path.display());
    let mut reader = Reader { name: &name, options, records: Records::default(), games: 0, each };
    meeple_game::limits::read_lines(path, meeple_game::limits::MAX_RECORD_LINE, "records file", |line| {
        reader.line(line.number, line.text, line.bytes, line.ended)
    })?;
    Ok(reader.records)
}

/// [`read`] on text in memory (an upload); `name` says what it is in errors.
pub fn parse(text: &str, name: &str, options: ReadOptions) -> Result<Records, Error> {
    let mut entries = Vec::new();
    let mut reader = Reader { name, options, records: Records::default(), games: 0, each: &mut |e| entries.push(e) };
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let ended = line.ends_with('\n');
        reader.line(i + 1, line.trim_end_matches(['\n', '\r']), line.len() as u64, ended)?;
    }
    let mut records = reader.records;
    records.entries = entries;
    Ok(records)
}

struct Reader<'a, 'f> {
    name: &'a str,
    options: ReadOptions,
    records: Records,
    games: usize,
    each: &'f mut dyn FnMut(Entry),
}

impl Reader<'_, '_> {
    fn line(&mut self, number: usize, text: &str, bytes: u64, ended: bool) -> Result<(), Error> {
        if self.records.cut_line.is_some() {
            return Err(Error::Record(format!("{} line {number}: a line after the cut one", self.name)));
        }
        if text.trim().is_empty() {
            self.records.whole_bytes += bytes;
            return Ok(());
        }
        match parse_line(text, self.options.plain) {
            Ok(entry) => {
                if self.games == self.options.max_games {
                    return Err(Error::Record(format!(
                        "{} holds more than {} games (line {number})",
                        self.name, self.options.max_games
                    )));
                }
                self.games += 1;
                self.records.games = self.games;
                (self.each)(entry);
                self.records.whole_bytes += bytes;
                Ok(())
            }
            Err(_) if !ended && self.options.allow_cut_last_line => {
                self.records.cut_line = Some(number);
                Ok(())
            }
            Err(Error::Record(e)) => Err(Error::Record(format!(
                "{} line {number}: {e}{}",
                self.name,
                if ended { "" } else { " (the last line, cut off: an interrupted run?)" }
            ))),
            Err(e) => Err(Error::Record(format!("{} line {number}: {e}", self.name))),
        }
    }
}

/// The games of an interrupted match, to go on with ([`crate::run_match_from`] checks each
/// against the match and replays it): a last line cut off mid-write is left out and cut from the
/// file, so the run appends after the last whole game. At most `max_games` (the match's size).
/// Returns the games and the number of a line that was cut, if any.
pub fn resume(path: &std::path::Path, max_games: usize) -> Result<(Vec<PlayedGame>, Option<usize>), Error> {
    if !path.exists() {
        return Ok((Vec::new(), None));
    }
    if meeple_game::limits::is_gzip(path) {
        return Err(Error::Invalid(format!(
            "records file '{}' is gzip-compressed: a match goes on by appending plain lines; decompress it (gunzip) to resume",
            path.display()
        )));
    }
    let records = read(path, ReadOptions { plain: false, max_games, allow_cut_last_line: true })?;
    let cut = records.cut_line;
    if cut.is_some() {
        let file =
            std::fs::OpenOptions::new().write(true).open(path).and_then(|f| f.set_len(records.whole_bytes)).map_err(
                |e| Error::Invalid(format!("cannot cut the unfinished last line of '{}': {e}", path.display())),
            );
        file?;
    }
    Ok((records.played(), cut))
}

/// Writes a match's records as games finish, in game order whatever order they finish in, one
/// flushed line each, so an interrupted run keeps every finished game and the file is the same
/// for any thread count (move times aside). Shared by the match's worker threads: the first
/// write error is kept and reported by [`Writer::finish`].
pub struct Writer {
    path: std::path::PathBuf,
    state: std::sync::Mutex<WriterState>,
}

struct WriterState {
    file: std::io::BufWriter<std::fs::File>,
    pending: std::collections::BTreeMap<usize, String>,
    next: usize,
    /// Games already in the file (when resuming).
    written: std::collections::BTreeSet<usize>,
    error: Option<std::io::Error>,
}

impl Writer {
    /// A new file at `path` (replacing one), or with `resume` the end of an existing one whose
    /// games `kept` are already in it.
    pub fn open(path: &std::path::Path, resume: bool, kept: &[PlayedGame]) -> Result<Self, Error> {
        let file = if resume {
            std::fs::OpenOptions::new().create(true).append(true).open(path)
        } else {
            std::fs::File::create(path)
        }
        .map_err(|e| Error::Invalid(format!("cannot write records file '{}': {e}", path.display())))?;
        Ok(Writer {
            path: path.to_path_buf(),
            state: std::sync::Mutex::new(WriterState {
                file: std::io::BufWriter::new(file),
                pending: Default::default(),
                next: 0,
                written: kept.iter().map(|g| g.index).collect(),
                error: None,
            }),
        })
    }

    /// Adds a finished game; writes every game that is next in order. After a write error it
    /// writes nothing more.
    pub fn push(&self, game: &PlayedGame) {
        use std::io::Write;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.error.is_some() {
            return;
        }
        s.pending.insert(game.index, game.to_line());
        let result = (|| {
            loop {
                while s.written.contains(&s.next) {
                    s.next += 1;
                }
                let next = s.next;
                let Some(line) = s.pending.remove(&next) else { break };
                writeln!(s.file, "{line}")?;
                s.next += 1;
            }
            s.file.flush()
        })();
        if let Err(e) = result {
            s.error = Some(e);
        }
    }

    /// The first write error, if any.
    pub fn finish(self) -> Result<(), Error> {
        match self.state.into_inner().unwrap_or_else(|e| e.into_inner()).error {
            Some(e) => Err(Error::Invalid(format!("writing records file '{}' failed: {e}", self.path.display()))),
            None => Ok(()),
        }
    }
}

/// A resumable match whose games go to a records file as each finishes: the one way the CLI and
/// Python run a recorded match. [`RecordedMatch::open`] checks the match, keeps the finished games
/// of an interrupted file (with `resume`; an unfinished last line is cut) and opens the file
/// before anything is played, so a front end can report what was kept and a bad path fails at
/// once; [`RecordedMatch::play`] plays the rest.
pub struct RecordedMatch<'a, G: Game> {
    game: &'a G,
    agents: &'a meeple_search::Ext<G>,
    config: &'a MatchConfig,
    done: Vec<PlayedGame>,
    writer: Option<Writer>,
    /// The line of an unfinished last game cut from the file, if any.
    pub cut_line: Option<usize>,
}

impl<'a, G: Game> RecordedMatch<'a, G> {
    pub fn open(
        game: &'a G,
        agents: &'a meeple_search::Ext<G>,
        config: &'a MatchConfig,
        records: Option<&std::path::Path>,
        resume: bool,
    ) -> Result<Self, Error> {
        crate::validate(game, agents, config)?;
        let total = crate::total_games(game.num_players(), config);
        let (done, cut_line) = match records {
            Some(path) if resume => self::resume(path, total)?,
            _ => (Vec::new(), None),
        };
        let writer = records.map(|path| Writer::open(path, resume, &done)).transpose()?;
        Ok(RecordedMatch { game, agents, config, done, writer, cut_line })
    }

    /// Finished games kept from the records file.
    pub fn kept(&self) -> usize {
        self.done.len()
    }

    /// Plays the games not kept (each kept one is checked against the match and replayed
    /// first), writing each as it finishes and calling `on_game` for it; the summary covers
    /// every game, kept or played now.
    pub fn play(self, on_game: impl Fn(&PlayedGame) + Sync) -> Result<(crate::MatchSummary, Vec<PlayedGame>), Error> {
        let writer = self.writer;
        let result = crate::run_match_from(self.game, self.agents, self.config, self.done, |g| {
            if let Some(w) = &writer {
                w.push(g);
            }
            on_game(g);
        });
        // A write error is reported even when the match itself failed later.
        let written = writer.map(Writer::finish).transpose();
        let out = result?;
        written?;
        Ok(out)
    }
}
