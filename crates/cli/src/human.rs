//! The terminal player: shows the board, reads moves in the game's notation, explains mistakes,
//! and takes the commands a person at the table needs (moves, hint, undo, the game's own
//! views, quit).

use meeple_game::{Action, AgentInfo, Player, State};
use std::io::Write;

/// Reads one line as bytes into the buffer, returning the bytes read (0 at end of input).
pub type LineReader = Box<dyn FnMut(&mut Vec<u8>) -> std::io::Result<usize> + Send>;

pub const HUMAN_INFO: AgentInfo = AgentInfo {
    name: "human",
    about: "you, at the terminal (meeple play only): type moves in the game's notation, or help",
    params: &[],
};

/// What the person at the terminal asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Play this legal action.
    Move(Action),
    /// Take back the last move made at this terminal (and the replies to it).
    Undo,
    /// Ask the hint agent for a move.
    Hint,
    /// Stop the game.
    Quit,
}

/// Reads requests from a line source; asks again on anything that is not a legal move or a
/// command.
pub struct Prompt<W: Write> {
    input: LineReader,
    output: W,
}

impl Prompt<std::io::Stdout> {
    /// The person at this terminal. Reads through stdin's shared buffer, so two human seats
    /// (hot-seat play) never steal each other's lines.
    pub fn terminal() -> Self {
        Prompt::new(
            Box::new(|buf| {
                use std::io::BufRead;
                std::io::stdin().lock().read_until(b'\n', buf)
            }),
            std::io::stdout(),
        )
    }
}

impl<W: Write> Prompt<W> {
    pub fn new(input: LineReader, output: W) -> Self {
        Prompt { input, output }
    }

    /// A prompt reading from any buffered source.
    #[cfg(test)]
    pub fn from_reader(mut reader: impl std::io::BufRead + Send + 'static, output: W) -> Self {
        Prompt::new(Box::new(move |buf| reader.read_until(b'\n', buf)), output)
    }

    /// Writes a line to the person.
    pub fn say(&mut self, text: &str) -> std::io::Result<()> {
        writeln!(self.output, "{text}")
    }

    /// Shows `player`'s view of `state` (unless `shown` already) and reads until the person
    /// gives a legal move or a command. `undo`: whether an undo can be taken, or why not.
    /// `None` when the input ends.
    pub fn ask<S: State>(
        &mut self,
        state: &S,
        player: Player,
        undo: Result<(), &str>,
        shown: bool,
    ) -> std::io::Result<Option<Request>> {
        let mut legal = Vec::new();
        state.legal_actions(&mut legal);
        if !shown {
            self.say(&format!("\n{}\n", state.observation_string(player)))?;
        }
        loop {
            write!(self.output, "player {player}, your move ('help' lists commands): ")?;
            self.output.flush()?;
            let mut bytes = Vec::new();
            if (self.input)(&mut bytes)? == 0 {
                return Ok(None);
            }
            let Ok(line) = std::str::from_utf8(&bytes) else {
                self.say("that line was not text (UTF-8); type a move, or help")?;
                continue;
            };
            let text = line.trim();
            match text {
                "" => continue,
                "quit" | "exit" => return Ok(Some(Request::Quit)),
                "hint" => return Ok(Some(Request::Hint)),
                "undo" => match undo {
                    Ok(()) => return Ok(Some(Request::Undo)),
                    Err(why) => {
                        self.say(&format!("cannot undo: {why}"))?;
                        continue;
                    }
                },
                "moves" | "?" => {
                    let moves: Vec<String> = legal.iter().map(|&a| state.action_to_string(a)).collect();
                    self.say(&format!("legal moves ({}): {}", moves.len(), moves.join(" ")))?;
                    continue;
                }
                "board" => {
                    self.say(&format!("\n{}\n", state.observation_string(player)))?;
                    continue;
                }
                "help" => {
                    self.say(&help(state))?;
                    continue;
                }
                _ => {}
            }
            if let Some(view) = state.text_view(player, text) {
                self.say(&view)?;
                continue;
            }
            match state.parse_action(text) {
                Ok(a) if legal.contains(&a) => {
                    if let Some(picture) = state.preview(a) {
                        self.say(&picture)?;
                        write!(self.output, "play {}? [Y/n] ", state.action_to_string(a))?;
                        self.output.flush()?;
                        let mut answer = Vec::new();
                        if (self.input)(&mut answer)? == 0 {
                            return Ok(None);
                        }
                        let answer = String::from_utf8_lossy(&answer).trim().to_ascii_lowercase();
                        if !(answer.is_empty() || answer == "y" || answer == "yes") {
                            self.say("not played; type another move")?;
                            continue;
                        }
                    }
                    return Ok(Some(Request::Move(a)));
                }
                Ok(a) => self.say(&format!("not legal here: {}", state.illegal_reason(a)))?,
                Err(e) => self.say(&format!("{e} (help lists the commands)"))?,
            }
        }
    }
}

