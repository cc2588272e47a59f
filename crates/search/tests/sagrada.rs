//! Every Sagrada agent on positions with a known best move.

use meeple_game::{Budget, State};
use meeple_games::sagrada::{Sagrada, SagradaState, cards};
use meeple_search::make_agent;

const LUX_ASTRAM: u8 = 9; // ".1GP4" "6P25G" "1G53P" "....."
const ROW_COLOUR_VARIETY: u8 = 0;

fn die(text: &str) -> u8 {
    cards::parse_die(text).unwrap()
}

/// Bottom row Y2 B4 G3 P5 with a4 open; the pool holds R6 (the only die that completes a row
/// of five colours: 6 points under Row Color Variety), G6 and B1 (fit a4 but repeat a colour, or
/// go on b3 / a3; B1 is the mover's private colour) and Y6 (fits nowhere). Last round.
fn completes_a_row() -> SagradaState {
    let game = Sagrada::default();
    let mut s = SagradaState::setup(
        &game,
        &[LUX_ASTRAM, LUX_ASTRAM],
        &[3, 1], // private blue for the mover: neither pool die is favoured
        &[],
        &[ROW_COLOUR_VARIETY],
        &[die("R6"), die("Y6"), die("G6"), die("B1")],
        9,
    )
    .unwrap();
    // Player 0's last turn of the game: nothing later can complete the row instead.
    s.set_turn_index(2);
    assert_eq!(s.current_player(), Some(0));
    for (cell, d) in [(16, "Y2"), (17, "B4"), (18, "G3"), (19, "P5")] {
        s.put_die(0, cell, die(d)).unwrap();
    }
    s
}

fn decide(spec: &str, s: &SagradaState) -> String {
    let game = Sagrada::default();
    let mut agent = make_agent(&game, spec, 7).unwrap();
    let a = agent.act(s, &Budget::UNLIMITED).unwrap();
    s.action_to_string(a)
}

#[test]
fn every_agent_completes_the_row() {
    let s = completes_a_row();
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    let moves: Vec<String> = legal.iter().map(|&a| s.action_to_string(a)).collect();
    assert_eq!(moves, ["R6@a4", "G6@b3", "G6@a4", "B1@a3", "B1@a4", "pass"]);
    for spec in [
        "sagrada-rules",
        "sagrada-rules:strategy=all_moves",
        "alphabeta:depth=1,eval=thesis",
        "alphabeta:depth=2,eval=thesis,worlds=4",
        "mcts:iters=2000,playout=sagrada-rules,margin=steps,worlds=4",
        "ismcts:iters=2000,playout=sagrada-rules,margin=steps",
    ] {
        assert_eq!(decide(spec, &s), "R6@a4", "{spec}");
    }
}

#[test]
fn the_rules_agent_prefers_its_private_colour() {
    let game = Sagrada::default();
    // Empty window, no objectives: red (the mover's private colour) beats green of the same value.
    let s =
        SagradaState::setup(&game, &[LUX_ASTRAM, LUX_ASTRAM], &[0, 2], &[], &[], &[die("G5"), die("R5")], 0).unwrap();
    assert!(decide("sagrada-rules", &s).starts_with("R5@"));
    let s =
        SagradaState::setup(&game, &[LUX_ASTRAM, LUX_ASTRAM], &[2, 0], &[], &[], &[die("G5"), die("R5")], 0).unwrap();
    assert!(decide("sagrada-rules", &s).starts_with("G5@"));
}
