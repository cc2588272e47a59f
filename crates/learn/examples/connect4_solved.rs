//! How often agents play a perfect move in connect four positions solved here exactly:
//!
//! `cargo run --release -p meeple-learn --example connect4_solved -- POSITIONS SEED MIN_PLY MAX_PLY AGENT...`
//! `cargo run --release -p meeple-learn --example connect4_solved -- --file FILE AGENT...`
//!
//! Positions come from random play (seeded), `MIN_PLY..=MAX_PLY` moves in, or from a file with
//! one position a line: the columns played from the start (`4453`, columns 1-7) and optionally a
//! score whose sign is the mover's result (the format of the usual connect-four solver test
//! sets), which is then checked against this solver. Positions where every move has the same
//! value (won, drawn or lost whatever is played) say nothing and are left out.
//! A move is perfect when it keeps the position's value under best play (win, draw or loss; how
//! fast a win comes does not count).
//!
//! The values come from a bitboard solver written for this check (the generic alpha-beta is
//! exact too but far too slow from the middle game); before it is trusted, it is compared with
//! that alpha-beta, searching to the end of the game, on late positions.

use meeple_game::{Budget, Game, State, rng_from_seed};
use meeple_games::Connect4;
use meeple_games::connect4::Connect4State;
use meeple_search::{AlphaBeta, AlphaBetaConfig};
use rand::RngExt;

const W: u32 = 7;
const ROWS: u32 = 6;
/// Bits a column: one above the top row keeps shifts from wrapping into the next column.
const H: u32 = ROWS + 1;
const BOTTOM: u64 = {
    let mut b = 0;
    let mut c = 0;
    while c < W {
        b |= 1 << (c * H);
        c += 1;
    }
    b
};
const BOARD: u64 = BOTTOM * ((1 << ROWS) - 1);
/// Centre columns first: they take part in more lines.
const ORDER: [u32; 7] = [3, 2, 4, 1, 5, 0, 6];

/// The empty cells that would complete four for the discs `own`.
fn threats(own: u64, mask: u64) -> u64 {
    let mut r = (own << 1) & (own << 2) & (own << 3);
    for d in [H, H - 1, H + 1] {
        let p = (own << d) & (own << (2 * d));
        r |= p & (own << (3 * d));
        r |= p & (own >> d);
        let p = (own >> d) & (own >> (2 * d));
        r |= p & (own << d);
        r |= p & (own >> (3 * d));
    }
    r & (BOARD ^ mask)
}

fn column(c: u32) -> u64 {
    ((1u64 << ROWS) - 1) << (c * H)
}

/// Exact win/draw/loss values of standard 7x6 connect four positions.
struct Solver {
    /// (position key, value + 2 in the low bits, bound kind above)
    table: Vec<(u64, u8)>,
    nodes: u64,
}

const EXACT: u8 = 0;
const LOWER: u8 = 4;
const UPPER: u8 = 8;

impl Solver {
    fn new(log2: u32) -> Self {
        Self { table: vec![(0, 0); 1 << log2], nodes: 0 }
    }

    /// The value for the player to move (1 won, 0 drawn, -1 lost under best play) of a position
    /// with the mover's discs `own` and all discs `mask`, no four on the board.
    fn value(&mut self, own: u64, mask: u64) -> i8 {
        self.search(own, mask, -1, 1)
    }

    fn search(&mut self, own: u64, mask: u64, mut alpha: i8, mut beta: i8) -> i8 {
        self.nodes += 1;
        let playable = (mask + BOTTOM) & BOARD;
        if playable == 0 {
            return 0;
        }
        if threats(own, mask) & playable != 0 {
            return 1;
        }
        let theirs = threats(own ^ mask, mask);
        let forced = playable & theirs;
        // Two of their wins open at once: one can be blocked, not both.
        if forced.count_ones() > 1 {
            return -1;
        }
        let candidates = if forced != 0 { forced } else { playable };
        // Never play just below a cell where they would win.
        let safe = candidates & !(theirs >> 1);
        if safe == 0 {
            return -1;
        }
        let key = own + mask + BOTTOM;
        let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.table.len().trailing_zeros())) as usize;
        let (k, e) = self.table[slot];
        if k == key {
            let v = (e & 3) as i8 - 2;
            match e & 12 {
                EXACT => return v,
                LOWER => alpha = alpha.max(v),
                _ => beta = beta.min(v),
            }
            if alpha >= beta {
                return v;
            }
        }
        let alpha0 = alpha;
        // Moves that open most new threats first, centre first among equals.
        let mut moves = [(0u32, 0u64); 7];
        let mut n = 0;
        for c in ORDER {
            let m = safe & column(c);
            if m != 0 {
                let score = threats(own | m, mask);
                moves[n] = (score.count_ones(), m);
                let mut i = n;
                while i > 0 && moves[i - 1].0 < moves[i].0 {
                    moves.swap(i - 1, i);
                    i -= 1;
                }
                n += 1;
            }
        }
        let mut best = -1;
        for &(_, m) in &moves[..n] {
            let v = -self.search(own ^ mask, mask | m, -beta, -alpha);
            if v > best {
                best = v;
                if v > alpha {
                    alpha = v;
                }
                if alpha >= beta {
                    break;
                }
            }
        }
        let kind = if best <= alpha0 {
            UPPER
        } else if best >= beta {
            LOWER
        } else {
            EXACT
        };
        self.table[slot] = (key, (best + 2) as u8 | kind);
        best
    }
}

