//! Games, states and agents behind object-safe traits, so that one Python class serves every
//! game. Each is implemented once, generically, over meeple's `Game`/`State`; the Python layer
//! only sees these traits.

use meeple_arena::{MatchConfig, Merged, PlayedGame, merge_games, play_games, total_games, validate};
use meeple_game::{
    Action, Budget, Error, Game, GameRecord, Player, State, Turn, limits, replay, rng_from_seed, sample_chance,
};
use meeple_learn::{agent_infos, extension, make_agent};
use std::any::Any;
use std::sync::Arc;

use meeple_learn::vecenv::{DynVecEnv, VecEnvConfig, VecEnvImpl};

/// A game of any type.
pub trait DynGame: Send + Sync {
    fn spec(&self) -> String;
    fn name(&self) -> &'static str;
    fn num_players(&self) -> usize;
    fn num_actions(&self) -> usize;
    fn max_chance_outcomes(&self) -> usize;
    fn observation_shape(&self) -> Vec<usize>;
    fn initial_state(&self) -> Box<dyn DynState>;
    /// Names of every agent that can play this game (search, the game's own, learned).
    fn agent_names(&self) -> Vec<&'static str>;
    fn agent(&self, spec: &str, seed: u64) -> Result<Box<dyn DynAgent>, Error>;
    /// Plays a match and returns its summary as JSON (what `meeple arena --json` writes).
    /// A match's summary as JSON; with `records`, its games written there (`resume`: the file's
    /// finished games kept, checked and replayed, and only the missing ones played).
    fn arena(&self, config: &MatchConfig, records: Option<&std::path::Path>, resume: bool) -> Result<String, Error>;
    /// The games of a match (every seed in every seating, or a round robin's pairings).
    fn arena_total(&self, config: &MatchConfig) -> Result<usize, Error>;
    /// Plays exactly these games of a match; their records file lines, in the order asked.
    fn arena_games(&self, config: &MatchConfig, indices: &[usize]) -> Result<Vec<String>, Error>;
    /// Merges record lines of a match played in pieces: the summary as JSON once every game it
    /// needs is in, else the games still missing.
    fn arena_merge(&self, config: &MatchConfig, lines: &[String]) -> Result<Result<String, Vec<usize>>, Error>;
    /// Replays a record, checking every move; every state from the first to the last.
    fn replay(&self, record: &GameRecord) -> Result<Vec<Box<dyn DynState>>, Error>;
    /// One external player's batch of self-play games for a training run (`train::play_external`):
    /// games and positions played, and the seconds it took.
    fn play_external(
        &self,
        run: &std::path::Path,
        games: usize,
        seed: u64,
        threads: usize,
        out: &std::path::Path,
    ) -> Result<(u64, u64, f64), String>;
    /// A training batch from self-play shards, as `train az` draws one.
    fn shard_batch(
        &self,
        shards: &[std::path::PathBuf],
        net: &meeple_nn::NetConfig,
        target: meeple_learn::az::train::ValueTarget,
        size: usize,
        seed: u64,
    ) -> Result<meeple_nn::Batch, String>;
    fn vec_env(&self, config: VecEnvConfig) -> Result<Box<dyn DynVecEnv>, Error>;
    /// Runs a trainer by name through the one run loop (`meeple_learn::trainers::train`).
    fn train(
        &self,
        kind: &str,
        settings: &serde_json::Value,
        options: &meeple_learn::run::RunOptions,
        hooks: &mut dyn meeple_learn::run::Hooks,
    ) -> Result<meeple_learn::run::Progress, meeple_learn::LearnError>;
}

