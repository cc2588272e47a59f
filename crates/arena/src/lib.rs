//! Matches between agents: paired seats, parallel games, deterministic results, Wilson intervals.
//!
//! A match is a list of seeds; each seed is played once per seating (every permutation of the
//! agents over the seats), and a seed gives the same chance events in every seating, so luck
//! cancels between paired games. Game `i` depends only on the base seed and `i`, and results are
//! gathered in game order, so the outcome is identical whatever the thread count.

mod config;
pub mod files;
mod models;
mod play;
pub mod ratings;
pub mod records;
mod schedule;
mod stats;
mod summary;
mod table;
pub mod tune;

mod validate;

#[cfg(test)]
mod tests;

pub use config::{MatchConfig, MatchSettings, agent_labels};
pub use models::{ModelFile, model_files, sha256_file};
pub use play::{Merged, SPRT_BATCH, merge_games, play_game, play_games, run_match, run_match_from, run_sprt};
pub use records::{PlayedGame, RecordedMatch};
pub use schedule::{pairings, seatings, total_games};
pub use stats::{Z95, wilson};
pub use summary::{AgentSummary, MatchSummary, PairwiseSummary, SeatResult, SprtReport, outcome, summarize};
pub use table::{CHECKPOINT_EVERY, Played, SPECTATOR, Table};
pub use validate::validate;
