use crate::human::{Prompt, Request};
use anyhow::{Result, bail};
use clap::Args;
use meeple_arena::{SPECTATOR, Table};
use meeple_game::{BoxedAgent, Budget, DURATION_LIMIT, Game, State, Turn, derive_seed, parse_duration};
use meeple_games::with_game;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Game spec, e.g. `connect4` or `tictactoe`.
    game: String,
    /// One agent spec per seat, first player first; `human` is you.
    #[arg(required = true, num_args = 1..)]
    agents: Vec<String>,
    /// Seed for chance events and the agents' random choices.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    clock: MoveClock,
    /// The agent that answers `hint` at the prompt (it sees only what your seat sees).
    #[arg(long, value_name = "SPEC", default_value = "mcts:time=1s")]
    hint: String,
}

/// The time control that `play` and `arena` give every move.
#[derive(Args, Debug)]
pub struct MoveClock {
    /// Time limit for each agent move, e.g. `300ms` or `2s`.
    #[arg(long, value_parser = duration_arg)]
    move_time: Option<Duration>,
    /// Stop each timed search this long before its time is up, in reserve for delays the agent
    /// cannot control (the machine descheduling it); default 5% of the time, at most 15 ms.
    #[arg(long, value_parser = duration_arg)]
    move_overhead: Option<Duration>,
}

impl MoveClock {
    pub fn budget(&self) -> Budget {
        Budget { time: self.move_time, overhead: self.move_overhead, ..Budget::UNLIMITED }
    }
}

pub fn duration_arg(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Some(d) if d <= meeple_game::limits::MAX_MOVE_TIME => Ok(d),
        Some(_) => Err(format!("'{text}' is longer than the limit of {DURATION_LIMIT}")),
        None => Err(format!("'{text}' is not a duration; use e.g. 300ms, 2s, 1.5s, 1m or 1h")),
    }
}

pub fn run(args: &PlayArgs) -> Result<()> {
    with_game!(args.game.as_str(), |game| play(&game, args))?
}

/// A seat at the table: an agent, or the person at the terminal.
enum Seat<S: State> {
    Agent(BoxedAgent<S>),
    Human,
}

fn play<G: Game>(game: &G, args: &PlayArgs) -> Result<()> {
    if args.agents.len() != game.num_players() {
        bail!("{} needs {} agents (one per seat), got {}", game.spec(), game.num_players(), args.agents.len());
    }
    let mut seats: Vec<Seat<G::State>> = Vec::new();
    for (seat, spec) in args.agents.iter().enumerate() {
        if spec.trim() == "human" {
            seats.push(Seat::Human);
        } else {
            seats.push(Seat::Agent(meeple_learn::make_agent(game, spec, meeple_game::seat_seed(args.seed, seat))?));
        }
    }
    let human_seat = seats.iter().position(|s| matches!(s, Seat::Human));
    // Built up front so a bad --hint spec fails before the game starts.
    let mut hint = match human_seat {
        Some(_) => Some(meeple_learn::make_agent(game, &args.hint, derive_seed(args.seed, 1 << 40))?),
        None => None,
    };
    let mut prompt = Prompt::terminal();
    let budget = args.clock.budget();
    // The web's table: each chance event is drawn from the seed and the ply it happens at, so
    // taking moves back and making them again meets the same dice and cards; undo follows the
    // same rules (not past chance, nor past other players' answers to an offer).
    let mut table = Table::new(game.clone(), args.seed);
    let persons: Vec<bool> = seats.iter().map(|s| matches!(s, Seat::Human)).collect();
    // Others' moves and chance are told as a person's seat sees them (no other player's secret card).
    let onlooker = human_seat.unwrap_or(SPECTATOR);
    // Whether the person has seen the position they are asked about (after a hint, they have).
    let mut shown = false;
    println!(
        "{} — {}",
        game.spec(),
        args.agents.iter().enumerate().map(|(i, a)| format!("player {i}: {a}")).collect::<Vec<_>>().join(", ")
    );
    loop {
        match table.latest().turn() {
            Turn::Terminal => break,
            Turn::Chance => {
                let from = table.ply();
                table.resolve_chance();
                for m in table.line(from, table.ply(), onlooker) {
                    println!("chance: {}", m.in_words());
                }
            }
            Turn::Player(seat) => match &mut seats[seat] {
                Seat::Human => {
                    let state = table.latest();
                    if !shown && let Some(asked) = state.prompt() {
                        println!("{asked}");
                    }
                    let undo = table.undo_target(|p| persons[p]);
                    let request =
                        prompt.ask(state, seat, undo.as_ref().map(|_| ()).map_err(|why| why.as_str()), shown)?;
                    shown = matches!(request, Some(Request::Hint));
                    match request {
                        None => bail!("input ended before player {seat} moved"),
                        Some(Request::Quit) => {
                            println!("game stopped after {} moves", moves(&table));
                            return Ok(());
                        }
                        Some(Request::Hint) => {
                            let agent = hint.as_mut().expect("a hint agent for human seats");
                            let start = Instant::now();
                            let a = agent.act(state, &budget)?;
                            prompt.say(&format!(
                                "hint ({}): {} [{:.0} ms]",
                                args.hint,
                                state.action_to_string(a),
                                start.elapsed().as_secs_f64() * 1e3
                            ))?;
                        }
                        Some(Request::Undo) => {
                            let (back, _) = undo.expect("undo is offered only where it can be taken");
                            prompt.say(&format!("took back {} moves", table.ply() - back))?;
                            table.truncate(back);
                        }
                        Some(Request::Move(a)) => {
                            table.push(a, None)?;
                            println!("player {seat} (human) plays {}", last_move(&table, seat));
                        }
                    }
                }
                Seat::Agent(agent) => {
                    if human_seat.is_none() {
                        println!("\n{}", table.latest());
                    }
                    let start = Instant::now();
                    let a = agent.act(table.latest(), &budget)?;
                    let ms = start.elapsed().as_secs_f64() * 1e3;
                    table
                        .push(a, Some(ms as f32))
                        .map_err(|e| anyhow::anyhow!("agent {} (player {seat}): {e}", args.agents[seat]))?;
                    println!(
                        "player {seat} ({}) plays {} [{ms:.1} ms]",
                        args.agents[seat],
                        last_move(&table, onlooker)
                    );
                }
            },
        }
    }
    let state = table.latest();
    println!("\n{state}\n");
    let returns = state.returns().expect("terminal states have returns");
    let best = returns.iter().cloned().fold(f64::MIN, f64::max);
    let winners: Vec<usize> = (0..returns.len()).filter(|&p| returns[p] == best).collect();
    if winners.len() == 1 {
        println!("player {} ({}) wins; returns {:?}", winners[0], args.agents[winners[0]], returns.as_slice());
    } else {
        println!("draw between players {winners:?}; returns {:?}", returns.as_slice());
    }
    Ok(())
}

/// The table's last move in words as `viewer` may know it.
fn last_move<G: Game>(table: &Table<G>, viewer: usize) -> String {
    let ply = table.ply();
    table.line(ply - 1, ply, viewer).pop().map(|m| m.in_words()).unwrap_or_default()
}

/// Moves made by the seats (chance events aside).
fn moves<G: Game>(table: &Table<G>) -> usize {
    (0..table.ply()).filter(|&k| table.mover(k).is_some()).count()
}
