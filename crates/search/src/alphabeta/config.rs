//! An alpha-beta agent's limits and switches, read from its spec.

use super::*;

/// Limits and switches of one alpha-beta agent.
#[derive(Clone, Debug)]
pub struct AlphaBetaConfig {
    pub depth: Option<u32>,
    pub time: Option<Duration>,
    pub nodes: Option<u64>,
    pub tt_bytes: u64,
    pub eval: String,
    pub order: bool,
    pub filter: bool,
    pub worlds: u32,
    pub lmr: bool,
    /// Late move pruning near the horizon.
    pub lmp: bool,
    pub plain: bool,
    /// No pruning at all (implies `plain`).
    pub minimax: bool,
    pub verbose: bool,
}

impl AlphaBetaConfig {
    pub fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("agent alphabeta", INFO.params)?;
        let nodes: Option<u64> = o.get_opt("nodes")?;
        if nodes == Some(0) {
            return Err(o.bad_value("nodes", "0"));
        }
        let depth = if o.given("depth") { Some(o.get_in("depth", 1..=MAX_DEPTH)?) } else { None };
        Ok(AlphaBetaConfig {
            depth,
            time: o.get_duration("time")?,
            nodes,
            tt_bytes: table_bytes(&o)?,
            eval: o.get("eval")?,
            order: o.get_bool("order")?,
            filter: o.get_bool("filter")?,
            worlds: o.get_in("worlds", 0..=meeple_game::limits::MAX_WORLDS)?,
            lmr: o.get_bool("lmr")?,
            lmp: o.get_bool("lmp")?,
            plain: o.get_bool("plain")? || o.get_bool("minimax")?,
            minimax: o.get_bool("minimax")?,
            verbose: o.get_bool("verbose")?,
        })
    }

    /// Memory the agent holds for its transposition table.
    pub fn table_bytes(&self) -> u64 {
        self.tt_bytes
    }

    pub(super) fn spec(&self) -> String {
        let mut s = Spec::new("alphabeta");
        if let Some(d) = self.depth {
            s = s.with("depth", d);
        }
        if let Some(t) = self.time {
            s = s.with("time", format!("{}ms", t.as_millis()));
        }
        if let Some(n) = self.nodes {
            s = s.with("nodes", n);
        }
        s = s.with("tt", format!("{}kb", self.tt_bytes / 1024)).with("eval", &self.eval);
        if self.worlds != 1 {
            s = s.with("worlds", self.worlds);
        }
        if self.minimax {
            s = s.with("minimax", true);
        } else if self.plain {
            s = s.with("plain", true);
        } else if self.lmr {
            s = s.with("lmr", true);
        }
        if self.lmp && !self.plain {
            s = s.with("lmp", true);
        }
        s.to_string()
    }
}

/// Reads `tt`: a size of at most half of the machine's memory ([`meeple_game::limits`]).
pub(super) fn table_bytes(o: &meeple_game::Options<'_>) -> Result<u64, Error> {
    let bytes = o.get_size("tt")?;
    let max = meeple_game::limits::max_table_bytes();
    if bytes > max {
        return Err(Error::Invalid(format!(
            "agent alphabeta: tt of {} is more than half of this machine's memory ({}); give at most tt={}mb",
            meeple_game::limits::format_bytes(bytes),
            meeple_game::limits::format_bytes(meeple_game::limits::memory()),
            max >> 20
        )));
    }
    Ok(bytes)
}
