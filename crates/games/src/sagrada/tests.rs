use super::cards::{Objective, die, parse_die};
use super::*;
use meeple_game::{conformance, rng_from_seed};

const SUNS_GLORY: u8 = 0; // "1PY.4" "PY..6" "Y..53" ".5421"
const LUX_ASTRAM: u8 = 9; // ".1GP4" "6P25G" "1G53P" "....."

fn d(text: &str) -> u8 {
    parse_die(text).unwrap()
}

fn cell(text: &str) -> usize {
    let b = text.as_bytes();
    (b[1] - b'1') as usize * 5 + (b[0] - b'a') as usize
}

/// A two-player game in round `round` on the given patterns, tools and pool; players hold 6 tokens.
fn state(patterns: [u8; 2], tools: &[u8], pool: &[&str], round: u8) -> SagradaState {
    let game = Sagrada::default();
    let pool: Vec<u8> = pool.iter().map(|t| d(t)).collect();
    let mut s = SagradaState::setup(&game, &patterns, &[0, 1], tools, &[], &pool, round).unwrap();
    s.set_tokens(0, 6);
    s.set_tokens(1, 6);
    s
}

fn legal(s: &SagradaState) -> Vec<String> {
    let mut v = Vec::new();
    s.legal_actions(&mut v);
    v.iter().map(|&a| s.action_to_string(a)).collect()
}

fn play(s: &mut SagradaState, text: &str) {
    let a = s.parse_action(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    s.apply(a).unwrap_or_else(|e| panic!("{text}: {e}\n{s}"));
}

fn refused(s: &SagradaState, text: &str) -> String {
    let a = s.parse_action(text).unwrap();
    let mut t = s.clone();
    let err = t.apply(a).unwrap_err().to_string();
    assert_eq!(&t, s, "a refused move changed the state");
    err
}

#[test]
fn conformance_kit_passes() {
    for spec in [
        "sagrada",
        "sagrada:players=3",
        "sagrada:players=4,windows=random4",
        "sagrada:deterministic=true",
        "sagrada:tools=lathekin+tapwheel+lens",
        "sagrada:tools=fluxbrush+fluxremover+hammer",
        "sagrada:tools=grozing+pliers+cork,objectives=diagonals",
        "sagrada:tools=eglomise+copper+grinding",
    ] {
        let game = Sagrada::from_spec(&spec.parse().unwrap()).unwrap();
        let config = conformance::Config::with_games(4);
        let report = conformance::check(&game, &config).unwrap();
        assert_eq!(report.games, config.games, "{spec}");
    }
}

#[test]
fn pattern_table_matches_the_reference_data() {
    // tests/data/sagrada_window_patterns.json holds the 24 patterns of docs/data/sagrada-rules.md.
    let text = include_str!("../../tests/data/sagrada_window_patterns.json");
    let mut rows_seen = 0;
    for (i, p) in PATTERNS.iter().enumerate() {
        let at = text.find(&format!("\"name\": \"{}\"", p.name)).unwrap_or_else(|| panic!("{} missing", p.name));
        let entry = &text[at..(at + 200).min(text.len())];
        assert!(entry.contains(&format!("\"card\": {},", p.card)), "{}", p.name);
        assert!(entry.contains(&format!("\"favor_tokens\": {},", p.tokens)), "{}", p.name);
        for row in p.rows {
            assert!(entry.contains(&format!("\"{row}\"")), "{} row {row}", p.name);
            rows_seen += 1;
        }
        assert_eq!(p.card as usize, i / 2 + 1);
    }
    assert_eq!(rows_seen, 96);
    assert_eq!(text.matches("\"name\"").count(), 24);
}

#[test]
fn first_die_goes_on_an_edge_space_that_admits_it() {
    // Sun's Glory, empty: R5 fits d1 and a4 (free) and b4 (a 5); every other edge space holds a
    // different colour or value, and the interior is closed to a first die.
    let s = state([SUNS_GLORY, SUNS_GLORY], &[], &["R5"], 0);
    assert_eq!(legal(&s), ["R5@d1", "R5@a4", "R5@b4", "pass"]);
    assert!(refused(&s, "R5@c3").contains("edge"));
    assert!(refused(&s, "R5@a1").contains("needs a 1"));
    assert!(refused(&s, "R5@b1").contains("needs a purple die"));
}

#[test]
fn later_dice_touch_a_die_and_avoid_orthogonal_repeats() {
    let mut s = state([SUNS_GLORY, SUNS_GLORY], &[], &["R5", "Y4", "Y5", "R3"], 0);
    s.put_die(0, cell("b4"), d("R5")).unwrap();
    s.pool[d("R5") as usize] -= 1;
    s.bag[0] += 1;
    let counts = |s: &SagradaState, die: &str| legal(s).iter().filter(|m| m.starts_with(die)).count();
    // Y4: a3 (yellow), b3, c3, a4, c4 (a 4) all touch b4 and clash with nothing.
    assert_eq!(counts(&s, "Y4@"), 5);
    // Y5: the same value may touch b4 only diagonally (a3, c3).
    assert_eq!(legal(&s).iter().filter(|m| m.starts_with("Y5@")).cloned().collect::<Vec<_>>(), ["Y5@a3", "Y5@c3"]);
    // R3: the same colour only diagonally, and a3 is yellow, c4 a 4.
    assert_eq!(legal(&s).iter().filter(|m| m.starts_with("R3@")).cloned().collect::<Vec<_>>(), ["R3@c3"]);
    assert!(refused(&s, "Y4@e1").contains("touch"));
    assert!(refused(&s, "Y5@a4").contains("a 5 is orthogonally next"));
    assert!(refused(&s, "R3@b3").contains("red die is orthogonally next"));
    // One die per turn.
    play(&mut s, "Y4@c4");
    assert_eq!(s.current_player(), Some(1), "no tools: placing ends the turn");
}

#[test]
fn turn_order_snakes_and_the_start_player_rotates() {
    let order =
        |n: usize, round: usize| (0..2 * n).map(|t| SagradaState::seat_of_turn(n, round, t)).collect::<Vec<_>>();
    assert_eq!(order(2, 0), [0, 1, 1, 0]);
    assert_eq!(order(2, 1), [1, 0, 0, 1]);
    assert_eq!(order(3, 0), [0, 1, 2, 2, 1, 0]);
    assert_eq!(order(3, 2), [2, 0, 1, 1, 0, 2]);
    assert_eq!(order(4, 3), [3, 0, 1, 2, 2, 1, 0, 3]);
    // Played out: passes go 0,1,1,0, then round 2 draws 5 dice and starts with player 1.
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &["R1", "Y2", "G3", "B4", "P5"], 0);
    let mut seats = Vec::new();
    for _ in 0..4 {
        seats.push(s.current_player().unwrap());
        play(&mut s, "pass");
    }
    assert_eq!(seats, [0, 1, 1, 0]);
    assert_eq!(s.turn(), Turn::Chance);
    let mut rng = rng_from_seed(3);
    let mut outcomes = Vec::new();
    let mut draws = 0;
    while s.turn() == Turn::Chance {
        s.apply(meeple_game::draw_chance(&s, &mut outcomes, &mut rng)).unwrap();
        draws += 1;
    }
    assert_eq!(draws, 5);
    assert_eq!((s.round(), s.current_player()), (1, Some(1)));
}

