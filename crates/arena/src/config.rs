//! What a match plays: its agents, games, seeds and limits (checked before a game starts by `validate.rs`).

use crate::models::{ModelFile, model_files};
use crate::ratings;
use meeple_game::Budget;
use serde::{Deserialize, Serialize};

/// What to play.
#[derive(Clone, Debug)]
pub struct MatchConfig {
    /// Agent specs; as many as the game has seats.
    pub agents: Vec<String>,
    /// Total games; a multiple of the number of seatings (2 for two-player games).
    pub games: usize,
    /// Base seed of the whole match.
    pub seed: u64,
    /// Worker threads; `None` uses every core.
    pub threads: Option<usize>,
    /// Outside limit for every move (`--move-time`).
    pub budget: Budget,
    /// Uniformly random plies played before the agents take over, the same for every seating
    /// of a seed (so deterministic agents still meet varied positions).
    pub opening_plies: usize,
    /// With more agents than seats (two-player games): the first agent against each other one,
    /// instead of every pair.
    pub gauntlet: bool,
    /// Confidence of the score and Elo intervals (0.95 by default).
    pub confidence: f64,
    /// The agent rated 0 Elo: a spec among the agents (or its label, `random#2`, when a spec
    /// appears twice); default `random` if present, else the first agent.
    pub anchor: Option<String>,
    /// Stop as soon as this test decides (two agents); `games` is then the most played.
    pub sprt: Option<ratings::Sprt>,
}

/// The settings that decide a match's games, stored with every record so that a resumed run
/// can check that it continues the same match (threads and confidence change no game).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSettings {
    pub agents: Vec<String>,
    pub games: usize,
    pub gauntlet: bool,
    pub seed: u64,
    pub opening_plies: usize,
    pub move_time_ms: Option<f64>,
    pub move_overhead_ms: Option<f64>,
    pub sprt: Option<ratings::Sprt>,
    /// The files the agents name, by sha256: a resumed run must play the same networks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ModelFile>,
}

impl MatchSettings {
    /// The first setting in which `self` (from the records) differs from `now`, as a message.
    /// With a single pairing, games keep their seeds and seats whatever the number of games,
    /// so a run may be extended (or its SPRT given more room) with a larger `--games`.
    pub(crate) fn difference(&self, now: &MatchSettings, single_pairing: bool) -> Option<String> {
        let show = |x: &dyn std::fmt::Debug| format!("{x:?}");
        let fields: [(&str, String, String); 8] = [
            ("agents", self.agents.join(" "), now.agents.join(" ")),
            ("--games", self.games.to_string(), now.games.to_string()),
            ("--gauntlet", self.gauntlet.to_string(), now.gauntlet.to_string()),
            ("--seed", self.seed.to_string(), now.seed.to_string()),
            ("--opening-plies", self.opening_plies.to_string(), now.opening_plies.to_string()),
            ("--move-time (ms)", show(&self.move_time_ms), show(&now.move_time_ms)),
            ("--move-overhead (ms)", show(&self.move_overhead_ms), show(&now.move_overhead_ms)),
            ("--sprt", show(&self.sprt), show(&now.sprt)),
        ];
        fields
            .into_iter()
            .filter(|(what, _, _)| !(single_pairing && *what == "--games"))
            .find(|(_, a, b)| a != b)
            .map(|(what, a, b)| format!("the records were made with {what} {a}, this run has {b}"))
            .or_else(|| self.changed_file(now))
    }

    /// A file both runs name whose contents differ (records from before files were named by
    /// their sha256 carry none, and are not checked).
    fn changed_file(&self, now: &MatchSettings) -> Option<String> {
        self.files.iter().find_map(|old| {
            let new = now.files.iter().find(|f| f.path == old.path)?;
            (new.sha256 != old.sha256).then(|| {
                format!(
                    "the records were made with {} of sha256 {}, and the file now has {}: another network \
                     under the same name",
                    old.path, old.sha256, new.sha256
                )
            })
        })
    }
}

impl MatchConfig {
    /// A plain match of `agents` (one per seat, or a round robin), other options at defaults.
    pub fn new(agents: Vec<String>, games: usize, seed: u64) -> Self {
        MatchConfig {
            agents,
            games,
            seed,
            threads: None,
            budget: Budget::UNLIMITED,
            opening_plies: 0,
            gauntlet: false,
            confidence: 0.95,
            anchor: None,
            sprt: None,
        }
    }

    /// The settings that decide the games.
    pub fn settings(&self) -> MatchSettings {
        let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        MatchSettings {
            agents: self.agents.clone(),
            games: self.games,
            gauntlet: self.gauntlet,
            seed: self.seed,
            opening_plies: self.opening_plies,
            move_time_ms: ms(self.budget.time),
            move_overhead_ms: ms(self.budget.overhead),
            sprt: self.sprt,
            files: self.agents.iter().flat_map(|a| model_files(a)).fold(Vec::new(), |mut all, f| {
                if !all.contains(&f) {
                    all.push(f);
                }
                all
            }),
        }
    }

    /// A name for each agent: its spec, with `#k` added where the same spec plays more than
    /// once (`random#1`, `random#2`), so tables, ratings and plots tell them apart.
    pub fn labels(&self) -> Vec<String> {
        agent_labels(&self.agents)
    }
}

/// Names for agents given by spec: the spec, with `#k` (k from 1) added where it repeats.
pub fn agent_labels(agents: &[String]) -> Vec<String> {
    agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if agents.iter().filter(|b| *b == a).count() == 1 {
                a.clone()
            } else {
                format!("{a}#{}", agents[..=i].iter().filter(|b| *b == a).count())
            }
        })
        .collect()
}
/// The agent `anchor` names: a label (`random#2`) or a spec (its first occurrence).
pub(crate) fn anchor_index(config: &MatchConfig, anchor: &str) -> Option<usize> {
    let labels = config.labels();
    labels.iter().position(|l| l == anchor).or_else(|| config.agents.iter().position(|a| a == anchor))
}
