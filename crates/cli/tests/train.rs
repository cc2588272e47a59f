//! `meeple train` end to end, as a user runs it: a short run, its curves, a resume, a refused
//! second run into the same directory, and the learned agent in the arena.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn meeple(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meeple")).args(args).output().expect("meeple runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("meeple-train-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_short_run_trains_plots_resumes_and_plays() {
    let d = dir("run");
    let out = d.join("ttt");
    let o = out.to_str().unwrap();
    let common = ["--net", "mlp:layers=1,width=32", "--sims", "8", "--games-per-generation", "16", "--batch", "32"];
    let eval = ["--eval-every", "1", "--eval-games", "4", "--eval-sims", "4", "--ladder", "random"];
    let mut args = vec!["train", "az", "tictactoe", "--steps", "6", "--out", o, "--threads", "1"];
    args.extend(common);
    args.extend(eval);
    let first = meeple(&args);
    assert!(first.status.success(), "{}", text(&first));
    // The one run layout: run.json with the trainer, its settings and progress.
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!((run["trainer"].as_str(), run["last"].as_str()), (Some("az"), Some("ckpt/last.safetensors")), "{run}");
    assert_eq!(run["settings"]["net"], "mlp:layers=1,width=32", "{run}");
    assert!(run["progress"]["steps"].as_u64().unwrap() >= 6, "{run}");
    let metrics = out.join("metrics.jsonl");
    let lines = std::fs::read_to_string(&metrics).unwrap();
    assert!(lines.contains("\"event\":\"generation\"") && lines.contains("\"event\":\"evaluation\""), "{lines}");
    // The evaluations keep their best checkpoint beside the last, named in run.json, the
    // evaluation that made it marked in the metrics.
    assert!(out.join("ckpt/best.safetensors").is_file() && out.join("ckpt/best.json").is_file());
    let best = &run["best"];
    assert!(best["by"].as_str().unwrap().starts_with("score against mcts at equal time"), "{run}");
    assert!(lines.lines().any(|l| l.contains("\"best\":true")), "{lines}");
    assert!(text(&first).contains("%") && text(&first).contains("["), "the interval in the progress: {}", text(&first));
    // The curves.
    let plot = meeple(&["plot", metrics.to_str().unwrap(), "--format", "png"]);
    assert!(plot.status.success(), "{}", text(&plot));
    assert!(out.join("metrics-learning.png").is_file());
    let smoothed = out.join("smoothed");
    let plot = meeple(&[
        "plot",
        metrics.to_str().unwrap(),
        "--format",
        "svg",
        "--smooth",
        "3",
        "--out",
        smoothed.to_str().unwrap(),
    ]);
    assert!(plot.status.success(), "{}", text(&plot));
    let svg = std::fs::read_to_string(out.join("smoothed-learning.svg")).unwrap();
    assert!(svg.contains("(mean of 3)"), "the legend names the mean");
    // A log kept gzip-compressed plots as it is, the same chart.
    let packed = out.join("packed.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, lines.as_bytes()).unwrap();
    std::fs::write(&packed, gz.finish().unwrap()).unwrap();
    let unpacked = out.join("unpacked");
    let from_packed = out.join("from-packed");
    for (file, prefix) in [(&metrics, &unpacked), (&packed, &from_packed)] {
        let plot = meeple(&["plot", file.to_str().unwrap(), "--format", "svg", "--out", prefix.to_str().unwrap()]);
        assert!(plot.status.success(), "{}", text(&plot));
    }
    assert_eq!(
        std::fs::read_to_string(out.join("unpacked-learning.svg")).unwrap(),
        std::fs::read_to_string(out.join("from-packed-learning.svg")).unwrap()
    );
    let zero = meeple(&["plot", metrics.to_str().unwrap(), "--smooth", "0"]);
    assert!(!zero.status.success() && text(&zero).contains("--smooth 0: give 1"), "{}", text(&zero));
    // Running again into the same directory is refused; --resume goes on.
    let again = meeple(&args);
    assert!(!again.status.success() && text(&again).contains("holds a run already"), "{}", text(&again));
    // Other limits are refused without --extend, which makes them the run's new end.
    args[4] = "12";
    args.push("--resume");
    let refused = meeple(&args);
    assert!(!refused.status.success() && text(&refused).contains("planned for --steps 6"), "{}", text(&refused));
    args.push("--extend");
    let resumed = meeple(&args);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert!(!text(&resumed).contains("nothing left to do"), "{}", text(&resumed));
    // The checkpoint names both commands that made it, the first run's and the resumed one's.
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ckpt").join("last.json")).unwrap()).unwrap();
    let commands: Vec<&str> = side["commands"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].starts_with("meeple train az tictactoe --steps 6 --out "), "{commands:?}");
    assert!(commands[1].contains("--steps 12") && commands[1].ends_with("--resume --extend"), "{commands:?}");
    // Resuming a run that already reached its limit says so.
    args.pop();
    let done = meeple(&args);
    assert!(done.status.success() && text(&done).contains("nothing left to do"), "{}", text(&done));
    // The learned agent plays legal games through the arena.
    let model = out.join("ckpt").join("last.safetensors");
    assert!(model.is_file(), "no {}", model.display());
    let az = format!("az:model={},sims=8", model.display());
    let arena = meeple(&["arena", "tictactoe", &az, "random", "--games", "4", "--threads", "1"]);
    assert!(arena.status.success(), "{}", text(&arena));
    // A model of another game is refused with the reason.
    let wrong = meeple(&["arena", "connect4", &az, "random", "--games", "2"]);
    assert!(!wrong.status.success(), "{}", text(&wrong));
    assert!(text(&wrong).contains("tictactoe"), "{}", text(&wrong));
}