#[test]
fn leftover_dice_go_to_the_round_track_and_the_game_ends_after_ten_rounds() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &["R1", "Y2", "G3", "B4", "P5"], 9);
    play(&mut s, "Y2@a4");
    play(&mut s, "G3@e4");
    play(&mut s, "pass");
    play(&mut s, "R1@b4");
    let track: Vec<u8> = (0..30u8).filter(|&x| s.track()[x as usize] > 0).collect();
    assert_eq!(track, [d("B4"), d("P5")]);
    assert_eq!(s.turn(), Turn::Terminal);
    assert!(s.returns().is_some());
}

#[test]
fn round_dice_are_drawn_from_the_bag_by_its_contents() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &[], 0);
    s.pool = [0; 30];
    s.stage = Stage::Draw;
    s.bag = [0, 0, 2, 0, 1];
    let mut out = Vec::new();
    s.chance_outcomes(&mut out);
    assert_eq!(out.len(), 12, "green and purple dice, six faces each");
    let green: f64 = out.iter().filter(|o| cards::colour(o.0 as u8) == 2).map(|o| o.1).sum();
    assert!((green - 2.0 / 3.0).abs() < 1e-12);
    play(&mut s, "draw:G6");
    assert_eq!(s.bag()[2], 1);
    assert_eq!(s.pool()[d("G6") as usize], 1);
}

#[test]
fn tool_costs_one_token_then_two() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[0], &["G3", "R1", "R6", "B4", "P5"], 0);
    s.set_tokens(1, 1);
    assert_eq!(s.tool_cost(0), 1);
    play(&mut s, "grozing:G3+@a4");
    assert_eq!(s.window(0).die_at(cell("a4")), Some(d("G4")));
    assert_eq!(s.tokens(0), 5);
    assert_eq!(s.tool_cost(0), 2);
    // Tool and die done: the turn passed. Player 1 has one token, the card now costs two.
    assert_eq!(s.current_player(), Some(1));
    assert!(!legal(&s).iter().any(|m| m.starts_with("grozing")));
    assert!(refused(&s, "grozing:R1+@a4").contains("costs 2 favor tokens; you have 1"));
}

#[test]
fn grozing_pliers_never_wraps() {
    let s = state([LUX_ASTRAM, LUX_ASTRAM], &[0], &["R1", "R6"], 0);
    let moves = legal(&s);
    assert!(moves.contains(&"grozing:R1+@a4".to_string()));
    assert!(!moves.iter().any(|m| m.starts_with("grozing:R1-") || m.starts_with("grozing:R6+")));
    assert!(moves.contains(&"grozing:R6-@a4".to_string()));
}

/// Player 0's window: a4 = R2, b4 = Y5.
fn two_dice(tools: &[u8]) -> SagradaState {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], tools, &["B6", "P1", "G4"], 0);
    s.put_die(0, cell("a4"), d("R2")).unwrap();
    s.put_die(0, cell("b4"), d("Y5")).unwrap();
    s
}

