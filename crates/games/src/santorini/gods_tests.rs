//! God powers: one hand-built position per power and per interaction people ask about.

use super::*;
use meeple_game::{conformance, perft};
use std::collections::BTreeSet;

fn spec(text: &str) -> Result<Spec, Error> {
    text.parse()
}

fn with(gods: &str) -> Santorini {
    Santorini::default().with_gods(parse_gods(gods).unwrap())
}

/// Heights rank 5 first; workers X X O O; X has the first god.
fn gpos(gods: &str, heights: &str, workers: &str, to_move: usize) -> SantoriniState {
    SantoriniState::from_parts(&with(gods), heights, workers, to_move).unwrap()
}

fn steps(s: &SantoriniState) -> BTreeSet<String> {
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    legal.iter().map(|&a| s.action_to_string(a)).collect()
}

fn play(s: &SantoriniState, text: &str) -> SantoriniState {
    let mut next = *s;
    let a = next.parse_action(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    next.apply(a).unwrap_or_else(|e| panic!("{text}: {e}\n{s}"));
    next
}

fn refused(s: &SantoriniState, text: &str) -> String {
    let mut next = *s;
    match next.parse_action(text) {
        Err(e) => e.to_string(),
        Ok(a) => next.apply(a).err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{text} was allowed\n{s}")),
    }
}

const FLAT: &str = "00000 00000 00000 00000 00000";

#[test]
fn conformance_over_random_pairings() {
    conformance::check(&with("random"), &conformance::Config::with_games(1500)).unwrap();
    conformance::check(&with("random").with_supply(Supply::Official), &conformance::Config::with_games(300)).unwrap();
}

#[test]
fn the_gods_option_reads_and_refuses() {
    let g = Santorini::from_spec(&spec("santorini:gods=apollo+pan").unwrap()).unwrap();
    assert_eq!(g.spec().to_string(), "santorini:supply=unlimited,gods=apollo+pan");
    assert_eq!(g.initial_state().gods(), ["apollo", "pan"]);
    assert_eq!(g.num_actions(), 320);
    let base = Santorini::from_spec(&spec("santorini:gods=none").unwrap()).unwrap();
    assert_eq!(base.spec().to_string(), "santorini:supply=unlimited", "the base game's spec is unchanged");
    assert_eq!((base.num_actions(), base.observation_shape()), (169, vec![8, 5, 5]));
    assert!(!base.initial_state().stepped());
    for bad in ["zeus+pan", "apollo", "apollo+pan+atlas", "none+none"] {
        let e = Santorini::from_spec(&spec(&format!("santorini:gods={bad}")).unwrap()).unwrap_err().to_string();
        assert!(e.contains("gods"), "{bad}: {e}");
    }
    // A random pairing is a chance move: two different gods, each of the 90 equally likely.
    let r = with("random").initial_state();
    assert_eq!(r.turn(), Turn::Chance);
    let mut out = Vec::new();
    r.chance_outcomes(&mut out);
    assert_eq!(out.len(), 90);
    assert!(out.iter().all(|&(k, p)| k / 10 != k % 10 && (p - 1.0 / 90.0).abs() < 1e-12));
    assert_eq!(r.action_to_string(8), "apollo+pan");
    assert_eq!(r.parse_action("apollo+pan").unwrap(), 8);
    let mut s = r;
    s.apply(8).unwrap();
    assert_eq!((s.gods(), s.turn()), (["apollo", "pan"], Turn::Player(0)));
}

#[test]
fn a_turn_is_a_move_then_a_build_in_steps() {
    let s = gpos("none+pan", FLAT, "a1 e1 a5 e5", 0);
    let m = steps(&s);
    assert!(m.contains("a1-b2") && !m.iter().any(|t| t.contains('+')), "{m:?}");
    let s = play(&s, "a1-b2");
    assert_eq!(s.turn(), Turn::Player(0), "the mover builds next");
    assert_eq!(s.prompt().unwrap(), "Build next to b2");
    assert_eq!(steps(&s).len(), 8, "every neighbour of b2, the vacated a1 too");
    assert!(refused(&s, "e1-d1").contains("the worker has moved"));
    let s = play(&s, "+a1");
    assert_eq!((s.turn(), s.height(0)), (Turn::Player(1), 1));
}

#[test]
fn apollo_swaps_into_an_opponents_space_and_has_a_turn_where_others_have_none() {
    // X (Apollo) on a1, boxed in by O on a2 and b1 and a dome on b2.
    let s = gpos("apollo+none", "00000 00000 00000 04000 00000", "a1 e5 a2 b1", 0);
    let m = steps(&s);
    assert!(m.contains("a1-a2") && m.contains("a1-b1"), "{m:?}");
    let t = play(&s, "a1-a2");
    assert_eq!(t.workers(0).collect::<Vec<_>>(), vec![5, 24]);
    assert_eq!(t.workers(1).collect::<Vec<_>>(), vec![0, 1], "the opponent's worker is forced to a1");
    assert!(!steps(&t).contains("a2+a1"), "the forced worker's new space is occupied");
    // Without Apollo the same worker cannot move: only the other one can.
    let plain = gpos("pan+none", "00000 00000 00000 04000 00000", "a1 e5 a2 b1", 0);
    assert!(steps(&plain).iter().all(|t| t.starts_with("e5")));
    // Apollo's swap follows the climb rule and never takes his own worker's space.
    let s = gpos("apollo+none", "00000 00000 00000 20000 00000", "a1 b1 a2 e5", 0);
    let m = steps(&s);
    assert!(!m.contains("a1-a2") && !m.contains("a1-b1"), "{m:?}");
    // A swap that leaves no build is not a legal step (the turn could not be finished).
    let s = gpos("apollo+none", "04000 04000 44000 44000 00000", "a5 e1 a4 b1", 0);
    assert!(!steps(&s).contains("a5-a4"), "{:?}", steps(&s));
}

#[test]
fn artemis_may_move_twice_but_not_back() {
    let s = gpos("artemis+none", "00000 00000 00000 00000 00100", "a1 e5 c5 e3", 0);
    let s1 = play(&s, "a1-b1");
    let m = steps(&s1);
    assert!(m.contains("b1-c1") && m.contains("b1+a1") && !m.contains("b1-a1"), "{m:?}");
    assert!(s1.prompt().unwrap().contains("not back to a1"));
    // At the table the second move is one click on where the worker goes, beside the builds:
    // a square that takes both is a move with `m:` and a build with `b:`.
    let paths: BTreeSet<Vec<String>> = {
        let mut legal = Vec::new();
        s1.legal_actions(&mut legal);
        legal.iter().map(|&a| s1.action_path(a)).collect()
    };
    assert!(paths.contains(&vec!["m:c1".to_string()]) && paths.contains(&vec!["b:c1".to_string()]), "{paths:?}");
    assert!(paths.iter().all(|p| p.len() == 1), "no worker to click again: {paths:?}");
    let s2 = play(&s1, "b1-b2");
    let m = steps(&s2);
    assert!(m.iter().all(|t| t.starts_with("b2+")), "after the second move only builds: {m:?}");
    assert!(refused(&s2, "b2-b3").contains("has moved"));
    // Building declines the second move.
    assert_eq!(play(&s1, "b1+a1").turn(), Turn::Player(1));
    // The second move may win: level 2 to level 3.
    let s = gpos("artemis+none", "00000 00000 00000 03000 12000", "a1 e5 c5 e3", 0);
    let s = play(&play(&s, "a1-b1"), "b1-b2");
    assert_eq!(s.returns().unwrap()[0], 1.0, "a1 (1) to b1 (2) to b2 (3) wins");
}

#[test]
fn athena_moving_up_stops_the_opponent_climbing_next_turn_only() {
    let s = gpos("athena+none", "00000 00000 00000 00000 01000", "a1 a5 d1 e5", 0);
    let s = play(&play(&s, "a1-b1"), "b1+a1");
    assert_eq!(s.prompt().unwrap(), "Move a worker (Athena: not up this turn)");
    let m = steps(&s);
    // O on d1 may not climb a1? (not adjacent); on e5 nothing is up; build a block next to d1 and
    // check d1 cannot climb it.
    assert!(m.iter().all(|t| t.contains('-')), "{m:?}");
    let s = gpos("athena+none", "00000 00000 00000 00000 01010", "a1 a5 c2 e5", 0);
    let s = play(&play(&s, "a1-b1"), "b1+a2");
    let m = steps(&s);
    assert!(!m.contains("c2-d1") && m.contains("c2-c3"), "c2 may not climb d1: {m:?}");
    assert!(refused(&s, "c2-d1").contains("Athena moved up"));
    // The next turn Athena does not climb: the block is lifted.
    let s = play(&play(&s, "c2-c3"), "c3+c4");
    let s = play(&play(&s, "a5-b5"), "b5+a5");
    let m = steps(&s);
    assert!(m.contains("c3-d2") || m.contains("c3-b2"), "{m:?}");
    let climb = gpos("athena+none", "00000 00000 00000 01000 00000", "a5 e5 a1 e4", 1);
    assert!(steps(&climb).contains("a1-b2"), "no block before Athena climbs");
}

#[test]
fn athena_blocks_apollos_swap_and_minotaurs_push_upwards() {
    // Athena (X) climbs to b1 (level 1); O's Apollo on c2 (level 0) may not swap up into b1 but
    // may swap on the level.
    let base = "00000 00000 00000 00000 01000";
    let s = gpos("athena+apollo", base, "a1 e5 c2 e4", 0);
    let s = play(&play(&s, "a1-b1"), "b1+a1");
    let m = steps(&s);
    assert!(!m.contains("c2-b1"), "{m:?}");
    let s = gpos("athena+apollo", "00000 00000 00000 00000 01000", "a1 c1 c2 e4", 0);
    let s = play(&play(&s, "a1-b1"), "b1+a1");
    assert!(steps(&s).contains("c2-c1"), "a level swap is allowed");
    // Minotaur on c1 (level 0) may not push into b1 (level 1) after Athena climbed.
    let s = gpos("athena+minotaur", "00000 00000 00000 00000 01000", "a1 e5 c1 e3", 0);
    let s = play(&play(&s, "a1-b1"), "b1+b2");
    assert!(!steps(&s).contains("c1-b1"), "{:?}", steps(&s));
    // A worker forced up (Apollo swapping Athena's worker onto a higher space) is not Athena
    // moving up: no block follows from it.
    let s = gpos("apollo+athena", "00000 00000 00000 00000 10000", "b1 e5 a1 e3", 0);
    let s = play(&play(&s, "b1-a1"), "a1+a2");
    assert_eq!(s.workers(1).collect::<Vec<_>>(), vec![1, 14]);
    let s = play(&play(&s, "e3-d3"), "d3+d4");
    assert!(!s.prompt().unwrap().contains("Athena"), "{}", s.prompt().unwrap());
}

#[test]
fn atlas_domes_any_level_even_the_ground() {
    let s = gpos("atlas+none", FLAT, "a1 e5 c5 e3", 0);
    let s = play(&s, "a1-b1");
    let m = steps(&s);
    assert!(m.contains("b1+c1") && m.contains("b1+c1^"), "{m:?}");
    let t = play(&s, "b1+c1^");
    assert_eq!((t.height(2), t.blocks(2)), (4, 0), "a dome on level 0");
    assert!(!steps(&t).iter().any(|x| x.ends_with("-c1")), "nobody enters a dome");
    assert_eq!(s.describe_for(0, s.parse_action("b1+c1^").unwrap()), "builds a dome on c1 at level 0 (Atlas)");
    // On level 3 a build is a dome already: Atlas's dome step is not offered twice.
    let s = play(&gpos("atlas+none", "00000 00000 00000 00000 00300", "a1 e5 c5 e3", 0), "a1-b1");
    let m = steps(&s);
    assert!(m.contains("b1+c1") && !m.contains("b1+c1^"), "{m:?}");
    // The dome comes from the supply: with none left, Atlas builds blocks only.
    let g = with("atlas+none").with_supply(Supply::Official);
    let mut s = SantoriniState::from_parts(&g, FLAT, "a1 e5 c5 e3", 0).unwrap();
    s.dome = (1 << 10) | (1 << 11) | (1 << 12) | (1 << 13) | (1 << 14);
    for k in 0..13 {
        s.dome |= 1 << (15 + k % 5);
    }
    s.dome = 0b11111 << 15 | 0b11111 << 10 | 0b1111111 << 3;
    assert_eq!(s.dome.count_ones(), 17);
    let t = play(&s, "a1-b1");
    assert!(steps(&t).contains("b1+c1^"));
    s.dome |= 1 << 2;
    s.dome &= !(1 << 3);
    let t = play(&s, "a1-b1");
    assert!(steps(&t).iter().any(|x| x.ends_with('^')), "{:?}", steps(&t));
}

#[test]
fn demeter_builds_again_elsewhere_or_ends() {
    let s = play(&gpos("demeter+none", FLAT, "a1 e5 c5 e3", 0), "a1-b1");
    let s = play(&s, "b1+c1");
    assert_eq!(s.turn(), Turn::Player(0));
    let m = steps(&s);
    assert!(m.contains("end") && m.contains("b1+a1") && !m.contains("b1+c1"), "{m:?}");
    assert!(refused(&s, "b1+c1").contains("may not be on the same space"));
    assert_eq!(s.prompt().unwrap(), "Build once more (not on c1), or end the turn");
    let t = play(&s, "end");
    assert_eq!((t.turn(), t.height(2)), (Turn::Player(1), 1));
    let t = play(&s, "b1+a2");
    assert_eq!((t.turn(), t.height(2), t.height(5)), (Turn::Player(1), 1, 1));
}

#[test]
fn hephaestus_adds_a_block_on_the_first_but_never_a_dome() {
    let s = play(&gpos("hephaestus+none", "00000 00000 00000 00000 00100", "a1 e5 c5 e3", 0), "a1-b1");
    let s = play(&s, "b1+c1");
    assert_eq!(steps(&s), ["b1+c1", "end"].map(String::from).into_iter().collect());
    let t = play(&s, "b1+c1");
    assert_eq!((t.turn(), t.height(2)), (Turn::Player(1), 3));
    // On level 2 the first build makes level 3; a second would be a dome: the turn just ends.
    let s = play(&gpos("hephaestus+none", "00000 00000 00000 00000 00200", "a1 e5 c5 e3", 0), "a1-b1");
    let t = play(&s, "b1+c1");
    assert_eq!((t.turn(), t.height(2)), (Turn::Player(1), 3));
}

#[test]
fn hermes_moves_on_his_level_any_number_of_times_even_zero() {
    // a2 is level 1, the rest level 0; a dome on c2 and c3 and b3 walls a1 off from the right
    // except through b1, b2... and O stands on c5 and e5.
    let s = gpos("hermes+none", "00000 00000 04000 14000 00000", "a1 e1 c5 e5", 0);
    let m = steps(&s);
    // Zero moves: either worker builds at once.
    assert!(m.contains("a1+b1") && m.contains("e1+d2"), "{m:?}");
    let z = play(&s, "a1+b1");
    assert_eq!((z.turn(), z.height(1)), (Turn::Player(1), 1));
    // Under the power a worker walks anywhere its level reaches: a1 to d4 round the domes.
    assert!(m.contains("a1-d4") && m.contains("a1-a3"), "{m:?}");
    assert!(s.describe_for(0, s.parse_action("a1-d4").unwrap()).contains("walks to d4 on its level (Hermes)"));
    let s1 = play(&s, "a1-d4");
    assert_eq!(s1.prompt().unwrap(), "Walk your other worker on its level too, or build next to either worker");
    let m = steps(&s1);
    assert!(m.contains("e1-a1") && m.contains("e1+d1") && m.contains("d4+d5"), "{m:?}");
    assert!(!m.iter().any(|t| t.starts_with("d4-")), "the first worker has walked: {m:?}");
    let s2 = play(&s1, "e1-a1");
    let m = steps(&s2);
    assert!(m.iter().all(|t| t.contains('+')), "both have walked: only builds: {m:?}");
    let done = play(&s2, "a1+b1");
    assert_eq!((done.turn(), done.height(1)), (Turn::Player(1), 1));
    // Climbing is a normal turn: then only that worker builds.
    let up = play(&s, "a1-a2");
    assert!(steps(&up).iter().all(|t| t.starts_with("a2+")), "{:?}", steps(&up));
    // The walks are joint: in a corridor one cell wide the workers keep their order, and a walk
    // past the other worker's cell must be followed by that worker's walk out of the way.
    let corridor = gpos("hermes+none", "00444 44444 44444 44444 00000", "a1 b1 a5 b5", 0);
    let m = steps(&corridor);
    assert!(m.contains("a1-d1") && m.contains("b1-e1") && !m.contains("a1-e1"), "{m:?}");
    let past = play(&corridor, "a1-d1");
    assert_eq!(steps(&past), ["b1-e1"].map(String::from).into_iter().collect(), "b1 must get out of the way");
    let after = play(&past, "b1-e1");
    assert!(steps(&after).iter().all(|t| t.contains('+')));
}

#[test]
fn hermes_with_no_move_still_builds_and_does_not_lose() {
    // Both of X's workers are walled in by level-2 blocks: no move, but a build.
    let s = gpos("hermes+none", "00000 00000 00000 22000 02000", "a1 e5 c5 e3", 0);
    assert!(!s.is_terminal());
    let m = steps(&s);
    assert!(m.iter().any(|t| t.starts_with("a1+")) && !m.iter().any(|t| t.starts_with("a1-")), "{m:?}");
    let plain = gpos("pan+none", "00000 00000 00000 22000 02000", "a1 e5 c5 e3", 0);
    assert!(steps(&plain).iter().all(|t| t.starts_with("e5")));
}

#[test]
fn minotaur_pushes_in_line_but_not_onto_a_dome_a_worker_or_off_the_board() {
    let s = gpos("minotaur+none", "00000 00000 00000 00000 00000", "a1 e5 b2 d5", 0);
    let t = play(&s, "a1-b2");
    assert_eq!(t.workers(1).collect::<Vec<_>>(), vec![12, 23], "pushed from b2 to c3");
    assert!(s.describe_for(0, s.parse_action("a1-b2").unwrap()).contains("pushing the opponent's worker to c3"));
    let dome = gpos("minotaur+none", "00000 00000 00400 00000 00000", "a1 e5 b2 d5", 0);
    assert!(!steps(&dome).contains("a1-b2"), "c3 has a dome");
    let worker = gpos("minotaur+none", FLAT, "a1 c3 b2 d5", 0);
    assert!(!steps(&worker).contains("a1-b2"), "c3 holds a worker");
    let edge = gpos("minotaur+none", FLAT, "b2 e5 a1 d5", 0);
    assert!(!steps(&edge).contains("b2-a1"), "a push off the board");
    // The pushed worker lands at any level: onto level 3 it does not win.
    let high = gpos("minotaur+none", "00000 00000 00300 00000 00000", "a1 e5 b2 d5", 0);
    let t = play(&high, "a1-b2");
    assert_eq!((t.height(12), t.is_terminal()), (3, false));
    let t = play(&t, "b2+a1");
    assert!(!t.is_terminal());
    // Minotaur climbs by the usual rule.
    let up = gpos("minotaur+none", "00000 00000 00000 02000 00000", "a1 e5 b2 d5", 0);
    assert!(!steps(&up).contains("a1-b2"));
}

#[test]
fn pan_wins_by_dropping_two_levels_but_not_when_forced() {
    let s = gpos("pan+none", "00000 00000 00000 00000 20000", "a1 e5 c5 e3", 0);
    let t = play(&s, "a1-b1");
    assert!(t.is_terminal() && t.returns().unwrap()[0] == 1.0);
    assert!(s.describe_for(0, s.parse_action("a1-b1").unwrap()).contains("down two levels: wins"));
    let one = gpos("pan+none", "00000 00000 00000 00000 21000", "a1 e5 c5 e3", 0);
    assert!(!play(&one, "a1-b1").is_terminal(), "one level down is not enough");
    let three = gpos("pan+none", "00000 00000 00000 00000 30000", "a1 e5 c5 e3", 0);
    assert!(play(&three, "a1-b1").is_terminal());
    // Minotaur pushes Pan's worker off level 2 down to level 0; Apollo swaps it down: no win.
    // Minotaur (level 2 on b1) pushes Pan's worker from b2 (level 2) to b3 (level 0): a forced
    // drop, not Pan's move, so no win.
    let s = gpos("minotaur+pan", "00000 00000 00000 02000 12000", "b1 e5 b2 d5", 0);
    let t = play(&s, "b1-b2");
    assert_eq!((t.blocks(11), t.workers(1).next()), (0, Some(11)), "pushed from b2 to b3");
    assert!(!t.is_terminal(), "{t}");
}

#[test]
fn prometheus_builds_first_then_may_not_move_up() {
    let s = gpos("prometheus+none", "00000 00000 00000 00000 01000", "a1 e5 c5 e3", 0);
    let m = steps(&s);
    assert!(m.contains("a1+a2") && m.contains("a1-b1"), "{m:?}");
    let t = play(&s, "a1+a2");
    assert_eq!(t.prompt().unwrap(), "Move the worker on a1, not up");
    let m = steps(&t);
    assert!(m.contains("a1-b2") && !m.contains("a1-b1") && !m.contains("a1-a2"), "{m:?}");
    assert!(!m.iter().any(|x| x.starts_with("e5")), "the worker that built moves: {m:?}");
    let u = play(&play(&t, "a1-b2"), "b2+c3");
    assert_eq!((u.turn(), u.height(5), u.height(12)), (Turn::Player(1), 1, 1));
    // Without building first it climbs.
    let up = play(&s, "a1-b1");
    assert!(steps(&up).contains("b1+a1"));
    // A first build that would leave no move that is not up is no legal step.
    let s = gpos("prometheus+none", "00000 00000 00000 11000 01000", "a1 e5 c5 e3", 0);
    let m = steps(&s);
    assert!(!m.iter().any(|x| x.starts_with("a1+")), "every space round a1 is up: {m:?}");
}

#[test]
fn a_worker_with_no_turn_under_a_power_loses() {
    // X's workers on a1 and e1 are walled in by level-2 blocks: no move. Prometheus's build
    // first would leave no move either, so he has no turn and loses; Hermes builds without
    // moving, so he plays on.
    let walls = "00000 00000 00000 22022 02020";
    let s = gpos("prometheus+none", walls, "a1 e1 c5 e5", 0);
    assert!(s.is_terminal() && s.returns().unwrap()[1] == 1.0, "{s}");
    let s = gpos("hermes+none", walls, "a1 e1 c5 e5", 0);
    assert!(!s.is_terminal());
    // The same at the start of a turn: O's build walls X's last free space in.
    let walls = "00000 00000 00000 22022 00020";
    let s = gpos("prometheus+none", walls, "a1 e1 c5 e5", 1);
    assert!(!s.is_terminal());
    let s = play(&play(&s, "c5-c4"), "c4+c5");
    assert!(!s.is_terminal());
    let mut t = gpos("pan+atlas", walls, "a1 e1 c5 e3", 1);
    t = play(&t, "e3-d3");
    t = play(&t, "d3+d2^");
    assert!(!t.is_terminal(), "{t}");
}

#[test]
fn perft_counts_checked_by_hand() {
    // Atlas alone at a1 (O far away on e4 and e5; X's second worker on c5): a1 has 3 moves;
    // after each, every free neighbour takes a block or a dome.
    let s = gpos("atlas+none", FLAT, "a1 c5 e4 e5", 0);
    let a1 = 3; // b1, a2, b2
    let c5 = 5; // b5, d5, b4, c4, d4
    assert_eq!(perft(&s, 1), a1 + c5);
    // Builds after a move: the neighbours of the destination, less workers; twice (block, dome).
    // a1-b1: a1 a2 b2 c1 c2 → 5; a1-a2: a1 a3 b1 b2 b3 → 5; a1-b2: a1 a2 a3 b1 b3 c1 c2 c3 → 8.
    // c5-b5: a4 a5 b4 c4 c5 → 5; c5-d5: c4 c5 d4 (e4, e5 held) → 3; c5-b4: a3 a4 a5 b3 b5 c3 c4 c5 → 8;
    // c5-c4: b3 b4 b5 c3 c5 d3 d4 d5 → 8; c5-d4: c3 c4 c5 d3 d5 e3 (e4, e5 held) → 6.
    assert_eq!(perft(&s, 2), 2 * (5 + 5 + 8 + 5 + 3 + 8 + 8 + 6));
    // Demeter: after a1-b1 and a block on c1, a second build on a1 a2 b2 c2 or end: 5.
    let d = play(&play(&gpos("demeter+none", FLAT, "a1 c5 e4 e5", 0), "a1-b1"), "b1+c1");
    assert_eq!(perft(&d, 1), 5);
    // Artemis on a1, alone in a corner region: a1-b1 then b1 may go on to a2 b2 c1 c2 (not a1),
    // or build on a1 a2 b2 c1 c2.
    let a = play(&gpos("artemis+none", FLAT, "a1 c5 e4 e5", 0), "a1-b1");
    assert_eq!(perft(&a, 1), 4 + 5);
}

#[test]
fn the_official_supply_counts_every_gods_builds() {
    // 17 of the 18 level-2 blocks stand on the middle ranks; c1 is level 1.
    let g = with("hephaestus+none").with_supply(Supply::Official);
    let heights = "00000 22222 22222 22222 00100";
    let s = SantoriniState::from_parts(&g, heights, "a1 e1 a5 e5", 0).unwrap();
    let used = |s: &SantoriniState| s.level[1].count_ones();
    assert_eq!(used(&s), 15);
    let s = play(&play(&s, "a1-b1"), "b1+c1");
    assert_eq!((s.height(2), used(&s)), (2, 16));
    assert!(steps(&s).contains("b1+c1"), "a level-3 block is left: Hephaestus may add it");
    let heights = "00000 22222 22222 22222 00200";
    let mut full = SantoriniState::from_parts(&g, heights, "a1 e1 a5 e5", 0).unwrap();
    full.level[1] |= 1 << 0 | 1 << 4;
    full.level[0] |= 1 << 0 | 1 << 4;
    assert_eq!(used(&full), 18, "every level-2 block is on the board");
    // With no level-2 block left, b1 cannot climb a1 (2) or build c1 (2 to 3 is a level-3 block:
    // allowed); Hephaestus's second block on c1 would be a dome: the turn ends after one build.
    let t = play(&play(&full, "a1-b1"), "b1+c1");
    assert_eq!((t.turn(), t.height(2)), (Turn::Player(1), 3));
    // Atlas's domes come from the 18 domes.
    let g = with("atlas+none").with_supply(Supply::Official);
    let mut s = SantoriniState::from_parts(&g, FLAT, "a1 e1 a5 e5", 0).unwrap();
    s.dome = 0b11111 << 10 | 0b11111 << 15 | 0b0111_1110 << 2 & !(1 << 4) & ALL;
    let domes = s.dome.count_ones();
    let t = play(&s, "a1-b1");
    let m = steps(&t);
    assert_eq!(m.iter().any(|x| x.ends_with('^')), domes < 18, "{domes} domes used: {m:?}");
    s.dome |= 1 << 7 | 1 << 8 | 1 << 9;
    let t = play(&s, "a1-b1");
    if s.dome.count_ones() >= 18 {
        assert!(!steps(&t).iter().any(|x| x.ends_with('^')));
    }
}

/// An independent, plain statement of the rules: every complete turn of the player to move as
/// the position it leaves, written from the cards without the engine's steps or bitboards.
mod reference {
    use std::collections::BTreeSet;

    #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
    pub struct P {
        pub h: [u8; 25],
        pub dome: [bool; 25],
        /// Each player's two worker cells, ascending.
        pub w: [[usize; 2]; 2],
        pub won: bool,
        /// The next player may not move up (Athena moved up).
        pub block: bool,
    }

    fn rc(c: usize) -> (i32, i32) {
        ((c / 5) as i32, (c % 5) as i32)
    }

    fn adjacent(a: usize, b: usize) -> bool {
        let ((r1, c1), (r2, c2)) = (rc(a), rc(b));
        a != b && (r1 - r2).abs() <= 1 && (c1 - c2).abs() <= 1
    }

    fn holder(p: &P, c: usize) -> Option<usize> {
        (0..2).find(|&s| p.w[s].contains(&c))
    }

    fn put(p: &mut P, side: usize, from: usize, to: usize) {
        let i = p.w[side].iter().position(|&c| c == from).unwrap();
        p.w[side][i] = to;
        p.w[side].sort();
    }

    /// The moves of the worker on `from` (player `me`, god `god`): each as the position after it
    /// and the cell the worker reached. `no_up`: Athena's block or Prometheus's rule.
    fn moves(p: &P, me: usize, god: &str, from: usize, no_up: bool, not_to: Option<usize>) -> Vec<(P, usize)> {
        let mut out = Vec::new();
        for to in 0..25 {
            if !adjacent(from, to) || p.dome[to] || Some(to) == not_to {
                continue;
            }
            if p.h[to] > p.h[from] + 1 || (no_up && p.h[to] > p.h[from]) {
                continue;
            }
            let mut q = p.clone();
            match holder(p, to) {
                None => put(&mut q, me, from, to),
                Some(s) if s == me => continue,
                Some(_) if god == "apollo" => {
                    put(&mut q, 1 - me, to, from);
                    put(&mut q, me, from, to);
                }
                Some(_) if god == "minotaur" => {
                    let ((r0, c0), (r1, c1)) = (rc(from), rc(to));
                    let (r2, c2) = (2 * r1 - r0, 2 * c1 - c0);
                    if !(0..5).contains(&r2) || !(0..5).contains(&c2) {
                        continue;
                    }
                    let beyond = (r2 * 5 + c2) as usize;
                    if p.dome[beyond] || holder(p, beyond).is_some() {
                        continue;
                    }
                    put(&mut q, 1 - me, to, beyond);
                    put(&mut q, me, from, to);
                }
                Some(_) => continue,
            }
            if (p.h[from] < 3 && p.h[to] == 3) || (god == "pan" && p.h[from] >= p.h[to] + 2) {
                q.won = true;
            }
            out.push((q, to));
        }
        out
    }

    /// Builds next to `at`: (position after, built cell). `dome`: Atlas's dome too.
    fn builds(p: &P, at: usize, atlas: bool) -> Vec<(P, usize)> {
        let mut out = Vec::new();
        for b in 0..25 {
            if !adjacent(at, b) || p.dome[b] || holder(p, b).is_some() {
                continue;
            }
            let mut q = p.clone();
            if q.h[b] == 3 {
                q.dome[b] = true;
            } else {
                q.h[b] += 1;
            }
            out.push((q, b));
            if atlas && p.h[b] < 3 {
                let mut q = p.clone();
                q.dome[b] = true;
                out.push((q, b));
            }
        }
        out
    }

    /// Every complete turn of `me` from `p` (whose `block` says whether `me` may move up).
    pub fn turns(p: &P, me: usize, god: &str) -> BTreeSet<P> {
        let mut out = BTreeSet::new();
        let no_up = p.block;
        let finish = |q: &P, moved_up: bool, out: &mut BTreeSet<P>| {
            let mut q = q.clone();
            q.block = god == "athena" && moved_up;
            out.insert(q);
        };
        let won = |q: &P, out: &mut BTreeSet<P>| {
            let mut q = q.clone();
            q.block = false;
            out.insert(q);
        };
        for from in p.w[me] {
            // Prometheus's build first, then a move not up.
            let starts: Vec<(P, bool)> = if god == "prometheus" {
                let mut s = vec![(p.clone(), no_up)];
                s.extend(builds(p, from, false).into_iter().map(|(q, _)| (q, true)));
                s
            } else {
                vec![(p.clone(), no_up)]
            };
            for (start, cannot_climb) in starts {
                for (q, to) in moves(&start, me, god, from, cannot_climb, None) {
                    let up = start.h[to] > start.h[from];
                    if q.won {
                        won(&q, &mut out);
                        continue;
                    }
                    let mut after_moves = vec![(q.clone(), to)];
                    if god == "artemis" {
                        for (r, to2) in moves(&q, me, god, to, no_up, Some(from)) {
                            if r.won {
                                won(&r, &mut out);
                            } else {
                                after_moves.push((r, to2));
                            }
                        }
                    }
                    for (q, at) in after_moves {
                        let up = up || q.h[at] > start.h[from];
                        for (r, b) in builds(&q, at, god == "atlas") {
                            finish(&r, up, &mut out);
                            if god == "demeter" {
                                for (s, b2) in builds(&r, at, false) {
                                    if b2 != b {
                                        finish(&s, up, &mut out);
                                    }
                                }
                            }
                            if god == "hephaestus" && !r.dome[b] && r.h[b] < 3 {
                                let mut s = r.clone();
                                s.h[b] += 1;
                                finish(&s, up, &mut out);
                            }
                        }
                    }
                }
            }
        }
        if god == "hermes" {
            // Any number of level moves of either worker, then a build by either.
            let mut stack = vec![p.clone()];
            let mut seen = BTreeSet::new();
            while let Some(q) = stack.pop() {
                if !seen.insert(q.w) {
                    continue;
                }
                for at in q.w[me] {
                    for (r, _) in builds(&q, at, false) {
                        finish(&r, false, &mut out);
                    }
                    for to in 0..25 {
                        if adjacent(at, to) && !q.dome[to] && holder(&q, to).is_none() && q.h[to] == q.h[at] {
                            let mut r = q.clone();
                            put(&mut r, me, at, to);
                            stack.push(r);
                        }
                    }
                }
            }
        }
        out
    }
}

/// The engine's complete turns from a turn's start, as the positions they leave.
fn engine_turns(s: &SantoriniState) -> BTreeSet<reference::P> {
    let mut out = BTreeSet::new();
    let me = s.to_move;
    let mut stack = vec![*s];
    let mut legal = Vec::new();
    while let Some(t) = stack.pop() {
        t.legal_actions(&mut legal);
        for &a in &legal.clone() {
            let mut u = t;
            u.apply_unchecked(a);
            // A win by moving ends the turn at once; a turn that leaves the opponent no turn
            // also wins, but that is the next turn's business, not this turn's.
            if u.winner == me || (u.to_move != me) {
                out.insert(plain(&u, u.winner == me && u.to_move == me));
            } else {
                stack.push(u);
            }
        }
    }
    out
}

fn plain(s: &SantoriniState, won: bool) -> reference::P {
    let mut p = reference::P {
        h: [0; 25],
        dome: [false; 25],
        w: [[s.workers[0][0] as usize, s.workers[0][1] as usize], [s.workers[1][0] as usize, s.workers[1][1] as usize]],
        won,
        block: !won && s.steps.flags & gods::ATHENA_BLOCK != 0,
    };
    for c in 0..25 {
        p.h[c] = s.blocks(c);
        p.dome[c] = s.dome >> c & 1 != 0;
    }
    p
}

#[test]
fn every_complete_turn_matches_a_plain_statement_of_the_rules() {
    let mut rng = meeple_game::rng_from_seed(91);
    let mut buf = Vec::new();
    let mut turns = 0;
    let mut per_god = [0usize; 10];
    for game in 0..400 {
        let pair = [(game % 10) as u8 + 1, (game / 10 % 10) as u8 + 1];
        let g = Santorini::default().with_gods(Gods::Pair(pair));
        let mut s = g.initial_state();
        while !s.is_terminal() {
            if s.placed == 4 && s.steps.moves == 0 && s.steps.flags & !gods::ATHENA_BLOCK == 0 {
                let me = s.to_move as usize;
                let mut start = plain(&s, false);
                start.won = false;
                let want = reference::turns(&start, me, gods::god_name(s.gods[me]));
                let got = engine_turns(&s);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{}: {} turns, the plain rules {}\n{s}",
                    gods::god_name(s.gods[me]),
                    got.len(),
                    want.len()
                );
                if got != want {
                    let extra: Vec<_> = got.difference(&want).map(|p| (p.w, p.won, p.block)).take(3).collect();
                    let missing: Vec<_> = want.difference(&got).map(|p| (p.w, p.won, p.block)).take(3).collect();
                    panic!("{s}\nengine only: {extra:?}\nplain only: {missing:?}");
                }
                turns += 1;
                per_god[s.gods[me] as usize - 1] += 1;
            }
            let a = s.random_action(&mut rng, &mut buf);
            s.apply_unchecked(a);
        }
    }
    assert!(turns > 2000 && per_god.iter().all(|&n| n > 100), "{turns} turns: {per_god:?}");
}