/// The mover's discs and all discs of `state`.
fn bitboards(state: &Connect4State) -> (u64, u64) {
    let mover = state.current_player().expect("a player to move");
    let (mut own, mut mask) = (0, 0);
    for c in 0..W {
        for r in 0..ROWS {
            if let Some(p) = state.cell(r, c) {
                let bit = 1u64 << (c * H + r);
                mask |= bit;
                if p == mover {
                    own |= bit;
                }
            }
        }
    }
    (own, mask)
}

/// The value for the player who moved into `state` of each move from it: minus the value of the
/// position the move leaves for the opponent.
fn move_values(
    solver: &mut Solver,
    state: &Connect4State,
    legal: &[meeple_game::Action],
) -> Vec<(meeple_game::Action, i8)> {
    let mover = state.current_player().expect("a player to move");
    legal
        .iter()
        .map(|&a| {
            let mut child = *state;
            child.apply_unchecked(a);
            let v = match child.returns() {
                Some(r) => (r[mover] * 2.0 - 1.0).round() as i8,
                None => {
                    let (own, mask) = bitboards(&child);
                    -solver.value(own, mask)
                }
            };
            (a, v)
        })
        .collect()
}

/// The value of `state` for its mover by the generic alpha-beta searching to the end of the game.
fn value_by_alphabeta(game: &Connect4, state: &Connect4State, plies: usize) -> i8 {
    let left = 42 - plies as u32;
    let spec: meeple_game::Spec =
        format!("alphabeta:depth={left},tt=64mb,lmr=false,lmp=false").parse().expect("a spec");
    let mut ab = AlphaBeta::new(game, AlphaBetaConfig::from_spec(&spec).expect("a config"), 0).expect("alpha-beta");
    meeple_game::Agent::act(&mut ab, state, &Budget::default()).expect("a move");
    let v = ab.report().value;
    // alpha-beta's value of a forced win (its WIN less the plies to it) is above this
    const WON: f64 = 500_000.0;
    if v > WON {
        1
    } else if v < -WON {
        -1
    } else {
        0
    }
}

/// A position `target` random moves in, or `None` where the game ended before.
fn random_position(game: &Connect4, rng: &mut impl rand::Rng, target: usize) -> Option<Connect4State> {
    random_line(game, rng, target).map(|(state, _)| state)
}

/// [`random_position`] and its moves as columns 1-7 from the start (the `--file` format).
fn random_line(game: &Connect4, rng: &mut impl rand::Rng, target: usize) -> Option<(Connect4State, String)> {
    let mut legal = Vec::new();
    let mut state = game.initial_state();
    let mut moves = String::new();
    for _ in 0..target {
        if state.returns().is_some() {
            return None;
        }
        state.legal_actions(&mut legal);
        let a = legal[rng.random_range(0..legal.len())];
        moves.push_str(&(a + 1).to_string());
        state.apply_unchecked(a);
    }
    state.returns().is_none().then_some((state, moves))
}

/// Agents' moves judged against the solver's values.
struct Judge {
    solver: Solver,
    agents: Vec<(String, Box<dyn meeple_game::Agent<Connect4State>>, usize)>,
    informative: usize,
    /// Positions lost, drawn and won for the mover under best play.
    by_value: [usize; 3],
    legal: Vec<meeple_game::Action>,
    /// Print each move that loses value, with the position (`MISSES=1` in the environment).
    show_misses: bool,
}

impl Judge {
    /// Solves every move of `state` and asks each agent for its move (nothing asked or counted
    /// where every move has the same value). Returns the position's value for its mover.
    fn judge(&mut self, state: &Connect4State, moves: &str) -> i8 {
        state.legal_actions(&mut self.legal);
        let values = move_values(&mut self.solver, state, &self.legal);
        let best = values.iter().map(|v| v.1).max().expect("moves");
        if values.iter().all(|v| v.1 == best) {
            return best;
        }
        self.informative += 1;
        self.by_value[(best + 1) as usize] += 1;
        for (spec, agent, perfect) in self.agents.iter_mut() {
            let a = agent.act(state, &Budget::default()).expect("a move");
            if values.iter().any(|&(m, v)| m == a && v == best) {
                *perfect += 1;
            } else if self.show_misses {
                let values: Vec<String> = values.iter().map(|(m, v)| format!("{m:?}: {v:+}")).collect();
                eprintln!("{spec} played {a:?} in '{moves}' (each move's value: {})\n{state}", values.join(", "));
            }
        }
        best
    }