#[test]
fn eglomise_brush_and_copper_foil_bend_one_restriction_each() {
    let s = two_dice(&[1, 2]);
    let moves = legal(&s);
    // b3 needs green: only the Eglomise Brush may put R2 there. a3 needs a 1: only the Copper Foil.
    assert!(moves.contains(&"eglomise:a4-b3".to_string()));
    assert!(!moves.contains(&"copper:a4-b3".to_string()));
    assert!(moves.contains(&"copper:a4-a3".to_string()));
    assert!(!moves.contains(&"eglomise:a4-a3".to_string()));
    // Every other rule still holds: c1 touches no die once R2 is lifted.
    let why = refused(&s, "eglomise:a4-c1");
    assert!(why.contains("Eglomise Brush as R2 on c1: a die must touch a placed die"), "{why}");
    let mut t = s.clone();
    play(&mut t, "eglomise:a4-b3");
    assert_eq!(t.window(0).die_at(cell("b3")), Some(d("R2")));
    assert_eq!(t.current_player(), Some(0), "the die is still to draft");
    assert!(!legal(&t).iter().any(|m| m.starts_with("copper")), "one tool per turn");
}

#[test]
fn lathekin_moves_exactly_two_different_dice() {
    let mut s = two_dice(&[3]);
    play(&mut s, "lathekin:a4-c4");
    let moves = legal(&s);
    assert!(!moves.is_empty() && moves.iter().all(|m| m.starts_with("lathekin:b4-")), "{moves:?}");
    assert!(refused(&s, "pass").contains("finish the tool card"));
    play(&mut s, &moves[0]);
    assert_eq!(s.window(0).dice(), 2);
    assert_eq!(s.window(0).die_at(cell("c4")), Some(d("R2")));
    assert_eq!(s.current_player(), Some(0));
    assert!(legal(&s).iter().any(|m| m.starts_with("B6@")), "the turn's die is still to place");
}

#[test]
fn lens_cutter_swaps_with_the_round_track() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[4], &["R1", "Y2"], 1);
    s.put_on_track(d("B6")).unwrap();
    assert!(legal(&s).contains(&"lens:R1/B6".to_string()));
    play(&mut s, "lens:R1/B6");
    assert_eq!(legal(&s).iter().filter(|m| !m.starts_with("B6@")).count(), 0, "the swapped die must be placed");
    assert_eq!(s.current_player(), Some(1), "round 2 starts with player 1");
    play(&mut s, "B6@a4");
    assert_eq!(s.window(1).die_at(cell("a4")), Some(d("B6")));
    assert_eq!(s.track()[d("R1") as usize], 1);
    assert_eq!(s.track()[d("B6") as usize], 0);
    assert_eq!(s.pool()[d("R1") as usize], 0);
    assert_eq!(s.current_player(), Some(0));
}

#[test]
fn flux_brush_rerolls_then_places_or_returns_the_die() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[5], &["R1", "Y2"], 0);
    play(&mut s, "fluxbrush:R1");
    let mut out = Vec::new();
    s.chance_outcomes(&mut out);
    assert_eq!(out.len(), 6);
    assert!(out.iter().all(|o| cards::colour(o.0 as u8) == 0 && (o.1 - 1.0 / 6.0).abs() < 1e-12));
    play(&mut s, "roll:R4");
    assert!(legal(&s).iter().all(|m| m.starts_with("R4@")));
    play(&mut s, "R4@c4");
    assert_eq!(s.current_player(), Some(1));

    // A window whose only open space needs a 3: a rolled 5 goes back to the pool.
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[5], &["R1"], 0);
    fill_all_but(&mut s, 0, cell("d3"));
    play(&mut s, "fluxbrush:R1");
    play(&mut s, "roll:R5");
    assert_eq!(s.pool()[d("R5") as usize], 1);
    assert_eq!(s.current_player(), Some(1), "drafted (the die went back) and tool used: turn over");
}

/// Fills every space of `player`'s window except `open` with dice (rules not checked).
fn fill_all_but(s: &mut SagradaState, player: Player, open: usize) {
    let mut k = 0;
    for c in (0..CELLS).filter(|&c| c != open) {
        while s.bag[k % 5] == 0 {
            k += 1;
        }
        s.put_die(player, c, die(k % 5, (k % 6) as u8 + 1)).unwrap();
        k += 1;
    }
}

#[test]
fn glazing_hammer_only_on_the_second_turn_before_drafting() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[6], &["R1", "Y2", "G3"], 0);
    assert!(!legal(&s).contains(&"hammer".to_string()), "first turn");
    s.set_turn_index(3); // player 0's second turn
    assert_eq!(s.current_player(), Some(0));
    assert!(legal(&s).contains(&"hammer".to_string()));
    play(&mut s, "hammer");
    let mut colours = Vec::new();
    let mut out = Vec::new();
    while s.turn() == Turn::Chance {
        s.chance_outcomes(&mut out);
        colours.push(cards::colour(out[0].0 as u8));
        let six = out.iter().find(|o| cards::value(o.0 as u8) == 6).unwrap().0;
        s.apply(six).unwrap();
    }
    assert_eq!(colours, [0, 1, 2]);
    let pool: Vec<u8> = (0..30u8).filter(|&x| s.pool()[x as usize] > 0).collect();
    assert_eq!(pool, [d("R6"), d("Y6"), d("G6")]);
    assert!(legal(&s).contains(&"R6@a4".to_string()), "the die may still be drafted");
    assert!(!legal(&s).contains(&"hammer".to_string()));
}

