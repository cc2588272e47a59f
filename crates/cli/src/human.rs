//! The terminal player: shows the board, reads moves in the game's notation, explains mistakes.

use meeple_game::{Action, Agent, AgentInfo, Budget, Error, State};
use std::io::Write;

/// Reads one line into the buffer, returning the bytes read (0 at end of input).
pub type LineReader = Box<dyn FnMut(&mut String) -> std::io::Result<usize> + Send>;

pub const HUMAN_INFO: AgentInfo = AgentInfo {
    name: "human",
    about: "you, at the terminal (meeple play only): type moves in the game's notation",
    params: &[],
};

/// Reads moves from a line source; re-prompts on anything that is not a legal move.
pub struct HumanAgent<W: Write + Send> {
    input: LineReader,
    output: W,
}

impl HumanAgent<std::io::Stdout> {
    /// A player at this terminal. Reads through stdin's shared buffer, so two human seats
    /// (hot-seat play) never steal each other's lines.
    pub fn terminal() -> Self {
        HumanAgent::new(Box::new(|buf| std::io::stdin().read_line(buf)), std::io::stdout())
    }
}

impl<W: Write + Send> HumanAgent<W> {
    pub fn new(input: LineReader, output: W) -> Self {
        HumanAgent { input, output }
    }

    /// A player reading from any buffered source.
    #[cfg(test)]
    pub fn from_reader(mut reader: impl std::io::BufRead + Send + 'static, output: W) -> Self {
        HumanAgent::new(Box::new(move |buf| reader.read_line(buf)), output)
    }

    fn say(&mut self, text: &str) -> Result<(), Error> {
        writeln!(self.output, "{text}").map_err(|e| io_error(&e))
    }
}

fn io_error(e: &std::io::Error) -> Error {
    Error::Agent { agent: "human".into(), reason: format!("terminal: {e}") }
}

impl<S: State, W: Write + Send> Agent<S> for HumanAgent<W> {
    fn spec(&self) -> String {
        "human".into()
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        let mut legal = Vec::new();
        state.legal_actions(&mut legal);
        let moves: Vec<String> = legal.iter().map(|&a| state.action_to_string(a)).collect();
        let player = state.current_player().unwrap_or_default();
        self.say(&format!("\n{}\n", state.observation_string(player)))?;
        loop {
            write!(self.output, "player {player}, your move ('moves' lists them, 'quit' stops): ")
                .and_then(|_| self.output.flush())
                .map_err(|e| io_error(&e))?;
            let mut line = String::new();
            if (self.input)(&mut line).map_err(|e| io_error(&e))? == 0 {
                return Err(Error::Agent { agent: "human".into(), reason: "input closed before a move".into() });
            }
            let text = line.trim();
            match text {
                "" => continue,
                "quit" | "exit" => {
                    return Err(Error::Agent { agent: "human".into(), reason: "quit the game".into() });
                }
                "moves" | "?" | "help" => {
                    self.say(&format!("legal moves: {}", moves.join(" ")))?;
                    continue;
                }
                _ => {}
            }
            match state.parse_action(text) {
                Ok(a) if legal.contains(&a) => return Ok(a),
                Ok(a) => self.say(&format!("not legal here: {}", state.illegal_reason(a)))?,
                Err(e) => self.say(&format!("{e}"))?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::Game;
    use meeple_games::Connect4;

    #[test]
    fn reprompts_until_a_legal_move() {
        let game = Connect4::default();
        let state = game.initial_state().play_columns("444444").unwrap();
        let input = b"\nnine\n4\nmoves\n9\n5\n".as_slice();
        let mut out = Vec::new();
        let mut human = HumanAgent::from_reader(input, &mut out);
        assert_eq!(
            Agent::<meeple_games::connect4::Connect4State>::act(&mut human, &state, &Budget::UNLIMITED).unwrap(),
            4
        );
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("cannot read move 'nine': a move is a column number 1-7"), "{shown}");
        assert!(shown.contains("not legal here: column 4 is full"), "{shown}");
        assert!(shown.contains("legal moves: 1 2 3 5 6 7"), "{shown}");
        assert!(shown.contains("cannot read move '9'"), "{shown}");
    }

    #[test]
    fn closed_input_is_an_error_not_a_hang() {
        let game = Connect4::default();
        let mut human = HumanAgent::from_reader(b"".as_slice(), Vec::new());
        let err =
            Agent::<meeple_games::connect4::Connect4State>::act(&mut human, &game.initial_state(), &Budget::UNLIMITED)
                .unwrap_err();
        assert!(err.to_string().contains("input closed"), "{err}");
    }
}
