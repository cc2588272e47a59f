//! `meeple tune`: tunes an evaluator's weights by playing matches, with random search (the
//! Sagrada thesis's method) or SPSA, and writes the best weights where an agent spec can load
//! them (`eval=(thesis:weights=FILE)`).

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::files::{check_new_output, write_atomic};
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
    /// The tuned agent, with placeholders for the parameters: `{params}` becomes
    /// `name=value,...` of all of them, `{NAME}` the value of one (a vector parameter's values
    /// joined by commas, e.g. `eval=(linear8:weights=({w}))`). Default for sagrada:
    /// `alphabeta:depth=1,filter=true,eval=(thesis:{params})`.
    #[arg(long, value_name = "SPEC")]
    agent: Option<String>,
    /// The opponent in every match (default for sagrada: `sagrada-rules`, as in the thesis).
    #[arg(long, value_name = "SPEC")]
    opponent: Option<String>,
    /// A parameter and its range, `name=low..high` or `name=low..high:log`; repeat for each.
    /// `name[N]=low..high` is a vector of N values tuned together (each in the range), for
    /// weight vectors like linear8's. Default for sagrada: the thesis's five weights and its
    /// ranges (Table 8.2).
    #[arg(long = "param", value_name = "RANGE")]
    params: Vec<String>,
    /// Where SPSA starts, `value,value,...` in parameter order, a vector's values in turn
    /// (default: the thesis's weights for sagrada, else the middle of every range).
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
    /// The weight file: `name=value,...` (a vector as `name=(v1,v2,...)`), rewritten whole
    /// whenever the answer changes, so an interrupted run keeps its best so far.
    #[arg(long, value_name = "FILE", default_value = "weights.txt")]
    out: PathBuf,
    /// One JSON line per evaluation (values, score, SPSA estimate).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Replace existing --out and --log files.
    #[arg(long)]
    force: bool,
}

/// The parameters as the user named them: scalars, and vectors tuned coordinate by coordinate.
struct Named {
    /// (name, first coordinate, coordinates, is a vector)
    groups: Vec<(String, usize, usize, bool)>,
}

impl Named {
    /// Reads `--param` texts into the coordinates SPSA and random search work on.
    fn parse(texts: &[String]) -> Result<(Named, Vec<Param>)> {
        let mut groups = Vec::new();
        let mut params = Vec::new();
        for text in texts {
            let (name, range) = text.split_once('=').unwrap_or((text, ""));
            let (base, count, vector) = match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
                Some((base, n)) => {
                    let n: usize = n
                        .parse()
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .with_context(|| format!("--param '{text}': the vector size in [N] must be 1 to 64"))?;
                    (base, n, true)
                }
                None => (name, 1, false),
            };
            if base.is_empty() || !base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("--param '{text}': a parameter name uses letters, digits and '_'");
            }
            if groups.iter().any(|g: &(String, usize, usize, bool)| g.0 == base) {
                bail!("--param '{text}': parameter '{base}' is given twice");
            }
            let one = Param::parse(&format!("{base}={range}"))?;
            groups.push((base.to_string(), params.len(), count, vector));
            for i in 0..count {
                let name = if vector { format!("{base}[{i}]") } else { base.to_string() };
                params.push(Param { name, ..one.clone() });
            }
        }
        Ok((Named { groups }, params))
    }

    /// Each parameter's text: a value, or a vector's values joined by commas.
    fn texts(&self, values: &[f64]) -> Vec<(String, String, bool)> {
        self.groups
            .iter()
            .map(|(name, first, count, vector)| {
                let v: Vec<String> = values[*first..first + count].iter().map(|x| x.to_string()).collect();
                (name.clone(), v.join(","), *vector)
            })
            .collect()
    }

    /// `name=value,...`, vectors in brackets: the weight-file format and `{params}`.
    fn options(&self, values: &[f64]) -> String {
        self.texts(values)
            .iter()
            .map(|(n, v, vector)| if *vector { format!("{n}=({v})") } else { format!("{n}={v}") })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The agent template with its placeholders filled.
    fn fill(&self, template: &str, values: &[f64]) -> String {
        let mut out = template.replace("{params}", &self.options(values));
        for (name, text, _) in self.texts(values) {
            out = out.replace(&format!("{{{name}}}"), &text);
        }
        out
    }

    /// Checks that the template places every parameter and names no unknown one.
    fn check_template(&self, template: &str) -> Result<()> {
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            let name = &rest[open + 1..open + close];
            if name != "params" && !self.groups.iter().any(|g| g.0 == name) {
                let known: Vec<&str> = self.groups.iter().map(|g| g.0.as_str()).collect();
                bail!("--agent has a placeholder {{{name}}} for no parameter; the parameters are {}", known.join(", "));
            }
            rest = &rest[open + close + 1..];
        }
        if template.contains("{params}") {
            return Ok(());
        }
        if let Some((name, ..)) = self.groups.iter().find(|g| !template.contains(&format!("{{{}}}", g.0))) {
            bail!(
                "--agent must place every parameter: add {{params}} (all as name=value) or {{{name}}} where '{name}' \
                 goes, e.g. eval=(thesis:{{params}}) or eval=(linear8:weights=({{{name}}}))"
            );
        }
        Ok(())
    }
}

