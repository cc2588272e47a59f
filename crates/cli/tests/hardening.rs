//! Regression tests for the hardening issue: each finding of a hostile test of the command line,
//! run as a user would run it. Each must end in one clear error line or correct behaviour: no
//! panic, no hang, no lost file. (The binary is built with overflow checks, as in debug builds.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn meeple(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meeple")).args(args).output().expect("meeple runs")
}

fn with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("meeple-hardening-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Fails with one `error:` line that contains `expected`, and no panic.
fn refuses(args: &[&str], expected: &str) {
    let o = meeple(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?} should fail: {err}");
    assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "{args:?}: one line: {err}");
    assert!(err.contains(expected), "{args:?}: '{err}' should contain '{expected}'");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{args:?}: {err}");
}

#[test]
fn endless_times_are_refused_with_the_limit() {
    // Finding 1: overflow when adding duration to instant.
    for agent in
        ["mcts:time=9300000000000000000s", "alphabeta:time=9300000000000000000s", "ismcts:time=100000000000000000000s"]
    {
        refuses(&["analyze", "connect4", agent], "at most 7 days (168h)");
    }
    refuses(&["play", "connect4", "random", "first", "--move-time", "9300000000000000000s"], "limit of 7 days");
    refuses(&["arena", "connect4", "random", "first", "--move-time", "9300000000000000000s"], "limit of 7 days");
    // The longest accepted time still plays: another limit ends the search.
    let o = meeple(&["analyze", "connect4", "mcts:time=168h,iters=100"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn tables_beyond_the_machine_are_refused_before_allocating() {
    // Finding 2: tt=30gb aborted; anything under 1e15 bytes was accepted.
    let mb = meeple_game::limits::memory() / (1 << 20);
    let too_big = format!("alphabeta:tt={}mb,depth=2", mb * 3 / 4);
    refuses(&["arena", "connect4", &too_big, "random", "--games", "2"], "more than half of this machine's memory");
    // Each under half, together more than the machine: refused before play.
    let half = format!("alphabeta:tt={}mb,depth=2", mb * 2 / 5);
    refuses(&["arena", "connect4", &half, &half, "--games", "2", "--threads", "2"], "the agents' tables need about");
}

#[test]
fn match_sizes_and_thread_counts_are_limited() {
    // Findings 4 and 9.
    refuses(&["arena", "connect4", "random", "first", "--games", "18446744073709551614"], "limit of 1000000 games");
    refuses(&["arena", "connect4", "random", "first", "--games", "1000000000000"], "limit of 1000000 games");
    refuses(&["arena", "connect4", "random", "first", "--threads", "65535"], "--threads 65535: give 1 to");
    refuses(&["analyze", "connect4", "mcts:threads=5000"], "threads 5000: give 1 to");
}

#[test]
fn perft_depth_is_limited() {
    // Finding 5: a 103 GB allocation, and a stack overflow.
    refuses(&["perft", "tictactoe", "4294967295"], "4294967295 is not in 0..=64");
    refuses(&["perft", "tictactoe"], "required arguments were not provided: <DEPTH>");
    refuses(&["perft", "connect4", "--depth", "3"], "unexpected argument '--depth' found");
    refuses(&["perft", "catan:turns=100000", "30000"], "30000 is not in 0..=64");
}

#[test]
fn deeply_nested_specs_are_refused() {
    // Finding 6: a stack overflow at ~700 levels.
    let mut spec = "random".to_string();
    for _ in 0..700 {
        spec = format!("mcts:iters=1,playout=({spec})");
    }
    refuses(&["analyze", "connect4", &spec], "nested more than 8 deep");
}

#[test]
fn cells_outside_the_board_do_not_overflow() {
    // Finding 7: a multiply overflow in debug builds.
    refuses(&["analyze", "sagrada:tools=none", "first", "--moves", "G2@ee"], "cannot read move 'G2@ee'");
    refuses(&["analyze", "sagrada:tools=none", "first", "--moves", "cork:G2@z9"], "cannot read move 'cork:G2@z9'");
}

#[test]
fn nested_agents_keep_the_searchers_time() {
    // Finding 8: 15.6 s for a 50 ms move.
    let start = Instant::now();
    let o =
        meeple(&["analyze", "santorini", "mcts:time=50ms,playout=(alphabeta:eval=linear8)", "--moves", "b2 d4 b4 d2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
}

#[test]
fn many_worlds_are_bounded_and_never_silently_empty() {
    // Finding 10.
    refuses(&["analyze", "sagrada", "alphabeta:worlds=100000,time=50ms"], "expected integer 0..=1000");
    refuses(&["analyze", "sagrada", "mcts:worlds=1000,iters=100"], "iters=100 leaves some of the 1000 trees");
}

#[test]
fn endless_files_are_refused() {
    // Finding 9: /dev/zero read forever.
    if !Path::new("/dev/zero").exists() {
        return;
    }
    refuses(&["arena", "sagrada", "alphabeta:eval=(thesis:weights=/dev/zero)", "random"], "larger than 64 KB");
    refuses(&["replay", "/dev/zero"], "line 1 is longer than");
    refuses(&["plot", "/dev/zero", "--out", s(&dir("zero").join("z"))], "");
}

#[test]
fn finished_results_are_never_overwritten_silently() {
    // Findings 11 and 12.
    let d = dir("overwrite");
    let (records, json) = (d.join("games.jsonl"), d.join("summary.json"));
    let args = ["arena", "connect4", "random", "first", "--games", "20", "--records", s(&records), "--json", s(&json)];
    let o = meeple(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let (kept_records, kept_json) = (std::fs::read(&records).unwrap(), std::fs::read(&json).unwrap());
    refuses(&args, "records file");
    refuses(&["arena", "connect4", "random", "first", "--games", "20", "--json", s(&json)], "--force to replace it");
    assert_eq!(std::fs::read(&records).unwrap(), kept_records, "records untouched");
    assert_eq!(std::fs::read(&json).unwrap(), kept_json, "results untouched");
    // --force replaces, but the old results stay whole until the new run has finished: kill a
    // long run midway and the old JSON is still there, byte for byte.
    let mut child = Command::new(env!("CARGO_BIN_EXE_meeple"))
        .args(["arena", "connect4", "mcts:iters=3000", "mcts:iters=3000", "--games", "2000", "--json", s(&json)])
        .arg("--force")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(std::fs::read(&json).unwrap(), kept_json, "an interrupted run leaves the old file");
    let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(leftovers.len(), 2, "no partial file beside them");
}

/// Writes one records line changed by `edit` (with its checksum made again, as a deliberate
/// edit would, so the checks behind the checksum are what refuses it) and resumes from it.
fn resume_edited(d: &Path, name: &str, edit: impl Fn(&mut serde_json::Value), extra: &[&str]) -> Output {
    let base = d.join("base.jsonl");
    if !base.exists() {
        let o = meeple(&["arena", "connect4", "random", "first", "--games", "10", "--records", s(&base)]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let first = std::fs::read_to_string(&base).unwrap().lines().next().unwrap().to_string();
    let mut v: serde_json::Value = serde_json::from_str(&first).unwrap();
    edit(&mut v);
    let line = match serde_json::from_value::<meeple_arena::PlayedGame>(v.clone()) {
        Ok(g) => g.to_line(),
        Err(_) => v.to_string(),
    };
    let path = d.join(name);
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let mut args = vec!["arena", "connect4", "random", "first", "--games", "10", "--records", s(&path), "--resume"];
    args.extend_from_slice(extra);
    meeple(&args)
}

#[test]
fn resumed_records_are_checked() {
    // Findings 3 and 13.
    let d = dir("resume");
    type Edit = dyn Fn(&mut serde_json::Value);
    let cases: [(&str, &Edit, &[&str], &str); 6] = [
        ("short.jsonl", &|v| v["returns"] = serde_json::json!([1.0]), &[], "does not replay"),
        ("flipped.jsonl", &|v| v["returns"] = serde_json::json!([1.0, 0.0]), &[], "record says returns [1.0, 0.0]"),
        ("illegal.jsonl", &|v| v["actions"] = serde_json::json!(["9", "9", "9"]), &[], "cannot read move '9'"),
        ("opening.jsonl", &|_| {}, &["--opening-plies", "2"], "made with --opening-plies 0, this run has 2"),
        ("clock.jsonl", &|_| {}, &["--move-time", "10ms"], "--move-time (ms) None, this run has Some(10.0)"),
        ("seed.jsonl", &|_| {}, &["--seed", "5"], "made with --seed 0, this run has 5"),
    ];
    for (name, edit, extra, expected) in cases {
        let o = resume_edited(&d, name, edit, extra);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(expected) && err.contains(name), "{name}: '{err}' should contain '{expected}'");
    }
    // An edit without a new checksum is refused as such.
    let base = std::fs::read_to_string(d.join("base.jsonl")).unwrap();
    let edited = base.lines().next().unwrap().replacen("\"actions\":[\"", "\"actions\":[\" ", 1);
    std::fs::write(d.join("edited.jsonl"), format!("{edited}\n")).unwrap();
    let args = ["arena", "connect4", "random", "first", "--games", "10", "--resume", "--records"];
    let o = meeple(&[&args[..], &[s(&d.join("edited.jsonl"))]].concat());
    assert!(stderr(&o).contains("does not match its checksum"), "{}", stderr(&o));
    // An untouched record resumes: only the other 9 games are played.
    let o = resume_edited(&d, "good.jsonl", |_| {}, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("resumed: 1 finished games kept (each checked and replayed), 9 played now"));
}

#[test]
fn openings_never_decide_games() {
    // Finding 14.
    refuses(&["arena", "connect4", "random", "first", "--games", "2", "--opening-plies", "42"], "give fewer plies");
    let o = meeple(&["arena", "tictactoe", "first", "random", "--games", "40", "--opening-plies", "8", "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Every game has agent moves: both agents have move times.
    assert!(v["agents"].as_array().unwrap().iter().all(|a| a["mean_move_ms"].as_f64().unwrap() > 0.0), "{v}");
}

#[test]
fn identical_specs_are_told_apart() {
    // Finding 15.
    let o = meeple(&["arena", "connect4", "random", "random", "--games", "20"]);
    let out = stdout(&o);
    assert!(out.contains("random#1") && out.contains("random#2"), "{out}");
    assert_eq!(out.matches("(anchor)").count(), 1, "{out}");
}

#[test]
fn json_on_stdout_is_alone_there() {
    // Finding 16.
    let o = meeple(&["arena", "connect4", "random", "first", "--games", "4", "--json", "-"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("stdout is one JSON document");
    assert_eq!(v["games"], 4);
    assert!(stderr(&o).contains("wins"), "the table went to stderr");
}

#[test]
fn an_sprt_resumes_instead_of_replaying() {
    // Finding 17.
    let d = dir("sprt");
    let records = d.join("sprt.jsonl");
    let args = ["arena", "connect4", "mcts:iters=200", "random", "--sprt", "0,50", "--games", "1000"];
    let o = meeple(&[&args[..], &["--records", s(&records)]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Cut the last 5 games, as an interrupted run would leave it.
    std::fs::write(&records, lines[..lines.len() - 5].join("\n") + "\n").unwrap();
    let o = meeple(&[&args[..], &["--records", s(&records), "--resume"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let expected =
        format!("resumed: {} finished games kept (each checked and replayed), 5 played now", lines.len() - 5);
    assert!(stderr(&o).contains(&expected), "{}", stderr(&o));
}

#[test]
fn messages_name_what_was_wrong() {
    // Finding 18.
    let d = dir("messages");
    refuses(&["arena", "sagrada", "alphabeta:eval=(thesis:dead=NaN)", "random"], "bad value 'NaN' for 'dead'");
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let spec = format!("alphabeta:eval=(thesis:weights={})", s(&empty));
    refuses(&["arena", "sagrada", &spec, "random"], "this one is empty");
    refuses(&["tune", "connect4", "--param", "c=0.1..2", "--opponent", "random"], "--agent SPEC placing");
    let o = meeple(&["arena", "connect4", "random", "first", "--games", "4", "--json", s(&d.join("r.json"))]);
    assert!(o.status.success());
    refuses(&["plot", s(&d.join("r.json")), "--out", "/nonexistent/x"], "no directory '/nonexistent'");
    let o = with_input(&["play", "sagrada", "human", "first"], b"window:5\nquit\n");
    let line = stdout(&o).lines().find(|l| l.contains("cannot read move 'window:5'")).unwrap_or_default().to_string();
    assert!(line.contains("window:1 to window:4") && line.len() < 300, "one short line, not the notation: {line}");
    // A plain game record (no arena times) replays without "random opening" on every ply.
    let record = d.join("plain.jsonl");
    let line =
        r#"{"game":"tictactoe","seed":0,"agents":["a","b"],"actions":["a1","b1","a2","b2","a3"],"returns":[1.0,0.0]}"#;
    std::fs::write(&record, format!("{line}\n")).unwrap();
    let o = meeple(&["replay", s(&record), "--all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("random opening"), "{}", stdout(&o));
}

#[test]
fn sagrada_tool_refusals_give_the_reason() {
    // Finding 18: lens with an empty round track said "not legal" without why. Round 1 of the
    // default game has Lens Cutter in play when the tools come out so; force it.
    let o =
        with_input(&["play", "sagrada:tools=lens+grinding+pliers", "human", "first"], b"window:1\nlens:R4/G2\nquit\n");
    let out = stdout(&o);
    assert!(out.contains("the round track is empty") || out.contains("is not in the draft pool"), "{out}");
}

#[test]
fn quitting_is_not_an_error_and_bad_bytes_are_asked_again() {
    // Finding 19.
    let o = with_input(&["play", "connect4", "human", "first"], b"\xff\xfe\n4\nquit\n");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("that line was not text (UTF-8)"), "{out}");
    assert!(out.contains("player 0 (human) plays disc in column 4 (4)"), "{out}");
    assert!(out.contains("game stopped after 2 moves"), "{out}");
}

#[test]
fn hint_and_undo_at_the_prompt() {
    let o =
        with_input(&["play", "connect4", "human", "first", "--hint", "mcts:iters=200"], b"undo\nhint\n4\nundo\nquit\n");
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("cannot undo: there is no move of a person to take back"), "{out}");
    assert!(out.contains("hint (mcts:iters=200): "), "{out}");
    assert!(out.contains("took back 2 moves"), "{out}");
    refuses(&["play", "connect4", "human", "first", "--hint", "nobody"], "unknown agent 'nobody'");
}

#[test]
fn the_default_game_count_fits_the_seatings() {
    // Finding 20: 200 is not a multiple of 24.
    let o = meeple(&["arena", "catan", "random", "random", "random", "random", "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["games"], 216);
}

#[test]
fn tune_takes_weight_vectors() {
    // Finding 21.
    let d = dir("tune");
    let out = d.join("w.txt");
    let o = meeple(&[
        "tune",
        "santorini",
        "--agent",
        "alphabeta:depth=1,eval=(linear8:weights=({w}))",
        "--param",
        "w[8]=-5..5",
        "--opponent",
        "random",
        "--evaluations",
        "2",
        "--games",
        "4",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.starts_with("w=(") && written.matches(',').count() == 7, "{written}");
    assert!(stdout(&o).contains("the tuned agent: alphabeta:depth=1,eval=(linear8:weights=("), "{}", stdout(&o));
}

#[test]
fn the_readme_stands_alone() {
    // Finding 22.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    assert!(!readme.contains("../shared") && !readme.contains("shared/data"), "the README points outside the repo");
    let o = meeple(&["--help"]);
    assert!(!stdout(&o).contains("perft, play, arena, bench"), "a stale summary");
}
