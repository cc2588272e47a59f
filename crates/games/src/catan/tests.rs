use super::rules::longest_road;
use super::*;
use meeple_game::{conformance, rng_from_seed};

pub(super) fn game(spec: &str) -> Catan {
    Catan::from_spec(&spec.parse().unwrap()).unwrap()
}

pub(super) fn legal(s: &CatanState) -> Vec<Action> {
    let mut v = Vec::new();
    s.legal_actions(&mut v);
    v
}

pub(super) fn play(s: &mut CatanState, moves: &str) {
    for m in moves.split_whitespace() {
        let a = s.parse_action(m).unwrap_or_else(|e| panic!("{m}: {e}"));
        s.apply(a).unwrap_or_else(|e| panic!("{m}: {e}\n{s}"));
    }
}

/// Setup corners, in placement order, for [`after_setup`].
fn setup_corners() -> Vec<usize> {
    setup().1
}

pub(super) fn setup() -> (CatanState, Vec<usize>) {
    let mut s = game("catan").initial_state();
    // Seats 0-3 then 3-0 (snake order): the first open corner from a fixed preference list,
    // then the first legal road from it.
    let preferred = [10usize, 20, 40, 50, 47, 36, 13, 3, 30, 25, 5, 17, 44, 33, 27, 1];
    let mut corners = Vec::new();
    for _ in 0..8 {
        let open = legal(&s);
        let v = *preferred.iter().find(|&&v| open.contains(&(SETTLE + v as u32))).expect("an open corner");
        s.apply(SETTLE + v as u32).unwrap();
        corners.push(v);
        let road = legal(&s)[0];
        s.apply(road).unwrap();
    }
    (s, corners)
}

/// A beginner board after a fixed setup, seat 0 to roll.
pub(super) fn after_setup() -> CatanState {
    setup().0
}

fn edge(a: usize, b: usize) -> usize {
    board::edge_between(a, b).unwrap()
}

#[test]
fn setup_is_in_snake_order_and_the_second_settlement_pays() {
    let mut s = game("catan").initial_state();
    let mut order = Vec::new();
    while matches!(s.phase, Phase::SetupSettlement | Phase::SetupRoad) {
        if s.phase == Phase::SetupSettlement {
            order.push(s.current_player().unwrap());
        }
        let a = legal(&s)[0];
        s.apply(a).unwrap();
    }
    assert_eq!(order, [0, 1, 2, 3, 3, 2, 1, 0]);
    let s = after_setup();
    assert_eq!(s.phase, Phase::Roll);
    assert_eq!(s.current_player(), Some(0));
    // Seat 0's second settlement (the last placed): one card per producing hex around it.
    let second = setup_corners()[7];
    let mut expected = [0u8; RESOURCES];
    for &h in &TOPOLOGY.vertex_hexes[second] {
        if s.terrain[h as usize] != DESERT {
            expected[s.terrain[h as usize] as usize] += 1;
        }
    }
    assert_eq!(s.seats[0].hand, expected);
    // Its first settlement paid nothing: only the second does.
    let total: u8 = (0..4).map(|p| s.seats[p].cards() as u8).sum();
    let bank: u8 = s.bank.iter().sum();
    assert_eq!(total as u32 + bank as u32, 95);
}

#[test]
fn distance_rule_and_road_connection() {
    let mut s = game("catan").initial_state();
    play(&mut s, "S10 R10-15");
    // No settlement on corner 10 or its neighbours.
    let open = legal(&s);
    assert!(!open.contains(&(SETTLE + 10)));
    let mut m = TOPOLOGY.vertex_neighbours[10];
    while m != 0 {
        assert!(!open.contains(&(SETTLE + m.trailing_zeros())));
        m &= m - 1;
    }
    assert_eq!(open.len(), 54 - 1 - TOPOLOGY.vertex_neighbours[10].count_ones() as usize);
    // The setup road must touch the settlement just placed.
    play(&mut s, "S20");
    let roads = legal(&s);
    assert_eq!(roads.len(), TOPOLOGY.vertex_edges[20].count_ones() as usize);
    assert!(s.parse_action("R10-16").is_err() || !roads.contains(&s.parse_action("R10-16").unwrap()));
    // A road cannot run through another seat's settlement.
    let mut t = after_setup();
    t.seats[0].settlements = 1 << 10;
    t.seats[0].roads = 1 << edge(10, 15);
    t.seats[0].road_ends = 1 << 10 | 1 << 15;
    t.seats[1].settlements |= 1 << 15;
    let spots = t.road_spots(0);
    // Edges out of 15 (other than the road itself) are closed to seat 0; edges at 10 are open.
    let mut out15 = TOPOLOGY.vertex_edges[15] & !(1u128 << edge(10, 15));
    while out15 != 0 {
        let e = out15.trailing_zeros() as usize;
        out15 &= out15 - 1;
        let (a, b) = TOPOLOGY.edge_vertices[e];
        if a != 10 && b != 10 {
            assert_eq!(spots >> e & 1, 0, "edge {a}-{b}");
        }
    }
    assert_ne!(spots & TOPOLOGY.vertex_edges[10], 0);
}

