//! The `meeple` binary as a user runs it: acceptance checks of the foundation issue.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn meeple(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meeple")).args(args).output().expect("meeple runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("meeple-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn perft_prints_the_count_last() {
    for (args, count) in [(["perft", "connect4", "8"], "5673234"), (["perft", "tictactoe", "9"], "127872")] {
        let o = meeple(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).lines().last(), Some(count));
    }
    let o = meeple(&["perft", "connect4", "3", "--divide"]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert_eq!(lines[0], "1 49");
    assert_eq!(lines[7], "343");
}

#[test]
fn arena_json_is_the_same_for_any_thread_count() {
    let counts = |threads: Option<&str>| {
        let path = tmp(&format!("arena-{}.json", threads.unwrap_or("all")));
        let p = path.to_str().unwrap();
        let mut args = vec!["arena", "connect4", "first", "random", "--games", "200", "--seed", "7", "--json", p];
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let o = meeple(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["game"], "connect4:rows=6,cols=7");
        assert_eq!(v["games"], 200);
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let (w, d, l) =
                    (a["wins"].as_u64().unwrap(), a["draws"].as_u64().unwrap(), a["losses"].as_u64().unwrap());
                assert_eq!(w + d + l, 200, "{a}");
                let ci = a["ci95"].as_array().unwrap();
                let score = a["score"].as_f64().unwrap();
                assert!(ci[0].as_f64().unwrap() <= score && score <= ci[1].as_f64().unwrap());
                (a["spec"].as_str().unwrap().to_string(), w, d, l, a["score"].as_f64().unwrap())
            })
            .collect::<Vec<_>>()
    };
    let one = counts(Some("1"));
    assert_eq!(one, counts(None));
    assert_eq!(one, counts(Some("2")));
    assert_eq!(one[0].0, "first");
}

#[test]
fn records_replay_and_are_ordered() {
    let path = tmp("records.jsonl");
    let o = meeple(&["arena", "tictactoe", "random", "random", "--games", "20", "--records", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 20);
    for (i, rec) in lines.iter().enumerate() {
        assert_eq!(rec["index"], i);
        assert_eq!(rec["game"], "tictactoe");
        let record = meeple_game::GameRecord::from_json(&serde_json::to_string(rec).unwrap()).unwrap();
        meeple_game::replay(&meeple_games::TicTacToe, &record).unwrap();
    }
}

#[test]
fn default_arena_runs_without_arguments() {
    // The shipped network against MCTS at equal time, found from any working directory.
    let o = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(["arena", "--games", "2"])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("connect4:rows=6,cols=7 — 2 games"), "{}", stdout(&o));
    assert!(stderr(&o).contains("connect4-az.safetensors,time=100ms vs mcts:time=100ms"), "{}", stderr(&o));
}

