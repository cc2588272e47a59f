use anyhow::{Result, anyhow};
use clap::Args;
use meeple_game::{Budget, Game, State, Turn, derive_seed, rng_from_seed};
use meeple_games::with_game;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Game spec, e.g. `santorini`.
    game: String,
    /// The agent to ask; add `verbose=true` to its spec for search statistics.
    agent: String,
    /// Moves from the start, in the game's notation, separated by spaces (chance outcomes
    /// too; chance events after the last move are drawn from the seed).
    #[arg(long, default_value = "")]
    moves: String,
    /// Seed for the agent's random choices and the chance events drawn after --moves.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    with_game!(args.game.as_str(), |game| analyze(&game, args))?
}

fn analyze<G: Game>(game: &G, args: &AnalyzeArgs) -> Result<()> {
    let mut agent = meeple_learn::make_agent(game, &args.agent, args.seed)?;
    let mut state = game.initial_state();
    for (i, text) in args.moves.split_whitespace().enumerate() {
        let a = state.parse_action(text).map_err(|e| anyhow!("move {} ('{text}'): {e}", i + 1))?;
        state.apply(a).map_err(|e| anyhow!("move {} ('{text}'): {e}", i + 1))?;
    }
    // Chance events after the given moves (dice, the deal) are drawn from the seed, as `play`
    // would; give them in --moves to choose them.
    let mut chance = rng_from_seed(derive_seed(args.seed, 0));
    let mut outcomes = Vec::new();
    while state.turn() == Turn::Chance {
        let a = meeple_game::draw_chance(&state, &mut outcomes, &mut chance);
        println!("chance: {}", state.action_to_string(a));
        state.apply_unchecked(a);
    }
    println!("{state}\n");
    if state.turn() == Turn::Terminal {
        println!("the game is over; returns {:?}", state.returns().map(|r| r.to_vec()).unwrap_or_default());
        return Ok(());
    }
    let start = Instant::now();
    let a = agent.act(&state, &Budget::UNLIMITED)?;
    println!("{} plays {} [{:.1} ms]", args.agent, state.action_to_string(a), start.elapsed().as_secs_f64() * 1e3);
    Ok(())
}