#[test]
fn bad_training_arguments_are_refused() {
    let d = dir("bad");
    let o = d.join("x");
    let o = o.to_str().unwrap();
    for (args, wanted) in [
        (vec!["train", "az", "tictactoe", "--out", o], "--minutes M, --games N or --steps N"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--sims", "0", "--out", o], "--sims"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--net", "resnet:blocks=999", "--out", o], "blocks"),
        (vec!["train", "az", "tictactoe", "--minutes=-1", "--out", o], "--minutes"),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--games-per-generation", "0", "--out", o],
            "--games-per-generation",
        ),
        (vec!["train", "az", "nogame", "--steps", "1", "--out", o], "nogame"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--random-opening-share", "1.5", "--out", o], "0 to 1"),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--random-opening-share", "NaN", "--out", o],
            "--random-opening-share NaN: give a finite number",
        ),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--reuse", "0", "--out", o], "--reuse"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--reuse", "inf", "--out", o], "--reuse"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--value-mix", "1.5", "--out", o], "--value-mix"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--value-mix", "NaN", "--out", o], "--value-mix"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--value-lambda", "1.5", "--out", o], "--value-lambda"),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--value-mix-warmup", "9999999", "--out", o],
            "--value-mix-warmup",
        ),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--value-mix-warmup", "1.5", "--out", o],
            "--value-mix-warmup",
        ),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--forced-playouts", "2", "--out", o], "--root puct"),
        (vec!["train", "az", "tictactoe", "--steps", "1", "--teacher-generations", "3", "--out", o], "--teacher SPEC"),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--teacher", "random", "--out", o],
            "--teacher-generations G",
        ),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--teacher", "mcts:iters=x", "--teacher-generations", "1"],
            "--teacher 'mcts:iters=x'",
        ),
        (
            vec!["train", "az", "tictactoe", "--steps", "1", "--root", "puct", "--forced-playouts", "NaN", "--out", o],
            "--forced-playouts",
        ),
        (
            vec![
                "train",
                "az",
                "tictactoe",
                "--steps",
                "1",
                "--random-opening-share",
                "0.5",
                "--random-opening-plies",
                "0",
                "--out",
                o,
            ],
            "--random-opening-plies",
        ),
        // Settings the chosen bootstrap never reads are refused, saying why.
        (vec!["train", "rootstrap", "santorini", "--after-move", "--out", o], "would learn from nothing"),
        (vec!["train", "tdleaf", "santorini", "--zero-sum", "--out", o], "TD-Leaf does not learn from"),
        (vec!["train", "tdleaf", "santorini", "--after-move", "--out", o], "TD-Leaf does not learn from"),
        (vec!["train", "tdleaf", "santorini", "--proven-nodes", "--out", o], "a TreeStrap setting"),
        (vec!["train", "rootstrap", "santorini", "--min-depth", "2", "--out", o], "a TreeStrap setting"),
        (vec!["train", "treestrap", "santorini", "--lambda", "0.5", "--out", o], "TD-Leaf's λ"),
        (vec!["train", "vae", "tictactoe", "--ladder", "random", "--out", o], "an autoencoder plays no games"),
        (
            vec!["train", "value", "tictactoe", "--data", "search", "--epsilon", "0.2", "--out", o],
            "--epsilon is a setting of --data selfplay",
        ),
        (vec!["train", "value", "tictactoe", "--epochs", "3", "--out", o], "--epochs is a setting of --data search"),
    ] {
        let r = meeple(&args);
        assert!(!r.status.success(), "{args:?} succeeded");
        assert!(text(&r).contains(wanted), "{args:?}: {}", text(&r));
        assert!(!text(&r).contains("panicked"), "{args:?}: {}", text(&r));
    }
}