#[test]
fn production_follows_the_bank_shortage_rule() {
    let mut s = after_setup();
    // Two seats on the same grain hex, the bank short of grain: nobody gets grain.
    let grain_hex = (0..HEXES).find(|&h| s.terrain[h] == 3 && s.number[h] == 9).unwrap();
    let corners = TOPOLOGY.hex_vertices[grain_hex];
    for p in 0..4 {
        s.seats[p].settlements = 0;
        s.seats[p].cities = 0;
    }
    s.seats[0].settlements = 1 << corners[0];
    s.seats[1].cities = 1 << corners[2];
    s.robber = 9;
    s.bank[3] = 2; // owed 1 + 2 = 3
    let before: Vec<u8> = (0..4).map(|p| s.seats[p].hand[3]).collect();
    s.produce(9);
    assert_eq!((0..4).map(|p| s.seats[p].hand[3]).collect::<Vec<_>>(), before);
    assert_eq!(s.bank[3], 2);
    // Only one seat owed: it gets what is left.
    s.seats[1].cities = 0;
    s.seats[0].cities = 1 << corners[0];
    s.seats[0].settlements = 0;
    s.bank[3] = 1;
    s.produce(9);
    assert_eq!(s.seats[0].hand[3], before[0] + 1);
    assert_eq!(s.bank[3], 0);
    // Enough in the bank: everyone is paid; the robber's hex pays nothing.
    s.bank[3] = 19;
    s.seats[1].settlements = 1 << corners[3];
    let (a, b) = (s.seats[0].hand[3], s.seats[1].hand[3]);
    s.produce(9);
    assert_eq!((s.seats[0].hand[3], s.seats[1].hand[3]), (a + 2, b + 1));
    s.robber = grain_hex as u8;
    s.produce(9);
    assert_eq!((s.seats[0].hand[3], s.seats[1].hand[3]), (a + 2, b + 1));
}

#[test]
fn a_seven_discards_half_moves_the_robber_and_steals() {
    let mut s = after_setup();
    s.seats[0].hand = [2, 2, 2, 2, 1]; // 9 cards: discards 4
    s.seats[1].hand = [2, 2, 2, 1, 0]; // 7 cards: keeps them
    s.seats[2].hand = [8, 0, 0, 0, 0]; // 8: discards 4
    s.seats[3].hand = [0; RESOURCES];
    play(&mut s, "roll dice:7");
    assert_eq!(s.phase, Phase::Discard);
    assert_eq!(s.current_player(), Some(0));
    play(&mut s, "discard:brick discard:brick discard:lumber discard:ore");
    assert_eq!(s.seats[0].cards(), 5);
    assert_eq!(s.current_player(), Some(2));
    assert_eq!(legal(&s), [DISCARD]);
    play(&mut s, "discard:brick discard:brick discard:brick discard:brick");
    assert_eq!(s.seats[2].hand, [4, 0, 0, 0, 0]);
    assert_eq!(s.seats[1].cards(), 7);
    assert_eq!(s.phase, Phase::MoveRobber);
    assert!(!legal(&s).contains(&(ROBBER + s.robber as u32)));
    assert_eq!(legal(&s).len(), HEXES - 1);
    // Move to a hex where seat 2 (cards) and seat 3 (none) have buildings.
    let h = (0..HEXES).find(|&h| h != s.robber as usize).unwrap();
    for p in 0..4 {
        s.seats[p].settlements = 0;
    }
    s.seats[2].settlements = 1 << TOPOLOGY.hex_vertices[h][0];
    s.seats[3].settlements = 1 << TOPOLOGY.hex_vertices[h][3];
    play(&mut s, &format!("robber:H{h}"));
    assert_eq!(legal(&s), [STEAL + 2]);
    play(&mut s, "steal:2");
    let mut outcomes = Vec::new();
    s.chance_outcomes(&mut outcomes);
    assert_eq!(outcomes, [(0, 1.0)]);
    play(&mut s, "stole:brick");
    assert_eq!((s.seats[0].hand[0], s.seats[2].hand[0]), (1, 3));
    assert_eq!(s.phase, Phase::Main);
}

