//! The loop every round-based learner shares (`meeple train td|dqn|ppo`): a progress line,
//! the metrics log, a checkpoint every minute, a ladder evaluation every few minutes, Ctrl-C to
//! stop with a checkpoint, and `--resume`.

use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::Game;
use meeple_learn::LearnError;
use meeple_learn::ladder::{Ladder, LadderConfig};
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::rl::Learner;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What [`drive`] needs besides the learner.
pub struct Drive<'a> {
    pub out: &'a Path,
    pub resume: bool,
    pub minutes: Option<f64>,
    /// Stop after this many games (episodes).
    pub games: Option<u64>,
    pub eval_minutes: f64,
    pub eval_games: Option<usize>,
    pub opponents: &'a [String],
    /// The equal-time opponent ("none": without one).
    pub equal_time: &'a str,
    pub seed: u64,
    pub threads: usize,
    /// The trainer's name in the metrics (default: the learner's own).
    pub trainer: Option<&'static str>,
    /// The learner's rate is annealed over the run (`--lr-decay`), which needs a limit.
    pub lr_decay: bool,
}

/// Checks the run directory, builds the learner (`make` gets the checkpoint to resume from),
/// then plays and trains rounds until a limit, Ctrl-C, or the game count; checkpoints every
/// minute and at the end, evaluates on the ladder every `eval_minutes`.
pub fn drive<G: Game, L: Learner>(
    game: &G,
    args: &Drive<'_>,
    make: impl FnOnce(Option<&Path>) -> Result<L, LearnError>,
) -> Result<()> {
    if args.lr_decay && args.minutes.is_none() && args.games.is_none() {
        bail!("--lr-decay anneals the learning rate over the run: give its length with --minutes or --games");
    }
    let last = args.out.join("last.safetensors");
    let metrics_path = args.out.join("metrics.jsonl");
    if args.resume {
        if !last.is_file() {
            bail!("--resume: no checkpoint '{}' to continue", last.display());
        }
    } else if last.exists() || metrics_path.exists() {
        bail!("'{}' holds a run already: give --resume to continue it, or another --out", args.out.display());
    }
    let mut run = make(args.resume.then_some(last.as_path()))?;
    std::fs::create_dir_all(args.out.join("ckpt"))?;
    let name = args.trainer.unwrap_or(run.name());
    // With more than two players each rung is a table of that opponent, scored without Elo.
    let mut ladder = if args.eval_minutes > 0.0 {
        let mut c = LadderConfig::new(game, &run.agent(), args.threads, args.seed);
        if !args.opponents.is_empty() {
            c.opponents = args.opponents.to_vec();
        } else {
            let mut o = vec!["random".to_string()];
            o.extend(game.ladder_agents());
            c.opponents = o;
        }
        if let Some(g) = args.eval_games {
            c.games = g;
        }
        c.equal_time = equal_time(args.equal_time);
        Some(Ladder::new(game, c, args.out)?)
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Ctrl-C stops after the round being played; the checkpoint is then written.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} {msg}").expect("template"));
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&metrics_path)?;
    let session = Instant::now();
    let base = run.progress().seconds;
    let mut last_eval = session;
    let mut last_save = session;
    let mut rounds = 0u64;
    loop {
        let seconds = base + session.elapsed().as_secs_f64();
        let p = run.progress();
        if stop.load(Ordering::Relaxed)
            || args.minutes.is_some_and(|m| seconds >= m * 60.0)
            || args.games.is_some_and(|g| p.episodes >= g)
        {
            break;
        }
        let by_time = args.minutes.map_or(0.0, |m| seconds / (m * 60.0).max(1e-9));
        let by_games = args.games.map_or(0.0, |g| p.episodes as f64 / g.max(1) as f64);
        run.set_done(by_time.max(by_games));
        run.set_left(args.games.map(|g| g.saturating_sub(p.episodes)));
        let round = run.round()?;
        rounds += 1;
        run.set_seconds(base + session.elapsed().as_secs_f64());
        let p = run.progress();
        let mut line = Metrics {
            schema: meeple_learn::metrics::SCHEMA,
            event: Event::Generation,
            trainer: name.into(),
            generation: p.episodes,
            steps: p.steps,
            episodes: p.episodes,
            positions: p.decisions,
            wall_seconds: p.seconds,
            trained: true,
            ..Metrics::default()
        };
        for (n, v) in &round.losses {
            line.losses.insert(n.clone(), *v);
        }
        for (n, v) in &round.figures {
            line.figures.insert(n.clone(), *v);
        }
        for (n, v) in &round.stats {
            line.stats.insert(n.clone(), *v);
        }
        writeln!(log, "{}", line.to_line())?;
        bar.set_message(format!("{} games, {} steps, {}", p.episodes, p.steps, round.summary()));
        bar.tick();
        if last_save.elapsed().as_secs() >= 60 {
            run.save(&last, true)?;
            last_save = Instant::now();
        }
        if let Some(ladder) = ladder.as_mut()
            && last_eval.elapsed().as_secs_f64() >= args.eval_minutes * 60.0
        {
            let path = args.out.join("ckpt").join(format!("games-{}.safetensors", p.episodes));
            run.save(&path, false)?;
            bar.set_message(format!("evaluating after {} games", p.episodes));
            let evaluation = ladder.evaluate(&path, p.episodes);
            let line = Metrics::evaluation(name, p.episodes, p.steps, p.seconds, evaluation);
            writeln!(log, "{}", line.to_line())?;
            let scores: Vec<String> = line
                .evaluation
                .iter()
                .flat_map(|e| e.opponents.iter().map(|r| format!("{} {:.3}", r.opponent, r.score)))
                .collect();
            bar.println(format!("after {} games: {}", p.episodes, scores.join(", ")));
            last_eval = Instant::now();
        }
    }
    run.set_seconds(base + session.elapsed().as_secs_f64());
    run.save(&last, true)?;
    bar.finish();
    let p = run.progress();
    println!("{} games ({rounds} rounds this session), {} steps; network in {}", p.episodes, p.steps, last.display());
    Ok(())
}

/// `--equal-time`'s value: an agent spec, or "none".
pub fn equal_time(spec: &str) -> Option<String> {
    (!spec.trim().eq_ignore_ascii_case("none")).then(|| spec.trim().to_string())
}