#[test]
fn running_pliers_drafts_again_and_skips_the_second_turn() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[7], &["R1", "Y2", "G3", "B4", "P5"], 0);
    assert!(!legal(&s).contains(&"pliers".to_string()), "only after drafting");
    play(&mut s, "R1@a4");
    assert_eq!(s.current_player(), Some(0), "the pliers could still be used");
    play(&mut s, "pliers");
    play(&mut s, "Y2@b4");
    assert_eq!(s.current_player(), Some(1));
    play(&mut s, "pass");
    play(&mut s, "pass");
    // Player 0's second turn is skipped: the round ends.
    assert_eq!(s.turn(), Turn::Chance);
    assert_eq!(s.round(), 1);
    // Not on the second turn.
    let mut t = state([LUX_ASTRAM, LUX_ASTRAM], &[7], &["R1", "Y2"], 0);
    t.set_turn_index(3);
    play(&mut t, "R1@a4");
    assert_eq!(t.turn(), Turn::Chance, "no usable tool left: the turn and the round ended");
}

#[test]
fn cork_backed_straightedge_places_away_from_every_die() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[8], &["R5", "Y3"], 0);
    s.put_die(0, cell("a4"), d("G2")).unwrap();
    let moves = legal(&s);
    assert!(moves.contains(&"cork:R5@e4".to_string()));
    assert!(!moves.contains(&"cork:R5@b4".to_string()), "touches a4");
    assert!(!moves.contains(&"R5@e4".to_string()));
    play(&mut s, "cork:R5@e4");
    assert_eq!(s.window(0).die_at(cell("e4")), Some(d("R5")));
}

#[test]
fn grinding_stone_turns_the_die_over() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[9], &["R2"], 0);
    play(&mut s, "grinding:R2@a4");
    assert_eq!(s.window(0).die_at(cell("a4")), Some(d("R5")));
    // b1 needs a 1: a 6 may be ground onto it, a 2 may not.
    let s = state([LUX_ASTRAM, LUX_ASTRAM], &[9], &["R6", "Y2"], 0);
    assert!(legal(&s).contains(&"grinding:R6@b1".to_string()));
    assert!(!legal(&s).iter().any(|m| m.starts_with("grinding:Y2@b1")));
}

#[test]
fn flux_remover_returns_draws_and_lets_the_player_choose_the_value() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[10], &["R1", "Y2"], 0);
    let red = s.bag()[0];
    play(&mut s, "fluxremover:R1");
    assert_eq!(s.bag()[0], red + 1);
    let mut out = Vec::new();
    s.chance_outcomes(&mut out);
    assert_eq!(out.len(), 5);
    let total: u32 = s.bag().iter().map(|&b| b as u32).sum();
    assert!((out[0].1 - (red + 1) as f64 / total as f64).abs() < 1e-12);
    play(&mut s, "draw:G");
    assert_eq!(legal(&s), ["value:1", "value:2", "value:3", "value:4", "value:5", "value:6"]);
    play(&mut s, "value:4");
    assert!(legal(&s).iter().all(|m| m.starts_with("G4@")));
    play(&mut s, "G4@c4");
    assert_eq!(s.current_player(), Some(1));
}

#[test]
fn tap_wheel_moves_up_to_two_dice_of_a_round_track_colour() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[11], &["P1"], 0);
    s.put_die(0, cell("a4"), d("G2")).unwrap();
    s.put_die(0, cell("b4"), d("R3")).unwrap();
    s.put_die(0, cell("c4"), d("G5")).unwrap();
    assert!(!legal(&s).iter().any(|m| m.starts_with("tapwheel")), "no die on the round track yet");
    s.put_on_track(d("G1")).unwrap();
    let moves = legal(&s);
    assert!(moves.iter().any(|m| m.starts_with("tapwheel:a4-")));
    assert!(!moves.iter().any(|m| m.starts_with("tapwheel:b4-")), "red is not on the track");
    play(&mut s, "tapwheel:c4-c3");
    let moves = legal(&s);
    assert_eq!(moves.last().map(String::as_str), Some("tapwheel:stop"));
    assert!(moves.iter().all(|m| m.starts_with("tapwheel:a4-") || m == "tapwheel:stop"), "{moves:?}");
    play(&mut s, "tapwheel:stop");
    assert_eq!(s.current_player(), Some(0));
    assert!(legal(&s).iter().any(|m| m.starts_with("P1@")));
}

/// A window holding the given dice, rules unchecked.
fn board(dice: &[(&str, &str)]) -> Window {
    let mut w = Window::new(LUX_ASTRAM);
    for (c, x) in dice {
        w.put(cell(c), d(x));
    }
    w
}