#[test]
fn development_cards_wait_a_turn_and_one_is_played_per_turn() {
    let mut s = after_setup();
    play(&mut s, "roll dice:2");
    s.seats[0].hand = [0, 0, 2, 2, 2];
    play(&mut s, "buy card:knight");
    assert!(!legal(&s).contains(&PLAY_KNIGHT), "bought this turn");
    play(&mut s, "buy card:monopoly");
    assert!(!legal(&s).iter().any(|&a| (PLAY_MONOPOLY..TAKE).contains(&a)));
    assert_eq!(s.deck, [13, 2, 2, 1, 5]);
    play(&mut s, "end");
    // Seat 0's next turn: both playable, but only one of them.
    for _ in 0..3 {
        play(&mut s, "roll dice:2 end");
    }
    assert_eq!(s.current_player(), Some(0));
    assert!(legal(&s).contains(&PLAY_KNIGHT));
    s.seats[1].hand = [3, 0, 0, 0, 0];
    s.seats[2].hand = [1, 0, 0, 0, 0];
    play(&mut s, "roll dice:2 monopoly:brick");
    assert_eq!(s.seats[0].hand[0], 5);
    assert_eq!((s.seats[1].hand[0], s.seats[2].hand[0]), (0, 0));
    assert!(!legal(&s).contains(&PLAY_KNIGHT), "one card per turn");
}

#[test]
fn year_of_plenty_and_road_building() {
    let mut s = after_setup();
    s.seats[0].dev[YEAR_OF_PLENTY] = 1;
    s.seats[0].dev[ROAD_BUILDING] = 1;
    play(&mut s, "roll dice:2");
    let ore = s.seats[0].hand[4];
    play(&mut s, "plenty take:ore take:ore");
    assert_eq!(s.seats[0].hand[4], ore + 2);
    assert_eq!(s.phase, Phase::Main);
    play(&mut s, "end");
    for _ in 0..3 {
        play(&mut s, "roll dice:2 end");
    }
    play(&mut s, "roll dice:2 roads");
    assert_eq!(s.phase, Phase::FreeRoads);
    let hand = s.seats[0].hand;
    let roads = s.seats[0].roads.count_ones();
    let a = legal(&s)[0];
    s.apply(a).unwrap();
    let a = legal(&s)[0];
    s.apply(a).unwrap();
    assert_eq!(s.seats[0].roads.count_ones(), roads + 2);
    assert_eq!(s.seats[0].hand, hand, "free roads cost nothing");
    assert_eq!(s.phase, Phase::Main);
}

#[test]
fn largest_army_needs_three_and_a_strictly_larger_count_to_move() {
    let mut s = after_setup();
    s.seats[1].knights = 3;
    s.army = Some(1);
    s.seats[0].knights = 2;
    s.seats[0].dev[KNIGHT] = 2;
    play(&mut s, "knight robber:H0");
    assert_eq!(s.seats[0].knights, 3);
    assert_eq!(s.army, Some(1), "a tie does not take it");
    if s.phase == Phase::Steal {
        let a = legal(&s)[0];
        s.apply(a).unwrap();
        let mut o = Vec::new();
        s.chance_outcomes(&mut o);
        s.apply(o[0].0).unwrap();
    }
    play(&mut s, "roll dice:2 end");
    for _ in 0..3 {
        play(&mut s, "roll dice:2 end");
    }
    play(&mut s, "knight robber:H1");
    assert_eq!(s.army, Some(0));
    assert_eq!(s.public_points(0), 2 + 2);
}

