//! The fuzz suite: random and mutated inputs thrown at every surface a user reaches, checking
//! that nothing panics or hangs and that the engines keep their contracts.
//!
//! - spec strings (random from the grammar's pieces, and mutations of valid ones) for games,
//!   agents and evaluators; every agent that builds is asked for a move under a deadline and
//!   must answer legally and on time;
//! - notation: every legal action round-trips on random reachable states of every game variant,
//!   and random or mutated move texts are either refused or name an action `apply` handles;
//! - `apply` with any id in any state: accepted exactly when legal, a refusal leaves the state
//!   unchanged; views, previews and reasons never panic;
//! - records: real game records mutated (JSON bytes and fields) go through parsing, replay and
//!   a resumed match without a panic, and a record is only counted when it replays.
//!
//! Stable Rust, no harness: `cargo test -p meeple-arena --test fuzz` runs it for a few seconds
//! (as CI does). `MEEPLE_FUZZ_SECONDS=600` runs it for ten minutes, `MEEPLE_FUZZ_SEED=N` picks
//! the sequence; add `-- --nocapture` to see the counts. A failure prints the seed and input.

use meeple_arena::{MatchConfig, PlayedGame, run_match, run_match_from};
use meeple_game::{Budget, Game, GameRecord, Rng, State, Turn, rng_from_seed};
use meeple_games::with_game;
use rand::RngExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Game variants whose states are fuzzed.
const GAMES: &[&str] = &[
    "tictactoe",
    "connect4",
    "connect4:rows=4,cols=5",
    "santorini",
    "santorini:supply=official",
    "cathedral:size=8",
    "cathedral",
    "cathedral:variant=lehmann",
    "cathedral:variant=random_placer",
    "sagrada",
    "sagrada:players=3,windows=random4",
    "sagrada:players=4,deterministic=true",
    "catan",
    "catan:players=3,board=random,hidden_hands=true",
    "catan:players=2,points=5",
];

/// Pieces specs are made of.
const NAMES: &[&str] = &[
    "tictactoe",
    "connect4",
    "santorini",
    "cathedral",
    "sagrada",
    "catan",
    "random",
    "first",
    "alphabeta",
    "mcts",
    "ismcts",
    "human",
    "sagrada-rules",
    "catan-value",
    "catan-weighted",
    "santorini-greedy",
    "cathedral-largest",
    "zero",
    "lines",
    "linear8",
    "linear22",
    "thesis",
    "area",
    "",
    "x",
];
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "64",
    "65",
    "1000",
    "100000",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "NaN",
    "inf",
    "0.5",
    "1ms",
    "10ms",
    "9300000000000000000s",
    "168h",
    "169h",
    "-5ms",
    "1kb",
    "16mb",
    "30gb",
    "1e99gb",
    "true",
    "false",
    "random4",
    "cards",
    "beginner",
    "random",
    "lehmann",
    "steps",
    "smooth",
    "only_dtfm",
    "lens+grinding",
    "none",
    "official",
    "/dev/null",
    "/nonexistent",
    "()",
    "(",
    ")",
    "",
];
const KEYS: &[&str] = &[
    "iters",
    "time",
    "depth",
    "nodes",
    "tt",
    "eval",
    "worlds",
    "threads",
    "playout",
    "cutoff",
    "c",
    "margin",
    "margin_unit",
    "eval_scale",
    "widening",
    "widening_exp",
    "solver",
    "reuse",
    "filter",
    "order",
    "plain",
    "lmr",
    "lmp",
    "rows",
    "cols",
    "size",
    "variant",
    "players",
    "windows",
    "tools",
    "objectives",
    "deterministic",
    "board",
    "turns",
    "points",
    "hidden_hands",
    "separate_reds",
    "supply",
    "weights",
    "opponent",
    "power",
    "dead",
    "lost",
    "strategy",
    "bogus",
];

struct Fuzz {
    rng: Rng,
    seed: u64,
    end: Instant,
    counts: std::collections::BTreeMap<&'static str, u64>,
}

impl Fuzz {
    fn new(share: f64) -> Self {
        let total: f64 = std::env::var("MEEPLE_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6.0);
        let seed: u64 = std::env::var("MEEPLE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        Fuzz {
            rng: rng_from_seed(seed ^ (share * 1e6) as u64),
            seed,
            end: Instant::now() + Duration::from_secs_f64(total * share),
            counts: Default::default(),
        }
    }

    fn running(&self) -> bool {
        Instant::now() < self.end
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.random_range(0..from.len())]
    }