#[test]
fn bad_input_gives_one_clear_line_and_a_nonzero_exit() {
    let cases: &[(&[&str], &str)] = &[
        (&["perft", "chess", "3"], "unknown game 'chess'; accepted: tictactoe, connect4"),
        (&["perft", "connect4", "abc"], "invalid value 'abc'"),
        (&["perft", "connect4", "-1"], "invalid value '-1'"),
        (&["perft", "connect4:rows=99", "3"], "bad value '99' for 'rows'"),
        (&["perft", "connect4:depth=2", "3"], "unknown option 'depth'; accepted: rows"),
        (&["arena", "connect4", "random", "alphazero"], "unknown agent 'alphazero'; accepted: random, first"),
        (&["arena", "connect4", "random", "random:iters=5"], "agent random: unknown option 'iters'"),
        (&["arena", "connect4", "random"], "give 2 agent specs (or more, for a round robin), not 1"),
        (&["arena", "connect4", "random", "first", "--confidence", "1.5"], "--confidence 1.5 must be between 0 and 1"),
        (
            &["arena", "connect4", "random", "first", "--anchor", "alphabeta"],
            "--anchor 'alphabeta' is not one of the agents",
        ),
        (&["arena", "connect4", "random", "first", "--games", "7"], "multiple of 2"),
        (&["arena", "connect4", "random", "first", "--json", "/nonexistent/x/y.json"], "cannot write results file"),
        (&["arena", "connect4", "random", "first", "--records", "/nonexistent/x/r"], "cannot write records file"),
        (&["play", "connect4", "random", "first", "--move-time", "fast"], "'fast' is not a duration"),
        (&["bench", "connect4", "--seconds", "0"], "--seconds must be"),
        (&["arena", "connect4:", "random", "first"], "bad spec 'connect4:'"),
        (&["frobnicate"], "unrecognized subcommand"),
        (&["tune", "sagrada", "--games", "3"], "--games must be a positive multiple of 2"),
        (&["tune", "connect4"], "give the parameters to tune with --param"),
        (&["tune", "sagrada", "--param", "dead=9..1"], "bad parameter range 'dead=9..1'"),
        (&["tune", "sagrada", "--agent", "alphabeta:depth=1"], "--agent must place every parameter"),
        (&["tune", "sagrada", "--start", "1,2"], "--start needs 5 values"),
        (&["tune", "sagrada", "--opponent", "nobody"], "unknown agent 'nobody'"),
        (&["arena", "sagrada", "alphabeta:eval=(thesis:weights=/nonexistent/w.txt)", "random"], "readable weight file"),
        (&["arena", "sagrada:tools=saw", "random", "random"], "bad value 'saw' for 'tools'"),
    ];
    for (args, expected) in cases {
        let o = meeple(args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: '{err}' should contain '{expected}'");
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{args:?}: {err}");
    }
}

/// `meeple` alone is asked what it does: the whole usage with every command, not one line.
#[test]
fn meeple_alone_prints_its_usage() {
    let o = meeple(&[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    for command in ["games", "agents", "arena", "train", "serve", "plot"] {
        assert!(err.lines().any(|l| l.trim_start().starts_with(command)), "'{command}' not listed:\n{err}");
    }
}

#[test]
fn a_human_plays_through_stdin_and_is_reprompted() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(["play", "tictactoe", "human", "first"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // first (O) answers a3 then b3; X wins on the diagonal a1-b2-c3.
    child.stdin.take().unwrap().write_all(b"b2\nb2\nzz\na1\nc3\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("not legal here: b2 is already taken"), "{out}");
    assert!(out.contains("cannot read move 'zz'"), "{out}");
    assert!(out.contains("player 0 (human) wins"), "{out}");
}

#[test]
fn closed_stdin_ends_play_with_an_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(["play", "connect4", "human", "random"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("input ended before player 0 moved"), "{}", stderr(&o));
}

#[test]
fn bench_json_has_the_documented_keys() {
    let o = meeple(&["bench", "tictactoe", "--seconds", "0.2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["game"], "tictactoe");
    assert!(v["random_games_per_sec"].as_f64().unwrap() > 0.0);
    // Random tic-tac-toe games last 5 to 9 plies.
    let mean = v["plies_per_sec"].as_f64().unwrap() / v["random_games_per_sec"].as_f64().unwrap();
    assert!((5.0..=9.0).contains(&mean), "{v}");
}

#[test]
fn every_command_explains_itself() {
    let o = meeple(&["train", "--help"]);
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    for kind in ["az", "td", "value", "dqn", "ppo", "vae", "rootstrap", "treestrap", "tdleaf"] {
        assert!(first.split(|c: char| !c.is_alphanumeric()).any(|w| w == kind), "{kind} not on: {first}");
    }
    for cmd in ["games", "agents", "perft", "play", "arena", "bench", "analyze", "replay", "plot", "tune"] {
        let o = meeple(&[cmd, "--help"]);
        assert!(o.status.success());
        assert!(stdout(&o).contains("Usage: meeple"), "{cmd}");
    }
}

#[test]
fn catan_games_with_player_trades_record_and_replay() {
    let path = tmp("catan-trades.jsonl");
    let p = path.to_str().unwrap();
    let o = meeple(&[
        "arena",
        "catan:players=3,trades=true",
        "random",
        "catan-value",
        "random",
        "--games",
        "6",
        "--records",
        p,
        "--json",
        tmp("catan-trades.json").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let moves = |r: &serde_json::Value| -> Vec<String> {
        r["actions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
    };
    // Random seats offer, answer and trade: every record has offers, answers and trades.
    for r in &records {
        let m = moves(r);
        for kind in ["offer:", "accept", "decline", "with:"] {
            assert!(m.iter().any(|a| a.starts_with(kind)), "no {kind} in a record");
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp("catan-trades.json")).unwrap()).unwrap();
    assert!(summary.to_string().contains("player_trades"), "the summary counts trades");
    for (k, record) in records.iter().enumerate() {
        let o = meeple(&["replay", p, "--game", &k.to_string(), "--all"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let plies = record["actions"].as_array().unwrap().len();
        assert!(out.contains(&format!("ply {plies}/{plies}:")), "{out}");
        assert!(out.contains("offer:"), "the replay shows the offers");
    }
}

#[test]
fn replay_reaches_the_recorded_end() {
    let path = tmp("replay.jsonl");
    let p = path.to_str().unwrap();
    let o = meeple(&["arena", "connect4", "random", "mcts:iters=50", "--games", "6", "--records", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (k, rec) in lines.iter().enumerate() {
        let o = meeple(&["replay", p, "--game", &k.to_string(), "--all"]);
        let out = stdout(&o);
        assert!(o.status.success(), "{}", stderr(&o));
        let plies = rec["actions"].as_array().unwrap().len();
        assert!(out.contains(&format!("ply {plies}/{plies}:")), "{out}");
        let returns: Vec<f64> = rec["returns"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(out.trim_end().ends_with(&format!("result: returns {returns:?}")), "{out}");
    }
    // Bad files name the line and the problem.
    let bad = tmp("bad-records.jsonl");
    std::fs::write(&bad, format!("{}\nnot json\n", serde_json::to_string(&lines[0]).unwrap())).unwrap();
    let o = meeple(&["replay", bad.to_str().unwrap(), "--game", "1"]);
    assert!(stderr(&o).contains("line 2: not a game record"), "{}", stderr(&o));
    let o = meeple(&["replay", p, "--game", "99"]);
    assert!(stderr(&o).contains("has no game 99 (6 games in it)"), "{}", stderr(&o));
    // A record whose moves are not legal does not replay.
    let mut broken = lines[0].clone();
    broken["actions"][0] = serde_json::Value::String("9".into());
    let bad = tmp("illegal-records.jsonl");
    std::fs::write(&bad, serde_json::to_string(&broken).unwrap()).unwrap();
    let o = meeple(&["replay", bad.to_str().unwrap()]);
    assert!(stderr(&o).contains("line 1: game 0 does not match its checksum"), "{}", stderr(&o));
    let plain: serde_json::Value = ["game", "seed", "agents", "actions", "returns", "scores"]
        .iter()
        .map(|k| (k.to_string(), broken[k].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    std::fs::write(&bad, serde_json::to_string(&plain).unwrap()).unwrap();
    let o = meeple(&["replay", bad.to_str().unwrap()]);
    assert!(stderr(&o).contains("does not replay") && stderr(&o).contains("ply 1"), "{}", stderr(&o));
}

#[test]
fn sprt_and_resume_from_the_command_line() {
    let o = meeple(&["arena", "connect4", "mcts:iters=200", "random", "--games", "400", "--sprt", "0,50"]);
    assert!(stdout(&o).contains("H1 accepted"), "{}", stdout(&o));
    let o = meeple(&["arena", "connect4", "random", "first", "--sprt", "50"]);
    assert!(stderr(&o).contains("is not elo0,elo1"), "{}", stderr(&o));
    let o = meeple(&["arena", "connect4", "random", "first", "--resume"]);
    assert!(!o.status.success() && stderr(&o).contains("--records"), "{}", stderr(&o));
    // A run cut off mid-line resumes to the full set of games, none twice.
    let path = tmp("resume.jsonl");
    let p = path.to_str().unwrap();
    assert!(meeple(&["arena", "tictactoe", "random", "first", "--games", "30", "--records", p]).status.success());
    let text = std::fs::read_to_string(&path).unwrap();
    let cut: String = text.lines().take(11).map(|l| format!("{l}\n")).collect::<String>() + "{\"index\":11,\"sea";
    std::fs::write(&path, cut).unwrap();
    let o = meeple(&["arena", "tictactoe", "random", "first", "--games", "30", "--records", p, "--resume"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut idx: Vec<u64> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["index"].as_u64().unwrap())
        .collect();
    idx.sort_unstable();
    assert_eq!(idx, (0..30).collect::<Vec<u64>>());
}

#[test]
fn round_robin_elo_order_and_plots() {
    let dir = tmp("plots");
    std::fs::create_dir_all(&dir).unwrap();
    let (json, csv, records) = (dir.join("F.json"), dir.join("D"), dir.join("R.jsonl"));
    let o = meeple(&[
        "arena",
        "connect4",
        "random",
        "first",
        "mcts:iters=200",
        "mcts:iters=2000",
        "--games",
        "20",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let elo: Vec<(String, f64)> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["spec"].as_str().unwrap().into(), a["elo"].as_f64().unwrap()))
        .collect();
    let lowest = elo.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let highest = elo.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert_eq!((lowest.0.as_str(), highest.0.as_str()), ("random", "mcts:iters=2000"), "{elo:?}");
    assert_eq!(v["pairwise"].as_array().unwrap().len(), 6);
    for a in v["agents"].as_array().unwrap() {
        let ci = a["elo_ci"].as_array().unwrap();
        assert!(
            ci[0].as_f64().unwrap() <= a["elo"].as_f64().unwrap()
                && a["elo"].as_f64().unwrap() <= ci[1].as_f64().unwrap()
        );
    }
    // CSV rows have as many fields as their header.
    for name in ["games.csv", "agents.csv", "pairwise.csv"] {
        let text = std::fs::read_to_string(csv.join(name)).unwrap();
        let widths: Vec<usize> = text.lines().map(csv_fields).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{name}: {widths:?}");
    }
    assert_eq!(std::fs::read_to_string(csv.join("games.csv")).unwrap().lines().count(), 1 + 6 * 20);
    // Plots: PNG and SVG files that are what they say.
    let o = meeple(&["plot", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for chart in ["elo", "pairwise"] {
        let png = std::fs::read(dir.join(format!("F-{chart}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let svg = std::fs::read_to_string(dir.join(format!("F-{chart}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("mcts:iters=2000"), "{chart}");
    }
    let o = meeple(&["plot", records.to_str().unwrap(), "--format", "svg"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("R-scores.svg").exists());
    // Files that are neither give a clear error.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"game\": 3}").unwrap();
    let o = meeple(&["plot", bad.to_str().unwrap()]);
    assert!(stderr(&o).contains("not a results file") || stderr(&o).contains("line 1"), "{}", stderr(&o));
}

/// Fields in a CSV line, honouring quotes (agent specs contain commas).
fn csv_fields(line: &str) -> usize {
    let mut n = 1;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => n += 1,
            _ => {}
        }
    }
    n
}

#[test]
fn tune_writes_weights_an_agent_can_load() {
    let dir = std::env::temp_dir().join(format!("meeple-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("w.txt");
    let log = dir.join("log.jsonl");
    let o = meeple(&[
        "tune",
        "sagrada",
        "--method",
        "random",
        "--evaluations",
        "3",
        "--games",
        "2",
        "--threads",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let weights = std::fs::read_to_string(&out).unwrap();
    assert!(weights.starts_with("opponent=") && weights.contains(",lost="), "{weights}");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
    let agent = format!("alphabeta:depth=1,eval=(thesis:weights={})", out.display());
    let o = meeple(&["arena", "sagrada", &agent, "random", "--games", "2", "--threads", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}