/// The commands at the prompt, the game's views among them.
fn help<S: State>(state: &S) -> String {
    let mut lines = vec![
        "a move in the game's notation plays it".to_string(),
        "  moves   list the legal moves".into(),
        "  board   show the board again".into(),
        "  hint    ask the hint agent (--hint) for a move".into(),
        "  undo    take back your last move and the replies to it".into(),
        "  quit    stop the game".into(),
    ];
    for (name, what) in state.text_views() {
        lines.push(format!("  {name:<7} {what}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::Game;
    use meeple_games::Connect4;
    use meeple_games::cathedral::Cathedral;

    fn ask<S: State>(state: &S, input: &'static [u8]) -> (Option<Request>, String) {
        let mut out = Vec::new();
        let request = Prompt::from_reader(input, &mut out).ask(state, 0, Ok(()), false).unwrap();
        (request, String::from_utf8(out).unwrap())
    }

    #[test]
    fn asks_again_until_a_legal_move() {
        let state = Connect4::default().initial_state().play_columns("444444").unwrap();
        let (request, shown) = ask(&state, b"\nnine\n4\nmoves\n9\n5\n");
        assert_eq!(request, Some(Request::Move(4)));
        assert!(shown.contains("cannot read move 'nine': a move is a column number 1-7"), "{shown}");
        assert!(shown.contains("not legal here: column 4 is full"), "{shown}");
        assert!(shown.contains("legal moves (6): 1 2 3 5 6 7"), "{shown}");
        assert!(shown.contains("cannot read move '9'"), "{shown}");
    }

    #[test]
    fn commands_and_bad_bytes() {
        let state = Connect4::default().initial_state();
        assert_eq!(ask(&state, b"quit\n").0, Some(Request::Quit));
        assert_eq!(ask(&state, b"hint\n").0, Some(Request::Hint));
        assert_eq!(ask(&state, b"undo\n").0, Some(Request::Undo));
        // A line that is not UTF-8 is refused and the prompt asks again.
        let (request, shown) = ask(&state, b"\xff\xfe\n3\n");
        assert_eq!(request, Some(Request::Move(2)));
        assert!(shown.contains("that line was not text (UTF-8)"), "{shown}");
        let (request, shown) = ask(&state, b"help\n");
        assert_eq!(request, None, "input ended");
        assert!(shown.contains("hint    ask the hint agent"), "{shown}");
    }

    #[test]
    fn game_views_and_previews() {
        let state = Cathedral::default().initial_state();
        // The cathedral first: its preview asks before playing; 'n' cancels.
        let (request, shown) = ask(&state, b"pieces\ncathedral@d4\nn\ncathedral@d4\n\n");
        assert!(shown.contains("cathedral"), "{shown}");
        assert!(shown.contains("play cathedral@d4? [Y/n]"), "{shown}");
        assert!(shown.contains("not played"), "{shown}");
        assert_eq!(request.map(|r| matches!(r, Request::Move(_))), Some(true));
    }
}