/// A position of any game.
pub trait DynState: Send + Sync {
    fn clone_box(&self) -> Box<dyn DynState>;
    fn as_any(&self) -> &dyn Any;
    fn turn(&self) -> Turn;
    fn legal_actions(&self, out: &mut Vec<Action>);
    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>);
    /// Applies a legal action or a possible chance outcome; otherwise an error saying why.
    fn apply(&mut self, action: Action) -> Result<(), Error>;
    fn parse_action(&self, text: &str) -> Result<Action, Error>;
    fn action_to_string(&self, action: Action) -> String;
    fn observation(&self, player: Player, out: &mut Vec<f32>);
    fn observation_string(&self, player: Player) -> String;
    fn returns(&self) -> Option<Vec<f64>>;
    fn scores(&self) -> Vec<f64>;
    fn determinize(&self, player: Player, seed: u64) -> Box<dyn DynState>;
    fn text(&self) -> String;
    fn debug(&self) -> String;
    fn same(&self, other: &dyn DynState) -> bool;
    fn zobrist(&self) -> u64;
    /// Resolves chance nodes with `rng` until a player is to move or the game is over.
    fn resolve_chance(&mut self, rng: &mut meeple_game::Rng, buf: &mut Vec<(Action, f64)>);
}

/// An agent of any game; it plays the states of the game it was built for.
pub trait DynAgent: Send {
    fn spec(&self) -> String;
    fn act(&mut self, state: &dyn DynState, budget: &Budget) -> Result<Action, Error>;
}

pub struct GameBox<G: Game>(pub G);

/// Builds the game named by a spec string.
pub fn make_game(spec: &str) -> Result<Arc<dyn DynGame>, Error> {
    meeple_games::with_game!(spec, |g| Arc::new(GameBox(g)) as Arc<dyn DynGame>)
}

impl<G: Game> DynGame for GameBox<G> {
    fn spec(&self) -> String {
        self.0.spec().to_string()
    }
    fn name(&self) -> &'static str {
        G::INFO.name
    }
    fn num_players(&self) -> usize {
        self.0.num_players()
    }
    fn num_actions(&self) -> usize {
        self.0.num_actions()
    }
    fn max_chance_outcomes(&self) -> usize {
        self.0.max_chance_outcomes()
    }
    fn observation_shape(&self) -> Vec<usize> {
        self.0.observation_shape()
    }
    fn initial_state(&self) -> Box<dyn DynState> {
        Box::new(self.0.initial_state())
    }
    fn agent_names(&self) -> Vec<&'static str> {
        agent_infos(&self.0).iter().map(|a| a.name).collect()
    }
    fn agent(&self, spec: &str, seed: u64) -> Result<Box<dyn DynAgent>, Error> {
        let agent = make_agent(&self.0, spec, seed)?;
        Ok(Box::new(AgentBox::<G::State> { agent, game: G::INFO.name }))
    }
    fn arena(&self, config: &MatchConfig, records: Option<&std::path::Path>, resume: bool) -> Result<String, Error> {
        let agents = extension();
        let (summary, _) =
            meeple_arena::RecordedMatch::open(&self.0, &agents, config, records, resume)?.play(|_| {})?;
        Ok(serde_json::to_string(&summary).expect("summaries serialise"))
    }
    fn arena_total(&self, config: &MatchConfig) -> Result<usize, Error> {
        validate(&self.0, &extension(), config)?;
        Ok(total_games(self.0.num_players(), config))
    }
    fn arena_games(&self, config: &MatchConfig, indices: &[usize]) -> Result<Vec<String>, Error> {
        let mut games = play_games(&self.0, &extension(), config, indices, |_| {})?;
        let order: std::collections::HashMap<usize, usize> = indices.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        games.sort_by_key(|g| order[&g.index]);
        Ok(games.iter().map(PlayedGame::to_line).collect())
    }
    fn arena_merge(&self, config: &MatchConfig, lines: &[String]) -> Result<Result<String, Vec<usize>>, Error> {
        let played = lines.iter().map(|l| PlayedGame::from_line(l)).collect::<Result<Vec<_>, _>>()?;
        Ok(match merge_games(&self.0, &extension(), config, played)? {
            Merged::Done(summary) => Ok(serde_json::to_string(&summary).expect("summaries serialise")),
            Merged::Missing(m) => Err(m),
        })
    }
    fn play_external(
        &self,
        run: &std::path::Path,
        games: usize,
        seed: u64,
        threads: usize,
        out: &std::path::Path,
    ) -> Result<(u64, u64, f64), String> {
        let s = meeple_learn::az::train::play_external(&self.0, run, games, seed, threads, out)
            .map_err(|e| e.to_string())?;
        Ok((s.games, s.positions, s.seconds))
    }
    fn shard_batch(
        &self,
        shards: &[std::path::PathBuf],
        net: &meeple_nn::NetConfig,
        target: meeple_learn::az::train::ValueTarget,
        size: usize,
        seed: u64,
    ) -> Result<meeple_nn::Batch, String> {
        meeple_learn::az::train::batch_from_shards(&self.0, shards, net, target, size, seed).map_err(|e| e.to_string())
    }
    fn replay(&self, record: &GameRecord) -> Result<Vec<Box<dyn DynState>>, Error> {
        Ok(replay(&self.0, record)?.into_iter().map(|s| Box::new(s) as Box<dyn DynState>).collect())
    }
    fn train(
        &self,
        kind: &str,
        settings: &serde_json::Value,
        options: &meeple_learn::run::RunOptions,
        hooks: &mut dyn meeple_learn::run::Hooks,
    ) -> Result<meeple_learn::run::Progress, meeple_learn::LearnError> {
        meeple_learn::trainers::train(&self.0, kind, settings, options, hooks)
    }
    fn vec_env(&self, config: VecEnvConfig) -> Result<Box<dyn DynVecEnv>, Error> {
        Ok(Box::new(VecEnvImpl::new(self.0.clone(), config)?))
    }
}

