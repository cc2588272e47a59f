use anyhow::{Result, anyhow};
use clap::Args;
use meeple_arena::records::{self, Entry, ReadOptions};
use meeple_game::limits;
use meeple_game::{Game, GameRecord, State, Turn, replay};
use meeple_games::with_game;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A records file (JSON lines) from `meeple arena --records`, or plain game records.
    file: PathBuf,
    /// Which game: its index in the match (the `index` field), or its line number from 0 for
    /// plain records.
    #[arg(long, default_value_t = 0)]
    game: usize,
    /// Print every position at once instead of stepping (the default when input is not a
    /// terminal).
    #[arg(long)]
    all: bool,
}

/// One game to show, with what the arena knew about each move.
struct Shown {
    record: GameRecord,
    /// Milliseconds per agent move, when the arena measured them.
    move_ms: Option<Vec<f64>>,
    /// Player moves of the random opening before the agents took over, when known.
    opening: Option<usize>,
}

fn load(args: &ReplayArgs) -> Result<Shown> {
    let options = ReadOptions { plain: true, max_games: limits::MAX_GAMES, allow_cut_last_line: false };
    let (mut line, mut found) = (0, None);
    // Arena records are found by their index in the match, plain ones by their line.
    let read = records::visit(&args.file, options, &mut |entry| {
        found = found.take().or(match entry {
            Entry::Played(g) if g.index == args.game => Some(Shown {
                opening: g.settings.as_ref().map(|s| s.opening_plies),
                move_ms: Some(g.move_ms),
                record: g.record,
            }),
            Entry::Plain(r) if line == args.game => Some(Shown { record: r, move_ms: None, opening: Some(0) }),
            _ => None,
        });
        line += 1;
    })?;
    found.ok_or_else(|| {
        anyhow!("records file '{}' has no game {} ({} games in it)", args.file.display(), args.game, read.games)
    })
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    let shown = load(args)?;
    let spec = shown.record.game.clone();
    with_game!(spec.as_str(), |game| show(&game, &shown, args))?
}

fn show<G: Game>(game: &G, shown: &Shown, args: &ReplayArgs) -> Result<()> {
    let r = &shown.record;
    let states = replay(game, r).map_err(|e| anyhow!("game {} does not replay: {e}", args.game))?;
    // Agents' moves are the last player moves; any before them were a random opening (older
    // arena records carry no settings: their opening is what the move times do not cover).
    let player_plies = states[..states.len() - 1].iter().filter(|s| matches!(s.turn(), Turn::Player(_))).count();
    let opening =
        shown.opening.or_else(|| shown.move_ms.as_ref().map(|t| player_plies.saturating_sub(t.len()))).unwrap_or(0);
    let mut info = Vec::new();
    let mut k = 0;
    for (ply, s) in states[..states.len() - 1].iter().enumerate() {
        let text = &r.actions[ply];
        info.push(match s.turn() {
            Turn::Chance => format!("chance: {text}"),
            Turn::Player(p) => {
                let who = r.agents.get(p).map_or("?", |a| a.as_str());
                let line = if k < opening {
                    format!("player {p} ({who}) played {text} [random opening]")
                } else {
                    match shown.move_ms.as_ref().and_then(|t| t.get(k - opening)) {
                        Some(ms) => format!("player {p} ({who}) played {text} in {ms:.3} ms"),
                        None => format!("player {p} ({who}) played {text}"),
                    }
                };
                k += 1;
                line
            }
            Turn::Terminal => String::new(),
        });
    }
    let header = format!(
        "game {} of {}: {}, seed {}, {}",
        args.game,
        args.file.display(),
        r.game,
        r.seed,
        r.agents.iter().enumerate().map(|(i, a)| format!("player {i}: {a}")).collect::<Vec<_>>().join(", ")
    );
    let result = match &r.returns {
        Some(ret) => format!("result: returns {ret:?}"),
        None => "result: unfinished".to_string(),
    };
    let n = states.len() - 1;
    let frame = |at: usize| {
        let last = if at == 0 { "start".to_string() } else { info[at - 1].clone() };
        let end = if at == n { format!("\n{result}") } else { String::new() };
        format!("{header}\nply {at}/{n}: {last}\n\n{}\n{end}", states[at])
    };
    if args.all || !std::io::stdin().is_terminal() {
        for at in 0..=n {
            println!("{}\n", frame(at));
        }
        return Ok(());
    }
    let mut at = 0;
    let stdin = std::io::stdin();
    loop {
        println!("\n{}", frame(at));
        print!("[enter/n] next  [b] back  [j N] jump  [s] start  [e] end  [q] quit: ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(());
        }
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] | ["n"] => at = (at + 1).min(n),
            ["b"] => at = at.saturating_sub(1),
            ["s"] => at = 0,
            ["e"] => at = n,
            ["q"] => return Ok(()),
            ["j", x] => match x.parse::<usize>() {
                Ok(p) if p <= n => at = p,
                _ => println!("jump to a ply from 0 to {n}"),
            },
            _ => println!("commands: enter or n, b, j N, s, e, q"),
        }
    }
}