    /// A spec from the grammar's pieces, nested up to `depth` levels.
    fn spec(&mut self, depth: u32) -> String {
        let mut s = self.pick(NAMES).to_string();
        let options = self.rng.random_range(0..4);
        for i in 0..options {
            s.push(if i == 0 { ':' } else { ',' });
            s.push_str(self.pick(KEYS));
            s.push('=');
            if depth > 0 && self.rng.random_bool(0.2) {
                let inner = self.spec(depth - 1);
                s.push_str(&format!("({inner})"));
            } else {
                s.push_str(self.pick(VALUES));
            }
        }
        s
    }

    /// `text` with a few random edits: characters of the spec and notation grammars inserted,
    /// deleted or replaced, pieces repeated.
    fn mutate(&mut self, text: &str) -> String {
        const CHARS: &[u8] = b":,=()[]+-@/. 0123456789abcdeRGBYPSCRH!\xff";
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..self.rng.random_range(1..4) {
            let at = self.rng.random_range(0..=bytes.len());
            match self.rng.random_range(0..4) {
                0 => bytes.insert(at, CHARS[self.rng.random_range(0..CHARS.len())]),
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                2 if at < bytes.len() => bytes[at] = CHARS[self.rng.random_range(0..CHARS.len())],
                _ => {
                    let piece = bytes[at..].iter().take(8).copied().collect::<Vec<_>>();
                    bytes.splice(at..at, piece);
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn report(&self, target: &str) {
        println!("fuzz {target}: seed {}, {:?}", self.seed, self.counts);
    }
}

/// Runs `f`, turning a panic into a test failure that names the seed and the input.
fn no_panic<T>(fuzz: &Fuzz, input: &str, f: impl FnOnce() -> T) -> T {
    guarded(fuzz.seed, input, f)
}

fn guarded<T>(seed: u64, input: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(e) => {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("panic on input {input:?} (MEEPLE_FUZZ_SEED={seed}): {}", msg.unwrap_or_default());
        }
    }
}

/// A random reachable state of `game` after up to `max_plies` random actions (chance sampled).
fn reachable<G: Game>(game: &G, rng: &mut Rng, max_plies: usize) -> G::State {
    let mut s = game.initial_state();
    let (mut legal, mut outcomes) = (Vec::new(), Vec::new());
    let plies = rng.random_range(0..=max_plies);
    for _ in 0..plies {
        match s.turn() {
            Turn::Terminal => break,
            Turn::Chance => {
                s.apply_unchecked(meeple_game::draw_chance(&s, &mut outcomes, rng));
            }
            Turn::Player(_) => s.apply_unchecked(s.random_action(rng, &mut legal)),
        }
    }
    s
}

/// A decision state of `game` (a player to move), if a short search for one finds it.
fn decision<G: Game>(game: &G, rng: &mut Rng) -> Option<G::State> {
    (0..20).map(|_| reachable(game, rng, 60)).find(|s| s.current_player().is_some())
}

#[test]
fn specs_never_panic_and_built_agents_answer_in_time() {
    let mut fuzz = Fuzz::new(0.3);
    while fuzz.running() {
        let text = if fuzz.rng.random_bool(0.5) {
            fuzz.spec(3)
        } else {
            let base = fuzz.spec(2);
            fuzz.mutate(&base)
        };
        fuzz.count("specs");
        no_panic(&fuzz, &text, || {
            let _ = text.parse::<meeple_game::Spec>();
            let _ = with_game!(text.as_str(), |g| g.num_players());
        });
        let game_text = GAMES[fuzz.rng.random_range(0..GAMES.len())];
        let mut rng = rng_from_seed(fuzz.rng.random());
        // Half the agents are spelled from the game's own agents and their real options.
        let from_infos = fuzz.rng.random_bool(0.5);
        let seed = fuzz.seed;
        let (built, answered) = with_game!(game_text, |g| {
            let spec = if from_infos { agent_spec(&g, &mut rng, 2) } else { text.clone() };
            guarded(seed, &format!("{game_text} / {spec}"), || agent_answers(&g, &spec, &mut rng))
        })
        .expect("fuzzed game specs are valid");
        if built {
            fuzz.count("agents built");
        }
        if answered {
            fuzz.count("agent moves");
        }
    }
    fuzz.report("specs");
}

/// An agent spec from `game`'s agents with some of their options, values from the fuzz
/// values, a default or (for agent-valued options) another such spec.
fn agent_spec<G: Game>(game: &G, rng: &mut Rng, depth: u32) -> String {
    let infos = meeple_search::agent_infos(game);
    let evaluators = meeple_search::evaluator_infos(game);
    let info = infos[rng.random_range(0..infos.len())];
    let mut s = info.name.to_string();
    // Not `verbose`: its report would flood the output.
    let mut params: Vec<_> = info.params.iter().filter(|p| p.name != "verbose").copied().collect();
    let n = rng.random_range(0..=params.len().min(4));
    for i in 0..n {
        let p = params.swap_remove(rng.random_range(0..params.len()));
        let value = match p.name {
            "playout" if depth > 0 => format!("({})", agent_spec(game, rng, depth - 1)),
            "eval" => evaluators[rng.random_range(0..evaluators.len())].name.to_string(),
            _ if rng.random_bool(0.3) && !p.default.is_empty() => p.default.to_string(),
            _ => VALUES[rng.random_range(0..VALUES.len())].to_string(),
        };
        s.push(if i == 0 { ':' } else { ',' });
        s.push_str(&format!("{}={value}", p.name));
    }
    s
}

/// Builds the agent `spec` for `game` and, if it builds with small tables, asks it for a move
/// under a 10 ms deadline: it must give a legal move, well within a second.
fn agent_answers<G: Game>(game: &G, spec: &str, rng: &mut Rng) -> (bool, bool) {
    let Ok(mut agent) = meeple_search::make_agent(game, spec, rng.random()) else { return (false, false) };
    if agent.memory_bytes() > 64 << 20 {
        return (true, false);
    }
    let Some(state) = decision(game, rng) else { return (true, false) };
    let start = Instant::now();
    let answer = agent.act(&state, &Budget::nested(Some(start + Duration::from_millis(10))));
    let took = start.elapsed();
    if let Ok(a) = answer {
        assert!(state.is_legal(a), "{spec} chose an illegal move in {}", game.spec());
    }
    assert!(took < Duration::from_secs(2), "{spec} took {took:?} for a 10 ms deadline in {}", game.spec());
    (true, true)
}

#[test]
fn notation_and_apply_keep_their_contracts_on_every_game() {
    let mut fuzz = Fuzz::new(0.4);
    'outer: while fuzz.running() {
        for &spec in GAMES {
            if !fuzz.running() {
                break 'outer;
            }
            let mut rng = rng_from_seed(fuzz.rng.random());
            let mut texts: Vec<String> = (0..8).map(|_| fuzz.spec(0)).collect();
            let mutated: Vec<String> = texts.iter().map(|t| fuzz.mutate(t)).collect();
            texts.extend(mutated);
            let counts = no_panic(&fuzz, spec, || {
                with_game!(spec, |g| states_keep_contracts(&g, &mut rng, &texts)).expect("valid game spec")
            });
            for (what, n) in counts {
                *fuzz.counts.entry(what).or_default() += n;
            }
        }
    }
    fuzz.report("states");
}

/// Checks one random reachable state of `game` and returns what it counted.
fn states_keep_contracts<G: Game>(game: &G, rng: &mut Rng, extra_texts: &[String]) -> Vec<(&'static str, u64)> {
    let max = match G::INFO.name {
        "catan" => 1500,
        "sagrada" => 400,
        _ => 80,
    };
    let state = reachable(game, rng, max);
    let players = game.num_players();
    let mut legal = Vec::new();
    state.legal_actions(&mut legal);
    let mut outcomes = Vec::new();
    state.chance_outcomes(&mut outcomes);
    let possible: Vec<u32> = match state.turn() {
        Turn::Chance => outcomes.iter().map(|o| o.0).collect(),
        _ => legal.clone(),
    };
    let (mut applies, mut texts) = (0, 0);
    // Every legal action: its text reads back as itself, and applies.
    for &a in &possible {
        let text = state.action_to_string(a);
        assert_eq!(state.parse_action(&text), Ok(a), "'{text}' does not read back in {}", game.spec());
        texts += 1;
    }
    // Any id: accepted exactly when legal; a refusal changes nothing.
    let limit = game.num_actions().max(game.max_chance_outcomes()) as u32;
    let mut ids: Vec<u32> = (0..32).map(|_| rng.random_range(0..limit * 2 + 2)).collect();
    ids.extend([0, limit.saturating_sub(1), limit, u32::MAX - 1, u32::MAX]);
    ids.extend(possible.iter().take(8));
    for &id in &ids {
        let mut s = state.clone();
        let legal_here = possible.contains(&id);
        assert_eq!(state.is_legal(id), legal_here, "is_legal({id}) disagrees with the legal list in {}", game.spec());
        let _ = state.action_to_string(id);
        match s.apply(id) {
            Ok(()) => assert!(legal_here, "apply accepted the illegal id {id} in {}", game.spec()),
            Err(_) => {
                assert!(!legal_here, "apply refused the legal id {id} in {}", game.spec());
                assert_eq!(s, state, "a refused apply changed the state in {}", game.spec());
                if state.current_player().is_some() {
                    let _ = state.illegal_reason(id);
                }
            }
        }
        applies += 1;
    }
    // Random and mutated texts: refused, or an action apply decides on.
    let mut moves: Vec<String> = possible.iter().take(4).map(|&a| state.action_to_string(a)).collect();
    moves.extend(extra_texts.iter().cloned());
    for text in &moves {
        let mutated: String = text.chars().rev().collect();
        for t in [text.clone(), mutated, format!("{text}{text}"), text.to_uppercase()] {
            if let Ok(a) = state.parse_action(&t) {
                let mut s = state.clone();
                if s.apply(a).is_err() {
                    assert_eq!(s, state);
                }
            }
            texts += 1;
        }
    }
    // Views of every seat.
    for p in 0..players {
        let _ = state.observation_string(p);
        let mut obs = Vec::new();
        state.observation(p, &mut obs);
        assert!(obs.iter().all(|x| x.is_finite()));
        for (name, _) in state.text_views() {
            assert!(state.text_view(p, name).is_some());
        }
        let _ = state.text_view(p, "no-such-view");
    }
    for &a in legal.iter().take(4) {
        let _ = state.preview(a);
        let _ = state.action_to_string_for(0, a);
    }
    let _ = state.to_string();
    vec![("states", 1), ("applies", applies), ("notation texts", texts)]
}

#[test]
fn records_are_counted_only_when_they_replay() {
    let mut fuzz = Fuzz::new(0.3);
    let game = meeple_games::Connect4::default();
    let config = MatchConfig { threads: Some(1), ..MatchConfig::new(vec!["random".into(), "first".into()], 4, 1) };
    let (_, played) = run_match(&game, &None, &config, |_| {}).unwrap();
    let lines: Vec<String> = played.iter().map(|g| g.to_line()).collect();
    let sagrada = meeple_games::Sagrada::default();
    let sagrada_config =
        MatchConfig { threads: Some(1), ..MatchConfig::new(vec!["random".into(), "first".into()], 2, 1) };
    let (_, sagrada_games) = run_match(&sagrada, &None, &sagrada_config, |_| {}).unwrap();
    while fuzz.running() {
        let i = fuzz.rng.random_range(0..lines.len());
        let text = if fuzz.rng.random_bool(0.5) { fuzz.mutate(&lines[i]) } else { edit_fields(&mut fuzz, &played[i]) };
        fuzz.count("records");
        no_panic(&fuzz, &text, || {
            if let Ok(r) = GameRecord::from_json(&text) {
                let _ = meeple_game::replay(&game, &r);
            }
            if let Ok(g) = PlayedGame::from_line(&text) {
                let index = g.index;
                // A resumed match keeps a record only when it is the game its index would be.
                if let Ok((_, games)) = run_match_from(&game, &None, &config, vec![g.clone()], |_| {}) {
                    // Kept, it must be the same game (notation may differ in spacing).
                    let kept = &games.iter().find(|x| x.index == index).unwrap().record;
                    let original = &played[index].record;
                    let end = |r: &GameRecord| meeple_game::replay(&game, r).unwrap().pop();
                    assert_eq!(end(kept), end(original), "a changed game was counted");
                    assert_eq!((&kept.returns, &kept.scores), (&original.returns, &original.scores));
                }
            }
        });
        // Sagrada records through replay: any edit replays or is refused.
        let g = &sagrada_games[fuzz.rng.random_range(0..sagrada_games.len())];
        let mut r = g.record.clone();
        if !r.actions.is_empty() {
            let k = fuzz.rng.random_range(0..r.actions.len());
            r.actions[k] = fuzz.mutate(&r.actions[k]);
        }
        no_panic(&fuzz, &format!("{r:?}"), || {
            let _ = meeple_game::replay(&sagrada, &r);
        });
    }
    fuzz.report("records");
}

/// A record line with one field changed to a plausible wrong value: half the time with its
/// checksum made again, as a deliberate edit would, so the checks behind the checksum are
/// exercised too.
fn edit_fields(fuzz: &mut Fuzz, g: &PlayedGame) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&g.to_line()).unwrap();
    let choices = [
        serde_json::json!([1.0]),
        serde_json::json!([0.0, 1.0]),
        serde_json::json!([1.0, 0.0]),
        serde_json::json!([0.5, 0.5, 0.5]),
        serde_json::json!([]),
        serde_json::json!(null),
        serde_json::json!(["9", "9", "9"]),
        serde_json::json!([1e308, -1e308]),
        serde_json::json!(u64::MAX),
        serde_json::json!(-1),
        serde_json::json!("connect4:rows=4"),
        serde_json::json!([7, 0]),
        serde_json::json!([0, 0]),
    ];
    let fields =
        ["returns", "actions", "index", "seating", "seed", "game", "move_ms", "move_seats", "agents", "scores"];
    let field = fuzz.pick(&fields);
    v[field] = choices[fuzz.rng.random_range(0..choices.len())].clone();
    if fuzz.rng.random_bool(0.5)
        && let Ok(edited) = serde_json::from_value::<PlayedGame>(v.clone())
    {
        return edited.to_line();
    }
    v.to_string()
}