#[test]
fn public_objectives_score_hand_checked_boards() {
    let score = |o: Objective, w: &Window| o.score(&w.colour, &w.value);
    let row = board(&[("a1", "R1"), ("b1", "Y2"), ("c1", "G3"), ("d1", "B4"), ("e1", "P5")]);
    assert_eq!(score(Objective::RowColourVariety, &row), 6);
    assert_eq!(score(Objective::RowShadeVariety, &row), 5);
    let repeat = board(&[("a1", "R1"), ("b1", "Y2"), ("c1", "G3"), ("d1", "B4"), ("e1", "R6")]);
    assert_eq!(score(Objective::RowColourVariety, &repeat), 0);
    assert_eq!(score(Objective::RowShadeVariety, &repeat), 5);
    let short = board(&[("a1", "R1"), ("b1", "Y2"), ("c1", "G3"), ("d1", "B4")]);
    assert_eq!(score(Objective::RowColourVariety, &short), 0, "rows must be full");
    let column = board(&[("b1", "R1"), ("b2", "Y2"), ("b3", "G3"), ("b4", "B3")]);
    assert_eq!(score(Objective::ColumnColourVariety, &column), 5);
    assert_eq!(score(Objective::ColumnShadeVariety, &column), 0, "two 3s");
    let column = board(&[("e1", "R1"), ("e2", "R2"), ("e3", "G3"), ("e4", "B4")]);
    assert_eq!(score(Objective::ColumnShadeVariety, &column), 4);
    assert_eq!(score(Objective::ColumnColourVariety, &column), 0);

    let shades = board(&[
        ("a1", "R1"),
        ("b1", "Y1"),
        ("c1", "G1"),
        ("d1", "B2"),
        ("e1", "P2"),
        ("a2", "R3"),
        ("a3", "R5"),
        ("b3", "Y5"),
        ("c3", "G6"),
        ("d3", "B6"),
        ("e3", "P4"),
    ]);
    assert_eq!(score(Objective::LightShades, &shades), 4, "three 1s, two 2s: two pairs");
    assert_eq!(score(Objective::MediumShades, &shades), 2);
    assert_eq!(score(Objective::DeepShades, &shades), 4);
    assert_eq!(score(Objective::ShadeVariety, &shades), 5, "one full set of 1-6");
    assert_eq!(score(Objective::ColourVariety, &shades), 8, "reds: 3, every colour at least 2");

    // Diagonals: a1-b2-c3 reds (3 dice), a2-b1 greens (2 dice), a lone red on e4 and a green on
    // c1, orthogonally next to the green b1 only: 5 points.
    let diagonals =
        board(&[("a1", "R1"), ("b2", "R2"), ("c3", "R3"), ("a2", "G4"), ("b1", "G5"), ("e4", "R6"), ("c1", "G6")]);
    assert_eq!(score(Objective::ColourDiagonals, &diagonals), 5);
}

#[test]
fn final_score_adds_private_colour_tokens_and_subtracts_empty_spaces() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &[], 9);
    s.objectives = [0, NONE, NONE]; // Row Color Variety
    s.objectives_n = 1;
    for (c, x) in [("a4", "R1"), ("b4", "Y2"), ("c4", "G3"), ("d4", "B4"), ("e4", "R6")] {
        s.put_die(0, cell(c), d(x)).unwrap();
    }
    s.set_tokens(0, 3);
    // Private red: 1 + 6 = 7; no full varied row (two reds); 3 tokens; 15 empty spaces.
    assert_eq!(s.private_score(0), 7);
    assert_eq!(s.score(0), 7 + 3 - 15);
    s.windows[0].take(cell("e4"));
    s.windows[0].put(cell("e4"), d("P6"));
    assert_eq!(s.score(0), 6 + 1 + 3 - 15, "row complete: 6 points; private now 1");
}

fn finished(a: (i32, u8, u8), b: (i32, u8, u8)) -> SagradaState {
    // Two players with given (red dice value on a4 for player 0 / yellow for 1 = private, tokens,
    // last turn index in the final round).
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &[], 9);
    for (p, (private, tokens, last)) in [a, b].into_iter().enumerate() {
        if private > 0 {
            s.put_die(p, cell("a4"), die(p, private as u8)).unwrap();
        }
        s.set_tokens(p, tokens);
        s.last_turn[p] = last;
    }
    s.stage = Stage::Over;
    s
}

#[test]
fn ties_break_on_private_objective_then_tokens_then_the_later_final_turn() {
    // Player 0: private 3, 2 tokens; player 1: private 2, 3 tokens: equal scores, 0 wins on private.
    let s = finished((3, 2, 3), (2, 3, 2));
    assert_eq!(s.score(0), s.score(1));
    assert_eq!(s.returns().unwrap().as_slice(), [1.0, 0.0]);
    // Equal private and tokens: the player with the later final-round turn wins.
    let s = finished((2, 3, 1), (2, 3, 2));
    assert_eq!(s.returns().unwrap().as_slice(), [0.0, 1.0]);
    let s = finished((2, 3, 3), (2, 3, 2));
    assert_eq!(s.returns().unwrap().as_slice(), [1.0, 0.0]);
    // A higher score wins outright.
    let s = finished((6, 0, 0), (2, 3, 2));
    assert_eq!(s.returns().unwrap().as_slice(), [1.0, 0.0]);
}

#[test]
fn setup_deals_window_cards_and_the_choice_sets_tokens() {
    let game = Sagrada::default();
    let mut s = game.initial_state();
    let mut rng = rng_from_seed(9);
    let mut out = Vec::new();
    while s.turn() == Turn::Chance {
        s.apply(meeple_game::draw_chance(&s, &mut out, &mut rng)).unwrap();
    }
    assert_eq!(s.tools().len(), 3);
    assert_eq!(s.objectives().len(), 3);
    assert_ne!(s.private_colour(0), s.private_colour(1));
    for p in 0..2 {
        let o = s.offers[p];
        assert_eq!((o[0] / 2, o[1], o[2] / 2, o[3]), (o[1] / 2, o[0] + 1, o[3] / 2, o[2] + 1), "two whole cards");
    }
    assert_eq!(legal(&s), ["window:1", "window:2", "window:3", "window:4"]);
    let chosen = s.offers[0][2];
    play(&mut s, "window:3");
    assert_eq!(s.window(0).pattern, chosen);
    assert_eq!(s.tokens(0), PATTERNS[chosen as usize].tokens);
    assert_eq!(s.current_player(), Some(1));
    // Player 1 does not see player 0's private colour, nor (in random4 mode) the offers.
    assert!(s.observation_string(1).contains("private hidden"));
    let mut r4 = Sagrada::from_spec(&"sagrada:windows=random4".parse().unwrap()).unwrap().initial_state();
    while r4.turn() == Turn::Chance {
        r4.apply(meeple_game::draw_chance(&r4, &mut out, &mut rng)).unwrap();
    }
    let mut all: Vec<u8> = r4.offers[..2].iter().flatten().copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 8, "eight different patterns");
}