pub fn run(args: &TuneArgs) -> Result<()> {
    if args.games == 0 || !args.games.is_multiple_of(2) {
        bail!("--games must be a positive multiple of 2 (each seed is played in both seatings), got {}", args.games);
    }
    if args.evaluations == 0 {
        bail!("--evaluations must be at least 1");
    }
    // The game's own tuning problem (Sagrada: the thesis's) fills in what the user leaves out.
    let defaults = with_game!(args.game.as_str(), |game| game.tuning_defaults())?;
    let game_name = args.game.split(':').next().unwrap_or_default();
    let texts: Vec<String> = match (&args.params[..], defaults) {
        ([], Some(d)) => d.params.iter().map(|s| s.to_string()).collect(),
        ([], None) => {
            bail!("give the parameters to tune with --param name=low..high ({game_name} has no default ones)")
        }
        (given, _) => given.to_vec(),
    };
    let (named, params) = Named::parse(&texts)?;
    let agent = match (&args.agent, defaults) {
        (Some(a), _) => a.clone(),
        (None, Some(d)) => d.agent.to_string(),
        (None, None) => {
            bail!("give the tuned agent with --agent SPEC placing the parameters ({{params}} or {{NAME}})")
        }
    };
    named.check_template(&agent)?;
    let opponent = match (&args.opponent, defaults) {
        (Some(o), _) => o.clone(),
        (None, Some(d)) => d.opponent.to_string(),
        (None, None) => bail!("give the opponent with --opponent SPEC"),
    };
    let start: Option<Vec<f64>> = match (&args.start, defaults) {
        (Some(text), _) => Some(
            text.split(',')
                .map(|v| v.trim().parse::<f64>().with_context(|| format!("--start: '{v}' is not a number")))
                .collect::<Result<_>>()?,
        ),
        (None, Some(d)) if args.params.is_empty() => Some(d.start.to_vec()),
        _ => None,
    };
    if start.as_ref().is_some_and(|s| s.len() != params.len()) {
        bail!("--start needs {} values, one per parameter", params.len());
    }
    check_new_output(&args.out, "weight file", args.force, false).map_err(|e| anyhow!(e))?;
    if let Some(log) = &args.log {
        check_new_output(log, "log file", args.force, false).map_err(|e| anyhow!(e))?;
    }
    let tuning = Tuning { named: &named, params: &params, agent: &agent, opponent: &opponent };
    with_game!(args.game.as_str(), |game| tune_game(&game, args, &tuning, start.as_deref()))?
}

/// What is tuned, against whom.
struct Tuning<'a> {
    named: &'a Named,
    params: &'a [Param],
    agent: &'a str,
    opponent: &'a str,
}

fn tune_game<G: Game>(game: &G, args: &TuneArgs, tuning: &Tuning<'_>, start: Option<&[f64]>) -> Result<()> {
    let Tuning { named, params, agent, opponent } = *tuning;
    let spec_for = |values: &[f64]| named.fill(agent, values);
    let config_for = |values: &[f64], seed: u64| {
        let mut c = MatchConfig::new(vec![spec_for(values), opponent.to_string()], args.games, seed);
        c.threads = args.threads.map(usize::from);
        c
    };
    // Fail on a bad spec before the first match.
    let probe: Vec<f64> = params.iter().map(|p| p.value(0.5)).collect();
    validate(game, &meeple_learn::extension(), &config_for(&probe, args.seed))?;
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
            let (_, games) = run_match(game, &meeple_learn::extension(), &config_for(values, seed), |_| {})?;
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
                if let Err(e) = write_atomic(&args.out, (named.options(answer) + "\n").as_bytes())
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
    println!("  {}", named.options(&best));
    println!("written to {}; the tuned agent: {}", args.out.display(), spec_for(&best));
    if agent.contains("thesis:{params}") {
        println!("the weight file loads as eval=(thesis:weights={})", args.out.display());
    }
    Ok(())
}