impl<S: State> DynState for S {
    fn clone_box(&self) -> Box<dyn DynState> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn turn(&self) -> Turn {
        State::turn(self)
    }
    fn legal_actions(&self, out: &mut Vec<Action>) {
        State::legal_actions(self, out)
    }
    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        State::chance_outcomes(self, out)
    }
    fn apply(&mut self, action: Action) -> Result<(), Error> {
        State::apply(self, action)
    }
    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        State::parse_action(self, text)
    }
    fn action_to_string(&self, action: Action) -> String {
        State::action_to_string(self, action)
    }
    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        State::observation(self, player, out)
    }
    fn observation_string(&self, player: Player) -> String {
        State::observation_string(self, player)
    }
    fn returns(&self) -> Option<Vec<f64>> {
        State::returns(self).map(|r| r.as_slice().to_vec())
    }
    fn scores(&self) -> Vec<f64> {
        State::scores(self).as_slice().to_vec()
    }
    fn determinize(&self, player: Player, seed: u64) -> Box<dyn DynState> {
        Box::new(State::determinize(self, player, &mut rng_from_seed(seed)))
    }
    fn text(&self) -> String {
        self.to_string()
    }
    fn debug(&self) -> String {
        format!("{self:?}")
    }
    fn same(&self, other: &dyn DynState) -> bool {
        other.as_any().downcast_ref::<S>().is_some_and(|o| o == self)
    }
    fn zobrist(&self) -> u64 {
        State::zobrist(self)
    }
    fn resolve_chance(&mut self, rng: &mut meeple_game::Rng, buf: &mut Vec<(Action, f64)>) {
        while State::turn(self) == Turn::Chance {
            State::chance_outcomes(self, buf);
            let a = sample_chance(buf, rng);
            self.apply_unchecked(a);
        }
    }
}

struct AgentBox<S: State> {
    agent: meeple_game::BoxedAgent<S>,
    game: &'static str,
}

impl<S: State> DynAgent for AgentBox<S> {
    fn spec(&self) -> String {
        self.agent.spec()
    }
    fn act(&mut self, state: &dyn DynState, budget: &Budget) -> Result<Action, Error> {
        let Some(s) = state.as_any().downcast_ref::<S>() else {
            return Err(Error::Invalid(format!("this agent plays {}; the state is of another game", self.game)));
        };
        match s.turn() {
            Turn::Player(_) => self.agent.act(s, budget),
            Turn::Chance => Err(Error::Invalid("the state is a chance node: no player is to move".into())),
            Turn::Terminal => Err(Error::GameOver),
        }
    }
}

/// Checks a thread count the way the command line does.
pub fn check_threads(threads: Option<usize>) -> Result<Option<usize>, Error> {
    threads.map(|t| limits::check_threads("threads", t)).transpose()
}