#[test]
fn determinize_samples_hidden_colours_and_keeps_what_the_player_knows() {
    let s = state([LUX_ASTRAM, SUNS_GLORY], &[], &["R1", "Y2"], 0);
    let mut rng = rng_from_seed(1);
    let mut seen = [0; 5];
    for _ in 0..400 {
        let w = s.determinize(0, &mut rng);
        assert_eq!(w.private_colour(0), Some(0));
        let c = w.private_colour(1).unwrap();
        assert_ne!(c, 0);
        seen[c] += 1;
        assert!(w.is_fated());
        assert_eq!(w.window(1), s.window(1));
        assert_eq!(w.pool(), s.pool());
    }
    assert_eq!(seen[0], 0);
    assert!(seen[1..].iter().all(|&k| k > 60), "each of the four other colours is sampled: {seen:?}");
    // A fixed future: every chance node of the world has one outcome, the same on every visit.
    let mut w = s.determinize(0, &mut rng);
    play(&mut w, "pass");
    play(&mut w, "pass");
    play(&mut w, "pass");
    play(&mut w, "pass");
    let mut out = Vec::new();
    w.chance_outcomes(&mut out);
    assert_eq!(out.len(), 1);
    let again = w.clone();
    let mut out2 = Vec::new();
    again.chance_outcomes(&mut out2);
    assert_eq!(out, out2);
    // An open world (AlphaZero's) samples the same hidden colours but leaves the draws to
    // chance: the next round's first draw has every colour still in the bag as an outcome.
    let mut open = [0; 5];
    for _ in 0..400 {
        let o = s.determinize_open(0, &mut rng);
        assert!(!o.is_fated());
        assert_eq!(o.private_colour(0), Some(0));
        open[o.private_colour(1).unwrap()] += 1;
    }
    assert!(open[0] == 0 && open[1..].iter().all(|&k| k > 60), "{open:?}");
    let mut o = s.determinize_open(0, &mut rng);
    for _ in 0..4 {
        play(&mut o, "pass");
    }
    let mut real = s.clone();
    for _ in 0..4 {
        play(&mut real, "pass");
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    o.chance_outcomes(&mut a);
    real.chance_outcomes(&mut b);
    assert!(a.len() > 1 && a == b, "{a:?} against the real game's {b:?}");
}

#[test]
fn deterministic_mode_fixes_the_future_from_the_seed_and_shows_everything() {
    let game = Sagrada::from_spec(&"sagrada:deterministic=true".parse().unwrap()).unwrap();
    let mut s = game.initial_state();
    let mut out = Vec::new();
    s.chance_outcomes(&mut out);
    assert_eq!(out.len(), 256);
    for b in [1, 2, 3, 4] {
        s.apply(b).unwrap();
    }
    // From here on every chance node has exactly one outcome.
    let mut rng = rng_from_seed(4);
    let mut buf = Vec::new();
    while !s.is_terminal() {
        if s.turn() == Turn::Chance {
            s.chance_outcomes(&mut out);
            assert_eq!(out.len(), 1);
            s.apply(out[0].0).unwrap();
        } else {
            let a = s.random_action(&mut rng, &mut buf);
            s.apply(a).unwrap();
        }
        if s.stage == Stage::Play {
            assert!(
                s.observation_string(0).contains(&format!("private {}", cards::COLOUR_NAMES[s.private[1] as usize]))
            );
            break;
        }
    }
    let mut rng = rng_from_seed(5);
    assert_eq!(s.determinize(0, &mut rng), s, "nothing is hidden");
}

#[test]
fn bad_notation_and_bad_options_give_clear_errors() {
    let s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &["R1"], 0);
    for bad in ["R7@a1", "X1@a1", "R1@f1", "R1@a5", "grozing:R1*@a1", "lens:R1", "window:5", "value:0", ""] {
        assert!(s.parse_action(bad).is_err(), "{bad}");
    }
    assert!(refused(&s, "lens:R1/B6").contains("Lens Cutter is not in play"));
    for spec in ["sagrada:players=5", "sagrada:tools=lens+lens", "sagrada:tools=saw", "sagrada:windows=six"] {
        let err = Sagrada::from_spec(&spec.parse().unwrap()).unwrap_err().to_string();
        assert!(err.contains("expected"), "{spec}: {err}");
    }
}

/// The placement rules written out space by space, with row/column arithmetic instead of masks.
fn naive_allowed(w: &Window, d: u8, rule: Rule) -> u32 {
    let (c, v) = (cards::colour(d), cards::value(d));
    let at = |r: i32, col: i32| -> Option<u8> {
        if (0..4).contains(&r) && (0..5).contains(&col) { w.die_at((r * 5 + col) as usize) } else { None }
    };
    let empty_board = w.occupied == 0;
    let mut out = 0;
    for cell in 0..CELLS {
        let (r, col) = ((cell / 5) as i32, (cell % 5) as i32);
        if w.die_at(cell).is_some() {
            continue;
        }
        match w.restrictions().of(cell) {
            Some(Ok(rc)) if rc != c && rule != Rule::IgnoreColour => continue,
            Some(Err(rv)) if rv != v && rule != Rule::IgnoreValue => continue,
            _ => {}
        }
        let orthogonal = [(r - 1, col), (r + 1, col), (r, col - 1), (r, col + 1)];
        if orthogonal.iter().filter_map(|&(a, b)| at(a, b)).any(|n| cards::colour(n) == c || cards::value(n) == v) {
            continue;
        }
        let touching = (-1..=1)
            .flat_map(|dr| (-1..=1).map(move |dc| (dr, dc)))
            .filter(|&(dr, dc)| (dr, dc) != (0, 0))
            .any(|(dr, dc)| at(r + dr, col + dc).is_some());
        let edge = r == 0 || r == 3 || col == 0 || col == 4;
        let ok = if empty_board {
            edge
        } else if rule == Rule::Lonely {
            !touching
        } else {
            touching
        };
        if ok {
            out |= 1 << cell;
        }
    }
    out
}

