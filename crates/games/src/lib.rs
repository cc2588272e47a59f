//! meeple's game engines, and the registry that builds a game from its spec string.

pub mod catan;
pub mod cathedral;
pub mod connect4;
pub mod sagrada;
pub mod santorini;
pub mod tictactoe;

pub use catan::Catan;
pub use cathedral::Cathedral;
pub use connect4::Connect4;
pub use sagrada::Sagrada;
pub use santorini::Santorini;
pub use tictactoe::TicTacToe;

use meeple_game::{Error, Game, GameInfo, ParamInfo, Spec};

/// A linear evaluator's `weights=` option (declared in `params`): `N` numbers inline, or a file
/// of them (the RootStrap/TreeStrap trainers write one); `default` where it is not given.
pub(crate) fn weights_from<const N: usize>(
    spec: &Spec,
    subject: &str,
    params: &'static [ParamInfo],
    default: [f64; N],
) -> Result<[f64; N], Error> {
    let o = spec.options(subject, params)?;
    let given: String = o.get("weights")?;
    if given.is_empty() {
        return Ok(default);
    }
    match meeple_game::access::numbers(&given)? {
        Some(v) if v.len() == N && v.iter().all(|x| x.is_finite()) => Ok(v.try_into().expect("length checked")),
        _ => Err(Error::BadValue {
            subject: subject.to_string(),
            key: "weights".into(),
            value: given,
            expected: format!(
                "{N} comma-separated numbers (or a file of them), e.g. weights=({})",
                default.map(|x| x.to_string()).join(",")
            ),
        }),
    }
}

/// Every registered game, in the order `meeple games` lists them.
pub const GAMES: &[GameInfo] =
    &[TicTacToe::INFO, Connect4::INFO, Santorini::INFO, Cathedral::INFO, Sagrada::INFO, Catan::INFO];

/// The error for a game name nobody registered.
pub fn unknown_game(name: &str) -> Error {
    Error::UnknownName {
        kind: "game",
        name: name.to_string(),
        accepted: GAMES.iter().map(|g| g.name).collect::<Vec<_>>().join(", "),
    }
}

/// Builds the game named by a spec string and runs `$body` with it bound to `$game`, compiled
/// once per game type, so the body runs at full speed with no dynamic dispatch. Evaluates to
/// `Result<T, meeple_game::Error>` where the body gives `T`; errors of the spec come first.
///
/// ```
/// let players = meeple_games::with_game!("connect4:rows=5", |game| {
///     use meeple_game::Game;
///     game.num_players()
/// });
/// assert_eq!(players.unwrap(), 2);
/// ```
#[macro_export]
macro_rules! with_game {
    ($spec:expr, |$game:ident| $body:expr) => {{
        match $spec.parse::<$crate::__Spec>() {
            Err(e) => Err(e),
            Ok(spec) => match spec.name.as_str() {
                "tictactoe" => <$crate::TicTacToe as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                "connect4" => <$crate::Connect4 as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                "santorini" => <$crate::Santorini as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                "cathedral" => <$crate::Cathedral as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                "sagrada" => <$crate::Sagrada as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                "catan" => <$crate::Catan as $crate::__Game>::from_spec(&spec).map(|$game| $body),
                other => Err($crate::unknown_game(other)),
            },
        }
    }};
}

#[doc(hidden)]
pub use meeple_game::{Game as __Game, Spec as __Spec};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_game_dispatches() {
        for info in GAMES {
            let name = with_game!(info.name, |g| g.spec().name).unwrap();
            assert_eq!(name, info.name);
        }
        let err = with_game!("chess", |g| g.num_players()).unwrap_err().to_string();
        assert_eq!(err, "unknown game 'chess'; accepted: tictactoe, connect4, santorini, cathedral, sagrada, catan");
        assert!(with_game!("connect4:rows=x", |g| g.num_players()).is_err());
    }
}