#[test]
fn longest_road_rules() {
    let mut s = after_setup();
    for p in 0..4 {
        s.seats[p] = Seat::default();
    }
    // A path of corners along the top coast for seat 0.
    let path = [0usize, 3, 7, 12, 8, 4, 1];
    let mut chain = Vec::new();
    for w in path.windows(2) {
        if let Some(e) = board::edge_between(w[0], w[1]) {
            chain.push(e);
        }
    }
    assert!(chain.len() >= 5, "test path");
    s.seats[0].settlements = 1 << path[0];
    for &e in &chain[..4] {
        s.place_road(0, e);
    }
    assert_eq!(s.seats[0].longest, 4);
    assert_eq!(s.road, None, "4 roads are not enough");
    s.place_road(0, chain[4]);
    assert_eq!(s.seats[0].longest, 5);
    assert_eq!(s.road, Some(0));
    // Another seat's settlement in the middle breaks it: 2 + 3, nobody has 5: set aside.
    let (_, mid) = TOPOLOGY.edge_vertices[chain[1]];
    let mid = if path.contains(&(mid as usize)) { mid as usize } else { TOPOLOGY.edge_vertices[chain[1]].0 as usize };
    s.place_settlement(1, mid);
    assert!(s.seats[0].longest < 5);
    assert_eq!(s.road, None);
    // The trail counter never reuses an edge but may revisit a corner (a loop of 6 counts 6).
    let ring: Vec<usize> = (0..6)
        .map(|k| {
            board::edge_between(TOPOLOGY.hex_vertices[9][k] as usize, TOPOLOGY.hex_vertices[9][(k + 1) % 6] as usize)
                .unwrap()
        })
        .collect();
    let roads = ring.iter().fold(0u128, |m, &e| m | 1 << e);
    assert_eq!(longest_road(roads, 0), 6);
    // Blocking one corner of the ring leaves a trail of 6 that starts and ends there.
    assert_eq!(longest_road(roads, 1 << TOPOLOGY.hex_vertices[9][0]), 6);
    // A fork: the longest branch pair counts, not the total.
    assert_eq!(longest_road(1 << ring[0] | 1 << ring[1], 0), 2);
}

#[test]
fn longest_road_tie_keeps_the_holder() {
    let mut s = after_setup();
    for p in 0..4 {
        s.seats[p] = Seat::default();
    }
    s.seats[0].longest = 5;
    s.road = Some(0);
    s.seats[1].longest = 5;
    s.award_road();
    assert_eq!(s.road, Some(0), "a tie leaves it with the holder");
    s.seats[1].longest = 6;
    s.award_road();
    assert_eq!(s.road, Some(1));
    // The holder falls below a tie of two others: set aside.
    s.seats[1].longest = 4;
    s.seats[2].longest = 5;
    s.seats[0].longest = 5;
    s.road = Some(1);
    s.award_road();
    assert_eq!(s.road, None);
}

#[test]
fn harbours_set_the_trade_rate() {
    let mut s = after_setup();
    play(&mut s, "roll dice:2");
    s.seats[0].harbours = 0;
    s.seats[0].hand = [4, 3, 2, 0, 0];
    let trades: Vec<String> = legal(&s).into_iter().filter(|&a| a >= TRADE).map(|a| s.action_to_string(a)).collect();
    assert_eq!(trades, ["trade:brick>lumber", "trade:brick>wool", "trade:brick>grain", "trade:brick>ore"]);
    s.seats[0].harbours = 1 << GENERIC_HARBOUR;
    assert!(legal(&s).contains(&s.parse_action("trade:lumber>ore").unwrap()));
    s.seats[0].harbours |= 1 << 2; // wool 2:1
    play(&mut s, "trade:wool>ore");
    assert_eq!(s.seats[0].hand, [4, 3, 0, 0, 1]);
    play(&mut s, "trade:lumber>grain");
    assert_eq!(s.seats[0].hand, [4, 0, 0, 1, 1]);
    // Building on a harbour corner gives the harbour.
    let mut t = game("catan").initial_state();
    let (a, _) = TOPOLOGY.harbour_vertices[1];
    play(&mut t, &format!("S{a}"));
    assert_eq!(t.seats[0].harbours, 1 << BEGINNER_HARBOURS[1]);
}

