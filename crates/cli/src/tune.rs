//! `meeple tune`: tunes an evaluator's weights by playing matches, with random search (the
//! Sagrada thesis's method) or SPSA, and writes the best weights where an agent spec can load
//! them (`eval=(thesis:weights=FILE)`).

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::tune::{Method, Param, Trial, tune};
use meeple_arena::{MatchConfig, run_match, validate};
use meeple_game::Game;
use meeple_games::with_game;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum MethodArg {
    /// Uniform samples of the ranges; the best evaluation wins (the thesis's method).
    Random,
    /// Simultaneous perturbation stochastic approximation: two matches per step, on one seed.
    Spsa,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Objective {
    /// Mean final points of the tuned agent (the thesis's choice).
    Points,
    /// Mean points lead over the opponent.
    Margin,
    /// Score: wins plus half the draws, per game.
    Wins,
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// Game spec, e.g. `sagrada`.
    game: String,
    /// Search method.
    #[arg(long, value_enum, default_value_t = MethodArg::Spsa)]
    method: MethodArg,
    /// Matches to play (SPSA plays two per step).
    #[arg(long, default_value_t = 100)]
    evaluations: usize,
    /// Games per match (a multiple of 2: every seed is played in both seatings).
    #[arg(long, default_value_t = 112)]
    games: usize,
    /// The tuned agent; `{params}` is replaced by `name=value,...` of the parameters.
    /// Default for sagrada: `alphabeta:depth=1,filter=true,eval=(thesis:{params})`.
    #[arg(long, value_name = "SPEC")]
    agent: Option<String>,
    /// The opponent in every match (default for sagrada: `sagrada-rules`, as in the thesis).
    #[arg(long, value_name = "SPEC")]
    opponent: Option<String>,
    /// A parameter and its range, `name=low..high` or `name=low..high:log`; repeat for each.
    /// Default for sagrada: the thesis's five weights and its ranges (Table 8.2).
    #[arg(long = "param", value_name = "RANGE")]
    params: Vec<String>,
    /// Where SPSA starts, `value,value,...` in parameter order (default: the thesis's weights for
    /// sagrada, else the middle of every range).
    #[arg(long, value_name = "VALUES")]
    start: Option<String>,
    /// What a match scores.
    #[arg(long, value_enum, default_value_t = Objective::Points)]
    objective: Objective,
    /// Base seed of the matches.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// The weight file: `name=value,...`, rewritten whenever the answer changes, so an
    /// interrupted run keeps its best so far.
    #[arg(long, value_name = "FILE", default_value = "weights.txt")]
    out: PathBuf,
    /// One JSON line per evaluation (values, score, SPSA estimate).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

/// The thesis's five weights with its ranges (Table 8.2) and tuned values (Table 8.3).
const SAGRADA_PARAMS: [&str; 5] =
    ["opponent=0.01..10:log", "power=0.01..10:log", "dead=10..1000:log", "points=1..500:log", "lost=1..100:log"];
const SAGRADA_START: [f64; 5] = [9.83724229656198, 3.1133889400588606, 373.0, 416.0, 7.0];

pub fn run(args: &TuneArgs) -> Result<()> {
    if args.games == 0 || !args.games.is_multiple_of(2) {
        bail!("--games must be a positive multiple of 2 (each seed is played in both seatings), got {}", args.games);
    }
    if args.evaluations == 0 {
        bail!("--evaluations must be at least 1");
    }
    let sagrada = args.game.split(':').next() == Some("sagrada");
    let texts: Vec<String> = if !args.params.is_empty() {
        args.params.clone()
    } else if sagrada {
        SAGRADA_PARAMS.iter().map(|s| s.to_string()).collect()
    } else {
        bail!("give the parameters to tune with --param name=low..high (defaults exist for sagrada only)");
    };
    let params: Vec<Param> = texts.iter().map(|t| Param::parse(t)).collect::<Result<_, _>>()?;
    let agent = match (&args.agent, sagrada) {
        (Some(a), _) => a.clone(),
        (None, true) => "alphabeta:depth=1,filter=true,eval=(thesis:{params})".to_string(),
        (None, false) => bail!("give the tuned agent with --agent SPEC containing {{params}}"),
    };
    if !agent.contains("{params}") {
        bail!("--agent must contain {{params}} where the parameters go, e.g. eval=(thesis:{{params}})");
    }
    let opponent = match (&args.opponent, sagrada) {
        (Some(o), _) => o.clone(),
        (None, true) => "sagrada-rules".to_string(),
        (None, false) => bail!("give the opponent with --opponent SPEC"),
    };
    let start: Option<Vec<f64>> = match &args.start {
        Some(text) => Some(
            text.split(',')
                .map(|v| v.trim().parse::<f64>().with_context(|| format!("--start: '{v}' is not a number")))
                .collect::<Result<_>>()?,
        ),
        None if sagrada && args.params.is_empty() => Some(SAGRADA_START.to_vec()),
        None => None,
    };
    if start.as_ref().is_some_and(|s| s.len() != params.len()) {
        bail!("--start needs {} values, one per parameter", params.len());
    }
    with_game!(args.game.as_str(), |game| tune_game(&game, args, &params, &agent, &opponent, start.as_deref()))?
}

fn options(params: &[Param], values: &[f64]) -> String {
    params.iter().zip(values).map(|(p, v)| format!("{}={v}", p.name)).collect::<Vec<_>>().join(",")
}

fn tune_game<G: Game>(
    game: &G,
    args: &TuneArgs,
    params: &[Param],
    agent: &str,
    opponent: &str,
    start: Option<&[f64]>,
) -> Result<()> {
    let spec_for = |values: &[f64]| agent.replace("{params}", &options(params, values));
    let config_for = |values: &[f64], seed: u64| {
        let mut c = MatchConfig::new(vec![spec_for(values), opponent.to_string()], args.games, seed);
        c.threads = args.threads.map(usize::from);
        c
    };
    // Fail on a bad spec before the first match.
    let probe: Vec<f64> = params.iter().map(|p| p.value(0.5)).collect();
    validate(game, &config_for(&probe, args.seed))?;
    let mut log = match &args.log {
        Some(path) => {
            Some(BufWriter::new(File::create(path).with_context(|| format!("cannot write {}", path.display()))?))
        }
        None => None,
    };
    let bar = ProgressBar::new(args.evaluations as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} matches, {elapsed} elapsed, eta {eta}  {msg}")
            .expect("progress template"),
    );
    let method = match args.method {
        MethodArg::Random => Method::Random,
        MethodArg::Spsa => Method::Spsa,
    };
    let mut last_written: Option<Vec<f64>> = None;
    let mut write_error: Option<anyhow::Error> = None;
    let best = tune(
        params,
        method,
        args.evaluations,
        start,
        args.seed,
        |values, seed| {
            let (_, games) = run_match(game, &config_for(values, seed), |_| {})?;
            let mut total = 0.0;
            for g in &games {
                let seat = g.seating.iter().position(|&a| a == 0).expect("the tuned agent has a seat");
                let other = 1 - seat;
                total += match args.objective {
                    Objective::Points => g.record.scores[seat],
                    Objective::Margin => g.record.scores[seat] - g.record.scores[other],
                    Objective::Wins => {
                        let r = g.record.returns.as_ref().expect("finished games have returns");
                        match meeple_arena::outcome(r, seat) {
                            0 => 1.0,
                            1 => 0.5,
                            _ => 0.0,
                        }
                    }
                };
            }
            Ok(total / games.len() as f64)
        },
        |trial: &Trial, answer: &[f64]| {
            if let Some(log) = log.as_mut()
                && let Err(e) = serde_json::to_writer(&mut *log, trial).map_err(anyhow::Error::from).and_then(|_| {
                    writeln!(log)?;
                    log.flush().map_err(anyhow::Error::from)
                })
            {
                write_error.get_or_insert(e);
            }
            if last_written.as_deref() != Some(answer) {
                if let Err(e) = std::fs::write(&args.out, options(params, answer) + "\n")
                    .with_context(|| format!("cannot write {}", args.out.display()))
                {
                    write_error.get_or_insert(e);
                }
                last_written = Some(answer.to_vec());
            }
            bar.set_message(format!("last {:.2}", trial.score));
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    println!("{} after {} matches of {} games:", game.spec(), args.evaluations, args.games);
    println!("  {}", options(params, &best));
    println!("written to {}; use it as eval=(thesis:weights={})", args.out.display(), args.out.display());
    Ok(())
}