#[test]
fn a_linear_learner_starts_from_given_weights_and_its_file_names_them() {
    // TD-Leaf on Santorini's table36 from negative starting weights (an --init value that begins
    // with a minus sign), the weights file's first line the command that made it, and the file
    // loaded by the evaluator in the arena.
    let d = dir("tdleaf");
    let run = d.join("w");
    let out = run.join("ckpt/last.txt");
    let init: Vec<String> = (0..36).map(|i| format!("{}", i as f64 / 10.0 - 2.0)).collect();
    let init = init.join(",");
    let args = ["train", "tdleaf", "santorini", "--eval", "table36", "--depth", "1", "--games", "3"];
    let o = meeple(&[&args[..], &["--init", &init, "--out", run.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    let (header, numbers) = file.rsplit_once("\n").unwrap().0.rsplit_once('\n').map_or(("", ""), |(h, n)| (h, n));
    assert!(header.contains("meeple train tdleaf santorini --eval table36"), "{header}");
    assert!(header.contains(&format!("--init {init}")), "{header}");
    assert_eq!(numbers.trim().split(',').count(), 36, "{numbers}");
    let eval = format!("alphabeta:depth=1,eval=(table36:weights={})", out.display());
    let arena = meeple(&["arena", "santorini", &eval, "random", "--games", "2", "--threads", "1"]);
    assert!(arena.status.success(), "{}", text(&arena));
    // A weights vector of the wrong length is refused with both counts.
    let wrong = meeple(&[&args[..], &["--init", "1,2,3", "--out", d.join("x").to_str().unwrap()]].concat());
    assert!(!wrong.status.success() && text(&wrong).contains("3 weights given; table36 takes 36"), "{}", text(&wrong));
}

#[test]
fn several_random_starts_are_trained_and_their_round_robin_picks_one() {
    // Three TreeStrap starts (seeds 4, 5, 6), each a run of its own in --out, then a round
    // robin among them: chosen.txt holds the chosen start's weights and names it, the round
    // robin's summary beside it.
    let d = dir("starts");
    let out = d.join("w");
    let o = out.to_str().unwrap();
    let args = ["train", "treestrap", "santorini", "--depth", "1", "--games", "3", "--lr", "1e-6", "--zero-sum"];
    let run = [&args[..], &["--starts", "3", "--select-games", "4", "--seed", "4", "--out", o]].concat();
    let first = meeple(&run);
    assert!(first.status.success(), "{}", text(&first));
    let chosen = std::fs::read_to_string(out.join("chosen.txt")).unwrap();
    let pick = chosen.lines().find(|l| l.starts_with("# start ")).unwrap();
    let k: usize = pick.strip_prefix("# start ").and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(pick.contains(&format!("(seed {},", 3 + k)), "{pick}");
    let weights = |k: usize| out.join(format!("start{k}/ckpt/last.txt"));
    let start = std::fs::read_to_string(weights(k)).unwrap();
    let numbers = |f: &str| f.lines().find(|l| !l.starts_with('#')).unwrap().to_string();
    assert_eq!(numbers(&chosen), numbers(&start));
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("start{k}/ckpt/last.json"))).unwrap()).unwrap();
    assert_eq!(side["config"]["seed"], 3 + k as u64, "{side}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("select.json")).unwrap()).unwrap();
    assert_eq!(summary["agents"].as_array().unwrap().len(), 3);
    // Seeds 4-6 differ: the starts are not one start three times.
    let all: Vec<String> = (1..=3).map(|i| numbers(&std::fs::read_to_string(weights(i)).unwrap())).collect();
    assert!(all[0] != all[1] && all[1] != all[2], "{all:?}");
    // Run again: refused (the runs exist); --resume trains nothing more and picks the same.
    let again = meeple(&run);
    assert!(!again.status.success() && text(&again).contains("holds a"), "{}", text(&again));
    std::fs::remove_file(out.join("chosen.txt")).unwrap();
    let resumed = meeple(&[&run[..], &["--resume"]].concat());
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(numbers(&std::fs::read_to_string(out.join("chosen.txt")).unwrap()), numbers(&chosen));
    // An odd round robin is refused with the reason.
    let odd = meeple(
        &[&args[..], &["--starts", "2", "--select-games", "3", "--out", d.join("o").to_str().unwrap()]].concat(),
    );
    assert!(!odd.status.success() && text(&odd).contains("--select-games 3"), "{}", text(&odd));
}

/// Every trainer the run loop drives keeps one layout: `run.json` (trainer, settings,
/// progress), `metrics.jsonl` (rounds with their losses), `ckpt/last.*`; `--resume` goes on from
/// it, and refuses other settings naming the flag that differs.
#[test]
fn every_trainer_keeps_one_layout_and_resumes() {
    let d = dir("layout");
    let small = ["--threads", "1"];
    let net = ["--net", "mlp:layers=1,width=16"];
    // Each: the trainer, the game, its flags, a setting to change on resume, and the limit
    // that resuming raises (the epochs of the trainers that learn from a fixed set of games).
    let strap = ["--depth", "1", "--opening-plies", "2"];
    type Case<'a> = (&'a str, &'a str, Vec<&'a str>, &'a str, &'a str, &'a str);
    let cases: Vec<Case<'_>> = vec![
        ("td", "tictactoe", [&net[..], &["--eval-every", "0", "--parallel", "2"]].concat(), "--lr", "0.01", "--games"),
        (
            "dqn",
            "tictactoe",
            [&net[..], &["--eval-every", "0", "--parallel", "2", "--learning-starts", "8", "--batch", "8"]].concat(),
            "--lr",
            "0.01",
            "--games",
        ),
        (
            "ppo",
            "tictactoe",
            [&net[..], &["--eval-every", "0", "--parallel", "2", "--rollout", "16"]].concat(),
            "--lr",
            "0.01",
            "--games",
        ),
        (
            "value",
            "tictactoe",
            [&net[..], &["--data", "selfplay", "--parallel", "2"]].concat(),
            "--lr",
            "0.01",
            "--games",
        ),
        (
            "value",
            "tictactoe",
            [&net[..], &["--data", "search", "--searcher", "mcts:iters=30", "--min-visits", "2", "--eval-every", "0"]]
                .concat(),
            "--opening-plies",
            "3",
            "--epochs",
        ),
        ("vae", "tictactoe", vec!["--hidden", "16", "--latent", "4"], "--lr", "0.01", "--epochs"),
        (
            "az",
            "tictactoe",
            [
                &net[..],
                &["--sims", "4", "--games-per-generation", "4", "--batch", "16", "--window", "16", "--eval-every", "0"],
            ]
            .concat(),
            "--lr",
            "0.01",
            "--games",
        ),
        ("rootstrap", "santorini", strap.to_vec(), "--lr", "0.001", "--games"),
        ("treestrap", "santorini", strap.to_vec(), "--win-value", "5", "--games"),
        ("tdleaf", "santorini", strap.to_vec(), "--lambda", "0.5", "--games"),
    ];
    for (i, (kind, game, extra, flag, value, limit)) in cases.into_iter().enumerate() {
        let out = d.join(format!("{kind}{i}"));
        let o = out.to_str().unwrap();
        let epochs = limit == "--epochs";
        let first = if epochs { "2" } else { "4" };
        let mut args = vec!["train", kind, game, "--out", o, limit, first];
        if epochs {
            args.extend(["--games", "4"]);
        }
        args.extend(small);
        args.extend(&extra);
        let r = meeple(&args);
        assert!(r.status.success(), "{kind}: {}", text(&r));
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["trainer"], kind, "{run}");
        assert!(run["progress"]["episodes"].as_u64().unwrap() >= 4, "{kind}: {run}");
        assert!(out.join("ckpt").is_dir(), "{kind}");
        assert!(out.join(run["last"].as_str().unwrap()).is_file(), "{kind}: {run}");
        assert!(run["commands"][0].as_str().unwrap().contains(&format!("train {kind}")), "{run}");
        let lines = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
        let rounds: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(rounds.iter().all(|r| r["trainer"] == kind), "{lines}");
        // Rounds that trained carry their losses (a replay memory's first rounds only fill it).
        let trained: Vec<&serde_json::Value> = rounds.iter().filter(|r| r["trained"] == true).collect();
        assert!(!trained.is_empty(), "{kind}: no round trained: {lines}");
        assert!(trained.iter().all(|r| r["losses"].as_object().is_some_and(|l| !l.is_empty())), "{kind}: {lines}");
        assert!(
            rounds.iter().all(|r| (r["trained"] == true) == (r["steps"].as_u64().unwrap() > 0) || r["trained"] == true),
            "{lines}"
        );
        // Resumed: the same directory, the same layout, further on.
        let played = run["progress"]["episodes"].as_u64().unwrap();
        let steps = run["progress"]["steps"].as_u64().unwrap();
        let more = if epochs { "4".to_string() } else { (played + 4).to_string() };
        let mut again = vec!["train", kind, game, "--out", o, "--resume", limit, &more];
        if epochs {
            again.extend(["--games", "4"]);
        } else {
            again.push("--extend");
        }
        again.extend(small);
        again.extend(&extra);
        let r = meeple(&again);
        assert!(r.status.success(), "{kind}: {}", text(&r));
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        if epochs {
            assert!(run["progress"]["steps"].as_u64().unwrap() > steps, "{kind}: {run}");
        } else {
            assert!(run["progress"]["episodes"].as_u64().unwrap() >= played + 4, "{kind}: {run}");
        }
        assert_eq!(run["commands"].as_array().unwrap().len(), 2, "both command lines kept: {run}");
        assert!(std::fs::read_to_string(out.join("metrics.jsonl")).unwrap().lines().count() > rounds.len());
        // Other settings are refused, naming the flag.
        let mut other = again.clone();
        other.extend([flag, value]);
        let r = meeple(&other);
        assert!(!r.status.success(), "{kind}: resumed with other settings");
        assert!(text(&r).contains(&format!("made with {flag}")), "{kind}: {}", text(&r));
        // A new run into it is refused.
        let r = meeple(&args);
        assert!(!r.status.success() && text(&r).contains("holds a run already"), "{kind}: {}", text(&r));
        // `meeple plot` draws every loss the trainer logged, by name.
        let plot = out.join("plot");
        let r = meeple(&[
            "plot",
            out.join("metrics.jsonl").to_str().unwrap(),
            "--format",
            "svg",
            "--out",
            plot.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{kind}: {}", text(&r));
        let svg = std::fs::read_to_string(out.join("plot-learning.svg")).unwrap();
        for name in trained.iter().flat_map(|r| r["losses"].as_object().unwrap().keys()) {
            let named = |l: &str| l.trim() == name || l.trim().starts_with(&format!("{name} ("));
            assert!(svg.lines().any(named), "{kind}: the plot's legend lacks the loss {name}");
        }
    }
}

/// A run directory whose stored settings hold one this meeple does not take (an older meeple's
/// shape) is not resumed, and the message says why and names it.
#[test]
fn a_run_with_settings_of_another_shape_is_not_resumed() {
    let d = dir("shape");
    let out = d.join("td");
    let o = out.to_str().unwrap();
    let args = ["train", "td", "tictactoe", "--net", "mlp:layers=1,width=16", "--parallel", "2", "--eval-every", "0"];
    let r = meeple(&[&args[..], &["--games", "4", "--out", o]].concat());
    assert!(r.status.success(), "{}", text(&r));
    let run = out.join("run.json");
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    json["settings"]["train"] = serde_json::json!({"lr": 5e-5});
    std::fs::write(&run, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let r = meeple(&[&args[..], &["--games", "8", "--out", o, "--resume"]].concat());
    assert!(!r.status.success());
    assert!(
        text(&r).contains("written by an older meeple") && text(&r).contains("(train, which td does not take)"),
        "{}",
        text(&r)
    );
}

/// `--eval-every N` counts the trainer's rounds as its checkpoints are numbered: a td run that
/// plays four games a round (the last cut to the two left) passes a multiple of three at 4 and
/// at 6, and keeps both checkpoints (a rule of exact multiples would keep only the second).
#[test]
fn a_count_cadence_evaluates_each_time_the_run_passes_a_multiple() {
    let d = dir("cadence");
    let out = d.join("td");
    let args = [
        "train",
        "td",
        "tictactoe",
        "--net",
        "mlp:layers=1,width=16",
        "--parallel",
        "4",
        "--games",
        "6",
        "--eval-every",
        "3",
        "--eval-games",
        "2",
        "--ladder",
        "random",
        "--equal-time",
        "none",
        "--threads",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let r = meeple(&args);
    assert!(r.status.success(), "{}", text(&r));
    let mut kept: Vec<String> = std::fs::read_dir(out.join("ckpt"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("games-") && n.ends_with(".safetensors"))
        .collect();
    kept.sort();
    assert_eq!(kept, ["games-4.safetensors", "games-6.safetensors"], "{}", text(&r));
    let lines = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    assert_eq!(lines.matches("\"event\":\"evaluation\"").count(), 2, "{lines}");
    let bad = meeple(&["train", "td", "tictactoe", "--eval-every", "5x", "--out", out.to_str().unwrap()]);
    assert!(!bad.status.success() && text(&bad).contains("give 0 (never), a time like 90s"), "{}", text(&bad));
}

/// The learning rate of each optimiser step a run's metrics record (each round's `lr` is the
/// rate of the step after it), by step.
fn rates_by_step(out: &Path) -> std::collections::BTreeMap<u64, f64> {
    let lines = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|m| Some((m["steps"].as_u64()?, m["stats"]["lr"].as_f64()?)))
        .collect()
}

/// Starts `args`, waits until its metrics hold more than `lines` lines, and sends it TERM (what a
/// job scheduler or a reclaimed machine sends); gives its output once it has stopped.
fn stopped_by_term(args: &[&str], out: &Path, lines: usize) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let metrics = out.join("metrics.jsonl");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&metrics).map_or(0, |t| t.lines().count()) <= lines {
        assert!(start.elapsed().as_secs() < 120, "the run made no progress");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(term.success());
    child.wait_with_output().unwrap()
}

/// A run goes on in pieces: stopped by TERM twice (once after it resumed on another number of
/// threads), it writes its checkpoint each time and says how to go on, and its learning rate
/// follows the schedule of the run made in one piece, step for step.
#[test]
fn a_run_stopped_by_term_and_resumed_on_other_threads_keeps_its_schedule() {
    let d = dir("pieces");
    const STEPS: u64 = 4000;
    let steps = STEPS.to_string();
    let run = |out: &Path, threads: &'static str| -> Vec<String> {
        let flags = ["--net", "mlp:layers=1,width=8", "--parallel", "2", "--lr", "0.01", "--lr-decay"];
        let mut a: Vec<String> = ["train", "td", "tictactoe"].iter().map(|s| s.to_string()).collect();
        a.extend(flags.iter().map(|s| s.to_string()));
        a.extend(["--eval-every", "0", "--steps", &steps, "--threads", threads, "--out"].iter().map(|s| s.to_string()));
        a.push(out.to_str().unwrap().to_string());
        a
    };
    let whole = d.join("whole");
    let args = run(&whole, "1");
    let r = meeple(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(r.status.success(), "{}", text(&r));
    let pieces = d.join("pieces");
    let progress = |out: &Path| {
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        run["progress"]["steps"].as_u64().unwrap()
    };
    let mut stopped_at = Vec::new();
    for (piece, threads) in [(0, "1"), (1, "2")] {
        let mut args = run(&pieces, threads);
        if piece > 0 {
            args.push("--resume".into());
        }
        let lines = std::fs::read_to_string(pieces.join("metrics.jsonl")).map_or(0, |t| t.lines().count());
        let r = stopped_by_term(&args.iter().map(String::as_str).collect::<Vec<_>>(), &pieces, lines + 200);
        assert!(r.status.success(), "piece {piece}: {}", text(&r));
        assert!(text(&r).contains("stopped; go on with the same command and --resume"), "{}", text(&r));
        assert!(text(&r).contains("to go on elsewhere, keep"), "{}", text(&r));
        let at = progress(&pieces);
        assert!(at < STEPS && stopped_at.last().is_none_or(|&s| at > s), "piece {piece} stopped at step {at}");
        stopped_at.push(at);
    }
    let args = [run(&pieces, "1"), vec!["--resume".into()]].concat();
    let r = meeple(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(r.status.success(), "{}", text(&r));
    assert_eq!(progress(&pieces), progress(&whole));
    // run.json lists what carries the run elsewhere.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pieces.join("run.json")).unwrap()).unwrap();
    let listed: Vec<&str> = file["resume_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    for f in ["run.json", "metrics.jsonl", "ckpt/last.safetensors", "ckpt/last.json", "ckpt/last.adamw"] {
        assert!(listed.contains(&f), "{f} not in {listed:?}");
    }
    let (one, parts) = (rates_by_step(&whole), rates_by_step(&pieces));
    assert!(one.len() as u64 >= STEPS - 1 && parts.len() as u64 >= STEPS - 1, "{} {}", one.len(), parts.len());
    for (step, lr) in &one {
        let other = parts[step];
        assert!((lr - other).abs() <= 1e-12 * lr, "step {step}: {lr} in one piece, {other} in three ({stopped_at:?})");
    }
    // The rate went from the start to the floor.
    assert!(one[&1] > 9e-3 && (one[&STEPS] - 1e-3).abs() < 1e-12, "{} {}", one[&1], one[&STEPS]);
}

/// Options that would change nothing in the setup given are refused with the reason, never
/// accepted and dropped: each command below once trained (or searched) exactly as without the
/// option.
#[test]
fn options_that_would_change_nothing_are_refused() {
    let d = dir("refused");
    let model = |name: &str| format!("{}/../../models/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = |name: &str| d.join(name).to_str().unwrap().to_string();
    let net = ["--net", "mlp:layers=1,width=8"];
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            [&["train", "dqn", "tictactoe", "--buffer", "100", "--learning-starts", "200", "--games", "2"][..], &net]
                .concat(),
            "--learning-starts 200 is more than --buffer 100",
        ),
        (
            [&["train", "td", "tictactoe", "--games", "2", "--eval-every", "0", "--ladder", "random"][..], &net]
                .concat(),
            "--ladder sets how the run's checkpoints are evaluated",
        ),
        (
            [&["train", "dqn", "tictactoe", "--games", "2", "--eval-every", "0", "--eval-games", "4"][..], &net]
                .concat(),
            "--eval-games sets how the run's checkpoints are evaluated",
        ),
        (
            vec!["train", "treestrap", "catan:players=3", "--eval", "catan-value", "--zero-sum", "--games", "1"],
            "--zero-sum teaches each node's negated value to the other player",
        ),
        (
            vec!["train", "treestrap", "catan:players=4", "--eval", "catan-value", "--after-move", "--games", "1"],
            "--after-move keeps only the view of the player who just moved",
        ),
        (
            [&["train", "td", "tictactoe", "--score-weight", "0.5", "--games", "2"][..], &net].concat(),
            "tictactoe has no score margin",
        ),
        (
            [&["train", "dqn", "sagrada:players=2", "--symmetries", "--games", "2"][..], &net].concat(),
            "has none but the identity",
        ),
        (
            vec!["train", "az", "tictactoe", "--eval-sims", "8", "--eval-every", "0", "--steps", "1"],
            "--eval-sims sets the evaluated agent's search, and --eval-every 0 evaluates nothing",
        ),
    ]
    .into_iter()
    .map(|(args, why)| (args.iter().map(|s| s.to_string()).collect(), why))
    .collect();
    let mut cases = cases;
    let td_init = model("catan-td.safetensors");
    cases.push((
        [
            "train",
            "td",
            "catan:players=3,trades=true",
            "--init",
            &td_init,
            "--net",
            "mlp:layers=1,width=8",
            "--games",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "which a warm start keeps; leave --net out",
    ));
    let az = format!("az:model={},root=puct,rescale=false", model("connect4-az.safetensors"));
    cases.push((
        ["arena", "connect4", &az, "random", "--games", "2"].iter().map(|s| s.to_string()).collect(),
        "root=puct selects by PUCT and reads no such scale",
    ));
    for (i, (mut args, why)) in cases.into_iter().enumerate() {
        if args[0] == "train" {
            args.extend(["--threads".to_string(), "1".into(), "--out".into(), out(&format!("r{i}"))]);
        }
        let r = meeple(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!r.status.success(), "accepted: {args:?}");
        assert!(text(&r).contains(why), "{args:?}: {}", text(&r));
    }
}