#[test]
fn bitboard_placement_rules_match_a_space_by_space_check() {
    let mut rng = rng_from_seed(77);
    use rand::RngExt;
    let mut checked = 0;
    for _ in 0..400 {
        let mut w = Window::new(rng.random_range(0..24));
        // Any dice anywhere (rules not enforced), so every neighbourhood shape appears.
        for cell in 0..CELLS {
            if rng.random_range(0..100) < 35 {
                w.put(cell, rng.random_range(0..30));
            }
        }
        for d in 0..30 {
            for rule in [Rule::Normal, Rule::IgnoreColour, Rule::IgnoreValue, Rule::Lonely] {
                assert_eq!(w.allowed(d, rule), naive_allowed(&w, d, rule), "{w:?} die {d} {rule:?}");
                checked += 1;
            }
        }
        // Unfillable: an empty space where no die meets both its restriction and its orthogonal
        // neighbours (placed dice elsewhere could always make it touch later). Normal and lonely
        // placements together ignore the touching rule on a non-empty board.
        if w.occupied == 0 {
            continue;
        }
        let dead: u32 = (0..CELLS)
            .filter(|&cell| w.die_at(cell).is_none())
            .filter(|&cell| {
                (0..30).all(|d| {
                    (naive_allowed(&w, d, Rule::Normal) | naive_allowed(&w, d, Rule::Lonely)) & (1 << cell) == 0
                })
            })
            .fold(0, |m, cell| m | 1 << cell);
        assert_eq!(w.dead_spaces(), dead, "{w:?}");
    }
    assert_eq!(checked, 400 * 30 * 4);
}

/// Public-objective scoring written out from the dice, without masks.
fn naive_objective(o: Objective, w: &Window) -> i32 {
    let dice: Vec<Option<u8>> = (0..CELLS).map(|c| w.die_at(c)).collect();
    let attr = |d: u8, colour: bool| if colour { cards::colour(d) } else { cards::value(d) as usize };
    let varied = |cells: Vec<usize>, colour: bool| {
        let vals: Option<Vec<usize>> = cells.iter().map(|&c| dice[c].map(|d| attr(d, colour))).collect();
        vals.is_some_and(|v| (0..v.len()).all(|i| (0..i).all(|j| v[i] != v[j])))
    };
    let rows = |colour: bool| (0..4).filter(|&r| varied((0..5).map(|c| r * 5 + c).collect(), colour)).count() as i32;
    let cols = |colour: bool| (0..5).filter(|&c| varied((0..4).map(|r| r * 5 + c).collect(), colour)).count() as i32;
    let count_value = |v: u8| dice.iter().flatten().filter(|&&d| cards::value(d) == v).count() as i32;
    let count_colour = |c: usize| dice.iter().flatten().filter(|&&d| cards::colour(d) == c).count() as i32;
    match o {
        Objective::RowColourVariety => 6 * rows(true),
        Objective::ColumnColourVariety => 5 * cols(true),
        Objective::RowShadeVariety => 5 * rows(false),
        Objective::ColumnShadeVariety => 4 * cols(false),
        Objective::LightShades => 2 * count_value(1).min(count_value(2)),
        Objective::MediumShades => 2 * count_value(3).min(count_value(4)),
        Objective::DeepShades => 2 * count_value(5).min(count_value(6)),
        Objective::ShadeVariety => 5 * (1..=6).map(count_value).min().unwrap(),
        Objective::ColourVariety => 4 * (0..5).map(count_colour).min().unwrap(),
        Objective::ColourDiagonals => (0..CELLS)
            .filter(|&cell| {
                let Some(d) = dice[cell] else { return false };
                let (r, c) = ((cell / 5) as i32, (cell % 5) as i32);
                [(-1, -1), (-1, 1), (1, -1), (1, 1)].iter().any(|&(dr, dc)| {
                    let (rr, cc) = (r + dr, c + dc);
                    (0..4).contains(&rr)
                        && (0..5).contains(&cc)
                        && dice[(rr * 5 + cc) as usize].is_some_and(|n| cards::colour(n) == cards::colour(d))
                })
            })
            .count() as i32,
    }
}

#[test]
fn objective_scoring_matches_a_dice_by_dice_count() {
    use rand::RngExt;
    let mut rng = rng_from_seed(78);
    for _ in 0..2000 {
        let mut w = Window::new(0);
        let fill = rng.random_range(30..=100);
        for cell in 0..CELLS {
            if rng.random_range(0..100) < fill {
                w.put(cell, rng.random_range(0..30));
            }
        }
        for o in OBJECTIVES {
            assert_eq!(o.score(&w.colour, &w.value), naive_objective(o, &w), "{o:?} {w:?}");
        }
    }
}