    fn report(&self, what: &str, seconds: f64) {
        println!(
            "{} positions {what} (mover wins {}, draws {}, loses {} under best play), {} solver nodes, {seconds:.0} s:",
            self.informative, self.by_value[2], self.by_value[1], self.by_value[0], self.solver.nodes,
        );
        for (spec, _, perfect) in &self.agents {
            println!("  {:>5.1}%  {spec}", 100.0 * *perfect as f64 / self.informative.max(1) as f64);
        }
    }
}

const USAGE: &str = "usage: connect4_solved POSITIONS SEED MIN_PLY MAX_PLY AGENT...\n   or: connect4_solved --file FILE AGENT...   (lines 'MOVES [SCORE]': columns 1-7 from the start, e.g. '4453', and optionally a score whose sign is the mover's result)\n   MISSES=1 in the environment prints every move that loses value, with its position";

fn fail(why: &str) -> ! {
    eprintln!("connect4_solved: {why}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let from_file = args.first().is_some_and(|a| a == "--file");
    if (from_file && args.len() < 3) || (!from_file && args.len() < 5) {
        fail("too few arguments");
    }
    let game = Connect4::default();
    let seed: u64 = if from_file { 0 } else { args[1].parse().unwrap_or_else(|_| fail("SEED: a number")) };
    let mut rng = rng_from_seed(seed);
    let mut solver = Solver::new(24);

    let agent_specs = &args[if from_file { 2 } else { 4 }..];
    let agents = agent_specs
        .iter()
        .map(|s| {
            let agent = meeple_learn::make_agent(&game, s, seed).unwrap_or_else(|e| fail(&format!("agent '{s}': {e}")));
            (s.clone(), agent, 0usize)
        })
        .collect();

    // The solver against the generic alpha-beta on 40 late positions, every move.
    let (mut checked, mut legal) = (0, Vec::new());
    while checked < 40 {
        let plies = rng.random_range(26..=32);
        let Some(state) = random_position(&game, &mut rng, plies) else { continue };
        let own_value = {
            let (own, mask) = bitboards(&state);
            solver.value(own, mask)
        };
        let reference = value_by_alphabeta(&game, &state, plies);
        assert_eq!(own_value, reference, "the solver disagrees with alpha-beta on\n{state}");
        state.legal_actions(&mut legal);
        let best = move_values(&mut solver, &state, &legal).iter().map(|v| v.1).max().expect("moves");
        assert_eq!(best, reference, "the best move's value is not the position's value on\n{state}");
        checked += 1;
    }
    eprintln!("solver agrees with alpha-beta on {checked} positions 26..=32 plies in");

    let show_misses = std::env::var_os("MISSES").is_some_and(|v| v == "1");
    let mut judge = Judge { solver, agents, informative: 0, by_value: [0; 3], legal, show_misses };
    let start = std::time::Instant::now();
    if from_file {
        let path = &args[1];
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("cannot read '{path}': {e}")));
        let (mut scored, mut disagree) = (0, 0);
        for (number, line) in text.lines().enumerate() {
            let mut words = line.split_whitespace();
            let Some(moves) = words.next() else { continue };
            let bad = |why: String| -> ! { fail(&format!("'{path}' line {}: {why}", number + 1)) };
            let state = game.initial_state().play_columns(moves).unwrap_or_else(|e| bad(e.to_string()));
            if state.returns().is_some() {
                bad("the game is over".into());
            }
            let score: Option<i32> =
                words.next().map(|w| w.parse().unwrap_or_else(|_| bad(format!("score '{w}' is not an integer"))));
            let value = judge.judge(&state, moves);
            if let Some(score) = score {
                scored += 1;
                if score.signum() as i8 != value {
                    disagree += 1;
                    eprintln!(
                        "line {}: the file's score {score} but the solver's value {value} for '{moves}'",
                        number + 1
                    );
                }
            }
        }
        if scored > 0 {
            eprintln!(
                "the solver's value has the sign of the file's score in {} of {scored} positions",
                scored - disagree
            );
        }
        judge.report(&format!("from {path}"), start.elapsed().as_secs_f64());
    } else {
        let n: usize = args[0].parse().unwrap_or_else(|_| fail("POSITIONS: a count"));
        let lo: usize = args[2].parse().unwrap_or_else(|_| fail("MIN_PLY: a number"));
        let hi: usize = args[3].parse().unwrap_or_else(|_| fail("MAX_PLY: a number"));
        if lo > hi || hi >= 42 {
            fail("MIN_PLY <= MAX_PLY < 42");
        }
        while judge.informative < n {
            let target = rng.random_range(lo..=hi);
            if let Some((state, moves)) = random_line(&game, &mut rng, target) {
                judge.judge(&state, &moves);
            }
        }
        judge.report(&format!("{lo}..={hi} plies in (seed {seed})"), start.elapsed().as_secs_f64());
    }
}
