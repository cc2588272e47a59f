//! The conformance kit must pass a correct game with chance and hidden information, and must
//! catch each kind of broken contract.

use meeple_game::conformance::{Config, check};
use meeple_game::testing::{Bug, Dice};

#[test]
fn a_correct_game_with_chance_and_hidden_information_passes() {
    for players in 2..=4 {
        let report = check(&Dice { players, bug: Bug::None }, &Config::with_games(300)).unwrap();
        assert!(report.chance_nodes >= players * report.games, "every game deals a die to each player");
    }
}

#[test]
fn each_broken_contract_is_caught() {
    let cases = [
        (Bug::Notation, "parses back"),
        (Bug::AcceptsIllegal, "is_legal(5) is true for an unlisted action"),
        (Bug::EarlyReturns, "returns"),
        (Bug::LeakyDeterminize, "determinize(0) changed player 0's own observation"),
        (Bug::ShortObservation, "has 7 values, shape says 8"),
        (Bug::NoLegalActions, "no legal actions in a non-terminal state"),
        (Bug::UnstableHash, "clone differs"),
        (Bug::UnscaledObservation, "outside 0..=1"),
        (Bug::LeakyView, "shows hidden information"),
    ];
    for (bug, expected) in cases {
        let err = check(&Dice { players: 2, bug }, &Config::with_games(50)).expect_err(&format!("{bug:?} not caught"));
        assert!(err.contains(expected), "{bug:?}: '{err}' should mention '{expected}'");
        assert!(err.starts_with("dice:players=2 seed "), "{err}");
    }
    let err = check(&Dice { players: 2, bug: Bug::ActionPlanes }, &Config::with_games(5)).unwrap_err();
    assert_eq!(err, "dice:players=2 action planes: the observation [8] is not board planes [planes, rows, cols]");
}
