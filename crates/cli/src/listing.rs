use anyhow::Result;
use meeple_game::{Game, ParamInfo, State, perft as count_leaves, perft_divide};
use meeple_games::{GAMES, with_game};
use std::time::Instant;

fn print_params(params: &[ParamInfo]) {
    for p in params {
        let default = if p.default.is_empty() { "unset".to_string() } else { p.default.to_string() };
        println!("    {:<13} {} [default {}; accepts {}]", p.name, p.help, default, p.accepts);
    }
}

pub fn games(rules: Option<&str>) -> Result<()> {
    if let Some(spec) = rules {
        let (canonical, card) = with_game!(spec, |g| (g.spec().to_string(), g.rules()))?;
        println!("{canonical}");
        for section in card {
            println!("\n{}", section.heading);
            for line in section.lines {
                println!("  - {line}");
            }
        }
        return Ok(());
    }
    for info in GAMES {
        println!("{:<10} {}", info.name, info.about);
        print_params(info.params);
    }
    Ok(())
}

pub fn agents(game: Option<&str>) -> Result<()> {
    let (agents, evaluators) = match game {
        Some(spec) => with_game!(spec, |g| (meeple_learn::agent_infos(&g), meeple_learn::evaluator_infos(&g)))?,
        None => ([meeple_search::AGENTS, meeple_learn::AGENTS].concat(), vec![]),
    };
    for info in agents.iter().chain(std::iter::once(&crate::human::HUMAN_INFO)) {
        println!("{:<10} {}", info.name, info.about);
        print_params(info.params);
    }
    println!("\nExamples: alphabeta:depth=6,time=500ms,tt=64mb");
    println!("          mcts:iters=10000,c=0.7,playout=random,threads=2,solver=true");
    println!("          mcts:time=300ms,worlds=8,playout=(alphabeta:depth=1)");
    match game {
        Some(spec) => {
            println!("\nEvaluators for {spec} (eval=NAME in alphabeta and mcts):");
            for info in &evaluators {
                println!("{:<10} {}", info.name, info.about);
                print_params(info.params);
            }
        }
        None => println!("\nGames may add agents and evaluators: `meeple agents --game GAME` lists them too."),
    }
    Ok(())
}

pub fn perft(spec: &str, depth: u32, divide: bool) -> Result<()> {
    with_game!(spec, |game| {
        let start = Instant::now();
        let root = game.initial_state();
        let total = if divide && depth > 0 {
            let split = perft_divide(&root, depth);
            for &(a, n) in &split {
                println!("{} {n}", root.action_to_string(a));
            }
            split.iter().map(|&(_, n)| n).sum()
        } else {
            count_leaves(&root, depth)
        };
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "perft({depth}) of {} in {secs:.3} s ({:.1} M leaves/s)",
            game.spec(),
            total as f64 / secs.max(1e-9) / 1e6
        );
        println!("{total}");
    })?;
    Ok(())
}