#[test]
fn a_win_comes_only_on_the_players_own_turn() {
    let mut s = after_setup();
    play(&mut s, "roll dice:2");
    // Seat 1 holds 10 points' worth of hidden cards, but it is seat 0's turn.
    s.seats[1].dev[VICTORY_POINT] = 8;
    s.seats[0].hand = [1, 1, 1, 1, 0];
    assert!(s.returns().is_none());
    play(&mut s, "end");
    // Seat 1's turn starts with 10 points: it wins at once.
    assert_eq!(s.returns().unwrap().as_slice(), [0.0, 1.0, 0.0, 0.0]);
    // Reaching 10 by a build ends the game on the spot.
    let mut s = after_setup();
    play(&mut s, "roll dice:2");
    s.seats[0].dev[VICTORY_POINT] = 7; // 2 settlements, one about to become a city
    s.seats[0].hand = [0, 0, 0, 2, 3];
    play(&mut s, &format!("C{}", setup_corners()[0]));
    assert_eq!(s.points(0), 10);
    assert_eq!(s.returns().unwrap().as_slice(), [1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn random_board_draws_are_weighted_and_reds_stay_apart() {
    let g = game("catan:board=random");
    let mut rng = rng_from_seed(3);
    let mut buf = Vec::new();
    for _ in 0..300 {
        let mut s = g.initial_state();
        while s.turn() == Turn::Chance {
            let a = s.random_action(&mut rng, &mut buf);
            s.apply(a).unwrap();
        }
        let mut terrain = [0; 6];
        for &t in &s.terrain {
            terrain[t as usize] += 1;
        }
        assert_eq!(terrain, TERRAIN_SET);
        let mut tokens = [0u8; 13];
        for &n in &s.number {
            tokens[n as usize] += 1;
        }
        tokens[0] -= 1; // the desert
        assert_eq!(tokens, TOKENS);
        for h in 0..HEXES {
            if matches!(s.number[h], 6 | 8) {
                for &g in &TOPOLOGY.hex_neighbours[h] {
                    assert!(!matches!(s.number[g as usize], 6 | 8));
                }
            }
        }
        let mut harbours = [0; 6];
        for &h in &s.harbour {
            harbours[h as usize] += 1;
        }
        assert_eq!(harbours, HARBOUR_SET);
        assert_eq!(s.terrain[s.robber as usize], DESERT);
    }
}

#[test]
fn determinize_redeals_only_what_the_viewer_has_not_seen() {
    let mut s = after_setup();
    s.seats[0].dev = [1, 0, 0, 0, 1];
    s.seats[1].dev = [0, 1, 0, 0, 0];
    s.seats[2].dev = [2, 0, 0, 1, 0];
    s.deck = [11, 1, 2, 1, 4];
    let mut rng = rng_from_seed(5);
    let mut seen_vp = false;
    for _ in 0..200 {
        let d = s.determinize(0, &mut rng);
        assert_eq!(d.seats[0].dev, s.seats[0].dev);
        for p in 1..4 {
            assert_eq!(d.seats[p].dev_cards(), s.seats[p].dev_cards());
        }
        let total = |x: &CatanState| {
            (0..DEV_KINDS)
                .map(|k| x.deck[k] as u32 + (0..4).map(|p| x.seats[p].dev[k] as u32).sum::<u32>())
                .collect::<Vec<_>>()
        };
        assert_eq!(total(&d), total(&s));
        seen_vp |= d.seats[2].dev[VICTORY_POINT] > 0;
        assert_eq!(d.seats[0].hand, s.seats[0].hand);
    }
    assert!(seen_vp, "opponents' cards are really resampled");
    // The observation of seat 0 does not depend on seat 2's card kinds.
    let mut other = s.clone();
    other.seats[2].dev = [0, 0, 0, 0, 3];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    s.observation(0, &mut a);
    other.observation(0, &mut b);
    assert_eq!(a, b);
    assert_eq!(a.len(), OBSERVATION_LEN);
}

#[test]
fn notation_round_trips_and_rejects_bad_moves() {
    let mut s = after_setup();
    s.trades = true;
    s.offers_per_turn = 3;
    let mut rng = rng_from_seed(9);
    let mut buf = Vec::new();
    for _ in 0..3000 {
        if s.is_terminal() {
            break;
        }
        if s.turn() != Turn::Chance {
            for a in legal(&s) {
                assert_eq!(s.parse_action(&s.action_to_string(a)).unwrap(), a);
            }
        }
        let a = s.random_action(&mut rng, &mut buf);
        assert_eq!(s.parse_action(&s.action_to_string(a)).unwrap(), a, "{}", s.action_to_string(a));
        s.apply(a).unwrap();
    }
    for bad in [
        "S54",
        "R1-40",
        "trade:ore>ore",
        "offer:ore>ore",
        "offer:ore+ore+ore>grain",
        "with:9",
        "monopoly:gold",
        "robber:H19",
        "dice:13",
        "fly",
        "steal:x",
    ] {
        let e = s.parse_action(bad).unwrap_err().to_string();
        assert!(!e.is_empty(), "{bad}");
    }
    let e = s.parse_action("monopoly:gold").unwrap_err().to_string();
    assert!(e.contains("brick, lumber, wool, grain, ore"), "{e}");
    assert!(Catan::from_spec(&"catan:players=5".parse().unwrap()).is_err());
    assert!(Catan::from_spec(&"catan:board=square".parse().unwrap()).unwrap_err().to_string().contains("square"));
}

#[test]
fn conformance() {
    for spec in [
        "catan",
        "catan:players=3",
        "catan:players=2,board=random",
        "catan:board=random,separate_reds=false",
        "catan:hidden_hands=true",
    ] {
        let g = game(spec);
        let config = conformance::Config::with_games(3);
        let report = conformance::check(&g, &config).unwrap();
        assert_eq!(report.games, config.games, "{spec}");
    }
}

/// Player trading on its own, so a long run is one command:
/// `MEEPLE_CONFORMANCE_GAMES=3400 MEEPLE_CONFORMANCE_DEEP_EVERY=25 cargo test --release -p
/// meeple-games catan::tests::conformance_with_trades` plays 10,200 games over the three specs.
#[test]
fn conformance_with_trades() {
    for spec in [
        "catan:trades=true",
        "catan:trades=true,players=3,hidden_hands=true",
        "catan:trades=true,players=2,board=random,offers=1",
    ] {
        let g = game(spec);
        let config = conformance::Config::with_games(3);
        let report = conformance::check(&g, &config).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(report.games, config.games, "{spec}");
        println!("{spec}: {} games, {} states, {} chance nodes", report.games, report.states, report.chance_nodes);
    }
}

#[test]
fn random_play_is_seat_balanced_and_finishes() {
    // Uniform random 4-player games: every seat wins a fair share, and games end by points.
    let g = game("catan");
    let mut rng = rng_from_seed(11);
    let mut buf = Vec::new();
    let mut wins = [0u32; 4];
    let games = 800;
    let mut draws = 0;
    for _ in 0..games {
        let mut s = g.initial_state();
        while !s.is_terminal() {
            let a = s.random_action(&mut rng, &mut buf);
            s.apply_unchecked(a);
        }
        match s.winner {
            Some(w) => wins[w as usize] += 1,
            None => draws += 1,
        }
    }
    assert!(draws < games / 20, "{draws} draws");
    for (p, &w) in wins.iter().enumerate() {
        let share = w as f64 / games as f64;
        assert!((0.17..0.33).contains(&share), "seat {p} won {share:.3} ({wins:?})");
    }
}

#[test]
fn piece_limits_and_the_turn_limit() {
    let mut s = after_setup();
    play(&mut s, "roll dice:2");
    s.seats[0].hand = [9, 9, 9, 9, 9];
    // Five settlements on the board: no sixth, however rich.
    let open = s.open_vertices() & !s.seats[0].road_ends;
    let mut m = open;
    let mut placed = s.seats[0].settlements.count_ones();
    while placed < 5 {
        let v = m.trailing_zeros() as usize;
        m &= m - 1;
        if s.open_vertices() >> v & 1 == 1 {
            s.seats[0].settlements |= 1 << v;
            placed += 1;
        }
    }
    s.seats[0].road_ends = (1u64 << VERTICES) - 1; // every corner reachable by road
    assert!(!legal(&s).iter().any(|&a| a < CITY), "a sixth settlement");
    assert!(legal(&s).iter().any(|&a| (CITY..ROAD).contains(&a)));
    // Fifteen roads: no sixteenth.
    let mut r = 0u128;
    for e in 0..15 {
        r |= 1 << e;
    }
    s.seats[0].roads = r;
    assert!(!legal(&s).iter().any(|&a| (ROAD..ROLL).contains(&a)), "a sixteenth road");
    // A game that reaches its turn limit ends as a draw with equal shares.
    let mut t = game("catan:turns=10").initial_state();
    let mut rng = rng_from_seed(1);
    let mut buf = Vec::new();
    while matches!(t.phase, Phase::SetupSettlement | Phase::SetupRoad) {
        let a = t.random_action(&mut rng, &mut buf);
        t.apply(a).unwrap();
    }
    while !t.is_terminal() {
        let a = if t.turn() == Turn::Chance {
            t.random_action(&mut rng, &mut buf)
        } else if legal(&t).contains(&END) {
            END
        } else {
            legal(&t)[0]
        };
        t.apply(a).unwrap();
    }
    assert_eq!(t.turns, 11);
    assert_eq!(t.returns().unwrap().as_slice(), [0.25; 4]);
    assert_eq!(t.metrics(), [("dice_rolls", 10.0), ("turns", 10.0)]);
}

#[test]
fn no_steal_without_a_victim_with_cards() {
    let mut s = after_setup();
    for p in 1..4 {
        s.seats[p].hand = [0; RESOURCES];
    }
    s.seats[0].hand = [0; RESOURCES];
    play(&mut s, "roll dice:7");
    assert_eq!(s.phase, Phase::MoveRobber);
    // Every hex: either no opponent with cards touches it, so play goes on without a steal.
    let h = (0..HEXES).find(|&h| h != s.robber as usize).unwrap();
    play(&mut s, &format!("robber:H{h}"));
    assert_eq!(s.phase, Phase::Main);
}

#[test]
fn hidden_hands_hide_a_steal_from_everyone_else() {
    // Seat 0 robs seat 1; seats 2 and 3 must not learn the card, seats 0 and 1 do.
    let steal = |card: &str| {
        let (mut s, _) = setup();
        s.hidden_hands = true;
        s.seats[1].hand = [1, 0, 0, 0, 1];
        for p in [2, 3] {
            s.seats[p].hand = [0; RESOURCES];
        }
        s.seats[0].hand = [0; RESOURCES];
        play(&mut s, "roll dice:7");
        let h = (0..HEXES)
            .find(|&h| {
                h != s.robber as usize && TOPOLOGY.hex_vertices[h].iter().any(|&v| s.seats[1].buildings() >> v & 1 == 1)
            })
            .unwrap();
        play(&mut s, &format!("robber:H{h}"));
        if s.phase == Phase::Steal {
            play(&mut s, "steal:1");
        }
        let mut note = Vec::new();
        for viewer in 0..4 {
            note.push(s.action_to_string_for(viewer, s.parse_action(card).unwrap()));
        }
        play(&mut s, card);
        (s, note)
    };
    let (a, note) = steal("stole:brick");
    let (b, _) = steal("stole:ore");
    assert_eq!(note, ["stole:brick", "stole:brick", "stole a card", "stole a card"]);
    for viewer in [2, 3] {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.observation(viewer, &mut x);
        b.observation(viewer, &mut y);
        assert_eq!(x, y, "seat {viewer} can tell the stolen card");
        assert_eq!(a.observation_string(viewer), b.observation_string(viewer));
    }
    let (mut x, mut y) = (Vec::new(), Vec::new());
    a.observation(0, &mut x);
    b.observation(0, &mut y);
    assert_ne!(x, y, "the thief knows");
    // Seat 2's worlds put either card with the thief, in proportion to the victim's hand.
    let mut rng = rng_from_seed(4);
    let mut brick = 0;
    for _ in 0..400 {
        let d = a.determinize(2, &mut rng);
        assert_eq!(d.seats[0].cards(), 1);
        assert_eq!(d.seats[1].cards(), 1);
        brick += d.seats[0].hand[0] as u32;
    }
    assert!((140..260).contains(&brick), "{brick} of 400 worlds gave the thief the brick");
    // The thief's own worlds keep the card it saw.
    assert!((0..50).all(|_| a.determinize(0, &mut rng).seats[0].hand == [1, 0, 0, 0, 0]));
    // Without the option everyone sees the card.
    let mut open = a.clone();
    open.hidden_hands = false;
    assert_eq!(open.visible_hand(2, 0).0, [1, 0, 0, 0, 0]);
    assert_eq!(a.visible_hand(2, 0), ([0, 0, 0, 0, 0], 1));
}

#[test]
fn the_text_map_names_every_corner_and_hex() {
    let mut s = game("catan").initial_state();
    let empty = s.map();
    play(&mut s, "S17 R12-17");
    let map = s.map();
    let numbers: Vec<usize> = map
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| w.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok())
        .collect();
    for v in 0..54 {
        assert!(numbers.contains(&v), "corner {v} is on the map\n{map}");
    }
    for h in 0..19 {
        assert!(map.contains(&format!("H{h} ")) || map.contains(&format!("H{h}\n")), "hex H{h}\n{map}");
    }
    // Seat 0's settlement on 17, and its road 12-17 (a vertical side, three rows) drawn in its
    // letter where the empty map has '|'.
    assert!(map.contains("17a"), "{map}");
    assert_eq!(map.matches('a').count(), empty.matches('a').count() + 4, "{map}");
    assert_eq!(map.matches('|').count() + 3, empty.matches('|').count(), "{map}");
    assert!(map.contains("robber"));
}

#[test]
fn refusals_name_the_rule_and_prompts_say_what_to_do() {
    let mut s = game("catan").initial_state();
    assert_eq!(s.prompt().unwrap(), "Place a starting settlement on a free corner");
    play(&mut s, "S10");
    assert!(s.prompt().unwrap().starts_with("Place a road next to the settlement"));
    let far = SETTLE + 40;
    assert!(s.illegal_reason(far).contains("not now — place a road"), "{}", s.illegal_reason(far));
    let road = ROAD + edge(40, TOPOLOGY.vertex_neighbours[40].trailing_zeros() as usize) as Action;
    assert!(s.illegal_reason(road).contains("must touch the settlement just placed"), "{}", s.illegal_reason(road));
    play(&mut s, "R10-15");
    let near = SETTLE + TOPOLOGY.vertex_neighbours[10].trailing_zeros();
    assert!(s.illegal_reason(near).contains("too close to another settlement"), "{}", s.illegal_reason(near));
    assert!(s.illegal_reason(SETTLE + 10).contains("that corner is taken"));
    // After the setup: roll first; building without the cards says what it costs.
    let mut t = after_setup();
    assert_eq!(t.prompt().unwrap(), "Roll the dice");
    assert!(t.illegal_reason(BUY).contains("not now — roll the dice"), "{}", t.illegal_reason(BUY));
    t.phase = Phase::Main;
    t.seats[0].hand = [0; RESOURCES];
    let corner = (0..54u32).find(|&v| t.settlement_spots(0) >> v & 1 == 1);
    if let Some(v) = corner {
        assert!(t.illegal_reason(SETTLE + v).contains("a settlement costs 1 brick, 1 lumber, 1 wool, 1 grain"));
    }
    assert!(t.illegal_reason(BUY).contains("a development card costs 1 wool, 1 grain, 1 ore"));
    assert!(t.illegal_reason(PLAY_KNIGHT).contains("you hold no knight card"), "{}", t.illegal_reason(PLAY_KNIGHT));
    let trade = t.illegal_reason(TRADE + 1);
    assert!(trade.contains("you need") && trade.contains("brick to trade at your rate"), "{trade}");
    assert!(t.illegal_reason(ROLL).contains("not now"));
    // In words, as each seat may know it.
    assert_eq!(t.describe_for(0, SETTLE + 12), "settlement at corner 12");
    assert_eq!(t.describe_for(0, END), "end the turn");
    t.phase = Phase::Discard;
    t.discards[0] = 4;
    assert_eq!(t.prompt().unwrap(), "Discard 4 cards: you hold more than 7 (one card at a time)");
}

#[test]
fn progress_cards_may_be_played_before_the_roll() {
    let mut s = after_setup();
    s.seats[0].dev[YEAR_OF_PLENTY] = 1;
    s.seats[0].dev[ROAD_BUILDING] = 1;
    s.seats[0].dev[MONOPOLY] = 1;
    assert!(legal(&s).contains(&PLAY_YEAR_OF_PLENTY) && legal(&s).contains(&PLAY_ROAD_BUILDING));
    assert!(legal(&s).contains(&(PLAY_MONOPOLY + 4)));
    assert_eq!(s.prompt().unwrap(), "Roll the dice (or play a development card first)");
    let ore = s.seats[0].hand[4];
    play(&mut s, "plenty take:ore take:ore");
    assert_eq!((s.phase, s.seats[0].hand[4]), (Phase::Roll, ore + 2), "the roll is still to come");
    assert_eq!(legal(&s), vec![ROLL], "one development card a turn");
    play(&mut s, "roll dice:2 end");
    for _ in 0..3 {
        play(&mut s, "roll dice:2 end");
    }
    let roads = s.seats[0].roads.count_ones();
    play(&mut s, "roads");
    assert_eq!(s.phase, Phase::FreeRoads);
    for _ in 0..2 {
        let a = legal(&s)[0];
        s.apply(a).unwrap();
    }
    assert_eq!((s.phase, s.seats[0].roads.count_ones()), (Phase::Roll, roads + 2));
    play(&mut s, "roll dice:2 end");
    for _ in 0..3 {
        play(&mut s, "roll dice:2 end");
    }
    s.seats[2].hand = [0, 0, 0, 0, 2];
    let ore = s.seats[0].hand[4];
    play(&mut s, "monopoly:ore");
    assert_eq!((s.phase, s.seats[0].hand[4], s.seats[2].hand[4]), (Phase::Roll, ore + 2, 0));
}