#[test]
fn other_players_secret_draws_are_masked_in_their_view() {
    let mut s = Sagrada::default().initial_state();
    let mut out = Vec::new();
    while s.stage != Stage::Privates {
        s.chance_outcomes(&mut out);
        s.apply(out[0].0).unwrap();
    }
    s.chance_outcomes(&mut out);
    let a = out[2].0; // player 0 is dealt green
    assert_eq!(s.action_to_string_for(0, a), "private:G");
    assert_eq!(s.action_to_string_for(1, a), "private:?");
    assert_eq!(s.action_to_string(a), "private:G");
}

#[test]
fn refusals_name_the_rule_and_bad_text_its_form() {
    // Lens Cutter in round 1: nothing on the round track yet.
    let s = state([LUX_ASTRAM, LUX_ASTRAM], &[4], &["B6", "P1"], 0);
    assert!(refused(&s, "lens:B6/G2").contains("the round track is empty"));
    assert!(refused(&s, "lens:R4/G2").contains("R4 is not in the draft pool"));
    // Cork-backed Straightedge next to a die; Eglomise Brush onto a neighbour's colour.
    let s = two_dice(&[8]);
    let why = refused(&s, "cork:B6@c4");
    assert!(why.contains("c4 touches a placed die; this die goes where it touches none"), "{why}");
    // Each kind of move gets its own form, not the whole notation.
    for (text, form) in [
        ("window:5", "window:1 to window:4"),
        ("G2@ee", "a placement is DIE@SPACE"),
        ("cork:G2@z9", "cork:DIE@SPACE"),
        ("value:9", "value:1 to value:6"),
        ("hammer:now", "'hammer' takes no argument"),
    ] {
        let err = s.parse_action(text).unwrap_err().to_string();
        assert!(err.contains(form) && err.len() < 200, "{text}: {err}");
    }
    // The cards view says what the tools and objectives do, and only the viewer's colour.
    let view = s.text_view(0, "cards").unwrap();
    assert!(view.contains("Cork-backed Straightedge [cork] (1): after drafting, place the die on a space touching"));
    assert!(view.contains("Your private objective: red"), "{view}");
    assert!(s.text_view(1, "cards").unwrap().contains("Your private objective: yellow"));
}

#[test]
fn offered_windows_are_drawn_before_the_choice() {
    let game = Sagrada::default();
    let mut s = game.initial_state();
    let mut outcomes = Vec::new();
    let mut rng = rng_from_seed(3);
    while s.turn() == Turn::Chance {
        s.apply_unchecked(meeple_game::draw_chance(&s, &mut outcomes, &mut rng));
    }
    let mine = s.observation_string(0);
    assert!(mine.contains("window:1") && mine.contains("window:4"), "{mine}");
    // The four patterns' first rows, as restrictions, in the order window:1-4 picks them.
    let first = &PATTERNS[s.offers[0][0] as usize].rows[0];
    let drawn: String = first
        .chars()
        .map(|c| match c {
            '1'..='6' => format!(".{c}"),
            '.' => "..".into(),
            l => format!("{}.", l.to_ascii_lowercase()),
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert!(mine.contains(&drawn), "{drawn} in {mine}");
}

/// The observation's window standing: dice values summed per colour for every window, the
/// private objective's points only for the viewer's own, empty spaces counted.
#[test]
fn observation_carries_each_windows_standing_and_hides_the_others_private_points() {
    let mut s = state([LUX_ASTRAM, LUX_ASTRAM], &[], &["R1", "Y2", "G3", "B4", "P5"], 0);
    play(&mut s, "Y2@a4"); // player 0, whose private colour is red (0)
    play(&mut s, "R1@b4"); // player 1, private yellow (1)
    let block = |obs: &[f32], k: usize| {
        let start = k * PLAYER_FEATURES + PLAYER_FEATURES - SCORE_FEATURES;
        obs[start..start + SCORE_FEATURES].to_vec()
    };
    let mut obs = Vec::new();
    s.observation(0, &mut obs);
    let (own, other) = (block(&obs, 0), block(&obs, 1));
    // Player 0's window: a yellow 2.
    assert_eq!(&own[..COLOURS], &[0.0, 2.0 / 30.0, 0.0, 0.0, 0.0]);
    assert_eq!(own[COLOURS + 3], 19.0 / 20.0);
    assert_eq!(own[COLOURS + 5], 0.0, "no red die: no private points");
    // Player 1's window as player 0 sees it: a red 1, its private points hidden.
    assert_eq!(&other[..COLOURS], &[1.0 / 30.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(other[COLOURS + 5], 0.0);
    s.observation(1, &mut obs);
    let own = block(&obs, 0);
    assert_eq!(&own[..COLOURS], &[1.0 / 30.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(own[COLOURS + 5], 0.0, "player 1's private colour is yellow");
    assert_eq!(block(&obs, 1)[COLOURS + 5], 0.0, "player 0's private points hidden from player 1");
    let mut t = state([LUX_ASTRAM, LUX_ASTRAM], &[], &["R5", "Y2"], 0);
    play(&mut t, "R5@a4");
    t.observation(0, &mut obs);
    assert_eq!(block(&obs, 0)[COLOURS + 5], 5.0 / 30.0, "the viewer's own red 5");
    t.observation(1, &mut obs);
    assert_eq!(block(&obs, 1)[COLOURS + 5], 0.0);
}
