use super::*;
use meeple_game::{Agent, Budget, conformance, perft};

fn game() -> Cathedral {
    Cathedral::default()
}

/// A mid-game position: the opening script is over and both first buildings count as placed,
/// so claims are live. Light has a castle and a manor far from the top-left corner where the
/// tests build, so the rest of the board is never a region dark could claim. Light to move.
fn midgame() -> CathedralState {
    let mut s = game().initial_state();
    s.decisions = 3;
    s.first_done = [true, true];
    s.to_move = 0;
    put(&mut s, 0, "castle@h1");
    put(&mut s, 0, "manor@f9");
    s
}

/// Puts a piece on the board with no claim and no turn change (to set up positions).
fn put(s: &mut CathedralState, player: usize, text: &str) {
    let saved = (s.to_move, s.decisions);
    s.to_move = player as u8;
    let id = s.parse_action(text).unwrap();
    let pl = s.table().placements[id as usize];
    match pl.building {
        None => s.cathedral = pl.mask,
        Some(b) => s.add_building(player, b as u8, pl.mask),
    }
    (s.to_move, s.decisions) = saved;
}

/// Plays a move for `player` through the checked apply (claims and turn order apply).
fn play(s: &mut CathedralState, player: usize, text: &str) {
    s.to_move = player as u8;
    let id = s.parse_action(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    s.apply(id).unwrap_or_else(|e| panic!("{text}: {e}\n{s}"));
}

fn sq(s: &CathedralState, cell: &str) -> u128 {
    let col = (cell.as_bytes()[0] - b'a') as usize;
    let row: usize = cell[1..].parse().unwrap();
    1u128 << ((row - 1) * s.size as usize + col)
}

#[test]
fn perft_from_the_start_for_each_variant_and_size() {
    let count = |spec: &str, d: u32| perft(&Cathedral::from_spec(&spec.parse().unwrap()).unwrap().initial_state(), d);
    assert_eq!(count("cathedral", 1), 224);
    assert_eq!(count("cathedral:size=8", 1), 120);
    assert_eq!(count("cathedral:variant=lehmann", 1), 2141, "dark's whole set on an empty board");
    assert_eq!(count("cathedral:variant=random_placer", 1), 2, "a coin toss");
    assert_eq!(count("cathedral:variant=random_placer", 2), 448);
    assert_eq!(count("cathedral:variant=random_placer,size=8", 2), 240);
    // Depth 2, standard: for each cathedral placement, dark's placements that avoid it,
    // counted straight from the placement table (no game logic involved).
    for size in [8usize, 10] {
        let t = PlacementTable::get(size);
        let dark: Vec<u128> = (0..11)
            .flat_map(|b| {
                let (lo, hi) = t.ranges[b][1];
                (lo..hi).map(|i| t.placements[i as usize].mask)
            })
            .collect();
        let expected: u64 = (t.cathedral.0..t.cathedral.1)
            .map(|c| {
                let cm = t.placements[c as usize].mask;
                dark.iter().filter(|&&m| m & cm == 0).count() as u64
            })
            .sum();
        assert_eq!(count(&format!("cathedral:size={size}"), 2), expected, "size {size}");
    }
    assert_eq!(count("cathedral", 2), 398_548);
    // Lehmann: dark's first building, then light's cathedral must avoid it.
    assert!(count("cathedral:variant=lehmann,size=8", 2) > 0);
}

#[test]
fn conformance_every_variant_and_size() {
    for spec in ["cathedral", "cathedral:variant=lehmann", "cathedral:variant=random_placer", "cathedral:size=8"] {
        let g = Cathedral::from_spec(&spec.parse().unwrap()).unwrap();
        let config = conformance::Config::with_games(150).deep_every(4);
        conformance::check(&g, &config).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
}

#[test]
fn opening_order_of_each_variant() {
    let s = game().initial_state();
    assert_eq!(s.turn(), Turn::Player(0), "standard: light places the cathedral");
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    assert!(legal.iter().all(|&a| s.action_to_string(a).starts_with("cathedral@")));
    let mut s2 = s.clone();
    play(&mut s2, 0, "cathedral@e5");
    assert_eq!(s2.turn(), Turn::Player(1), "then dark places the first building");
    play(&mut s2, 1, "castle@a1");
    assert_eq!(s2.turn(), Turn::Player(0));

    let lehmann = Cathedral::new(10, Variant::Lehmann).unwrap();
    let mut s = lehmann.initial_state();
    assert_eq!(s.turn(), Turn::Player(1), "lehmann: dark builds first on the empty board");
    play(&mut s, 1, "castle@a1");
    assert_eq!(s.turn(), Turn::Player(0));
    assert!(s.parse_action("tower@h8").map(|a| !s.is_legal(a)).unwrap(), "light must place the cathedral first");
    play(&mut s, 0, "cathedral@e5");
    assert_eq!(s.turn(), Turn::Player(0), "and its own first building in the same turn");
    play(&mut s, 0, "tower@h8");
    assert_eq!(s.turn(), Turn::Player(1));

    let coin = Cathedral::new(10, Variant::RandomPlacer).unwrap();
    let mut s = coin.initial_state();
    assert_eq!(s.turn(), Turn::Chance);
    s.apply(s.parse_action("dark").unwrap()).unwrap();
    assert_eq!(s.turn(), Turn::Player(1), "the coin chose dark to place the cathedral");
    play(&mut s, 1, "cathedral@e5");
    assert_eq!(s.turn(), Turn::Player(0), "and light places the first building");
}

#[test]
fn first_buildings_never_claim() {
    // Dark's first building closes the a1 corner; no territory. Neither does light's.
    let mut s = game().initial_state();
    play(&mut s, 0, "cathedral@e5");
    play(&mut s, 1, "inn@a1:2");
    assert_eq!(s.territory(1), 0, "dark's first building claims nothing\n{s}");
    play(&mut s, 0, "inn@i1:3");
    assert_eq!(s.territory(0), 0, "light's first building claims nothing\n{s}");
    // Dark's second building closes another corner: that one counts. The a1 corner, closed by
    // the first building, stays open.
    play(&mut s, 1, "inn@a9:1");
    assert_ne!(s.territory(1) & sq(&s, "a10"), 0, "{s}");
    assert_eq!(s.territory(1) & sq(&s, "a1"), 0, "{s}");
}

#[test]
fn a_diagonal_gap_does_not_enclose() {
    let mut s = midgame();
    put(&mut s, 1, "tavern@b1");
    play(&mut s, 1, "tavern@a2");
    assert_eq!(s.territory(1), 0, "a1 leaks through b2 diagonally\n{s}");
    play(&mut s, 1, "stable@b2");
    assert_ne!(s.territory(1) & sq(&s, "a1"), 0, "closed now\n{s}");
}

#[test]
fn the_cathedral_is_no_wall() {
    // a1 is boxed in by the cathedral (b1, b2) and a dark tavern on a2: not enclosed.
    let mut s = midgame();
    put(&mut s, 0, "cathedral@a1");
    assert_ne!(s.cathedral() & sq(&s, "b1") & !sq(&s, "a1"), 0);
    play(&mut s, 1, "tavern@a2");
    assert_eq!(s.territory(1) & sq(&s, "a1"), 0, "{s}");
}

#[test]
fn a_lone_building_is_captured_and_returns_to_hand() {
    let mut s = midgame();
    put(&mut s, 0, "tavern@a1");
    assert_eq!(s.hand(0)[Building::Tavern as usize], 1);
    put(&mut s, 1, "stable@b1:1");
    play(&mut s, 1, "tavern@a2");
    assert_eq!(s.buildings(0) & sq(&s, "a1"), 0, "captured\n{s}");
    assert_eq!(s.hand(0)[Building::Tavern as usize], 2, "back in light's hand");
    assert_ne!(s.territory(1) & sq(&s, "a1"), 0);
    // Light may place it again, but not in dark's territory.
    s.to_move = 0;
    let a = s.parse_action("tavern@a1").unwrap();
    assert!(s.illegal_reason(a).contains("opponent's territory"));
    assert!(s.is_legal(s.parse_action("tavern@j10").unwrap()));
}

#[test]
fn two_pieces_block_a_capture() {
    let mut s = midgame();
    put(&mut s, 0, "tavern@a1");
    put(&mut s, 0, "tavern@b1");
    put(&mut s, 1, "bridge@a2");
    play(&mut s, 1, "tavern@c1");
    assert_eq!(s.buildings(0) & (sq(&s, "a1") | sq(&s, "b1")), sq(&s, "a1") | sq(&s, "b1"), "{s}");
    assert_eq!(s.territory(1), 0);
}

#[test]
fn a_lone_cathedral_leaves_the_game() {
    // The cathedral in the top-left 4x4 corner; dark walls it in along row 5 and column e.
    let mut s = midgame();
    put(&mut s, 0, "cathedral@a1");
    put(&mut s, 1, "bridge@a5");
    put(&mut s, 1, "stable@d5");
    put(&mut s, 1, "stable@e1:1");
    put(&mut s, 1, "tavern@e3");
    let light_before = s.squares_in_hand(0);
    play(&mut s, 1, "tavern@e4");
    assert_eq!(s.cathedral(), 0, "removed for good\n{s}");
    assert_eq!(s.territory(1).count_ones(), 16, "{s}");
    // It goes to nobody's hand.
    assert_eq!(s.squares_in_hand(0), light_before);
    assert_eq!(s.squares_in_hand(1), 47 - 3 - 2 - 2 - 1 - 1);
}

#[test]
fn a_player_builds_inside_their_own_territory() {
    let mut s = midgame();
    put(&mut s, 1, "stable@b1:1");
    play(&mut s, 1, "stable@a2:1");
    assert_ne!(s.territory(1) & sq(&s, "a1"), 0, "{s}");
    s.to_move = 1;
    assert!(s.is_legal(s.parse_action("tavern@a1").unwrap()), "dark may build in its own territory");
    s.to_move = 0;
    assert!(!s.is_legal(s.parse_action("tavern@a1").unwrap()), "light may not");
}

#[test]
fn one_move_captures_in_two_regions() {
    let mut s = midgame();
    put(&mut s, 0, "tavern@a1");
    put(&mut s, 0, "tavern@a3");
    put(&mut s, 1, "bridge@b1:1");
    put(&mut s, 1, "stable@a4");
    play(&mut s, 1, "tavern@a2");
    assert_eq!(s.hand(0)[Building::Tavern as usize], 2, "both taverns captured\n{s}");
    assert_eq!(s.territory(1) & (sq(&s, "a1") | sq(&s, "a3")), sq(&s, "a1") | sq(&s, "a3"));
}

#[test]
fn passing_and_the_end_of_the_game() {
    // Light has nothing left; dark keeps moving until it has nothing either.
    let mut s = midgame();
    s.hand = [[0; 11], [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]];
    s.to_move = 1;
    play(&mut s, 1, "tavern@e5");
    assert_eq!(s.turn(), Turn::Player(1), "light cannot place, so dark moves again");
    assert!(s.to_string().ends_with("dark to move (light cannot place any building and passes)"), "{s}");
    play(&mut s, 1, "tavern@g7");
    assert_eq!(s.turn(), Turn::Terminal, "neither can place");
    assert_eq!(s.returns().unwrap().as_slice(), &[0.5, 0.5], "0 squares each: a draw");
}

#[test]
fn scoring_counts_squares_left_in_hand() {
    let mut s = midgame();
    s.over = true;
    s.hand = [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]];
    assert_eq!((s.squares_in_hand(0), s.squares_in_hand(1)), (5, 3));
    assert_eq!(s.returns().unwrap().as_slice(), &[0.0, 1.0], "fewer squares left wins");
    assert_eq!(s.scores().as_slice(), &[-5.0, -3.0]);
}

#[test]
fn chirality_and_no_flips() {
    let s = midgame();
    let mask = |s: &CathedralState, p: usize, text: &str| {
        let mut x = s.clone();
        x.to_move = p as u8;
        x.table().placements[x.parse_action(text).unwrap() as usize].mask
    };
    // Light's abbey covers a1 b1 b2 c2; dark's is the mirror image: b1 c1 a2 b2.
    let light = mask(&s, 0, "abbey@a1");
    let dark = mask(&s, 1, "abbey@a1");
    assert_eq!(light, sq(&s, "a1") | sq(&s, "b1") | sq(&s, "b2") | sq(&s, "c2"));
    assert_eq!(dark, sq(&s, "b1") | sq(&s, "c1") | sq(&s, "a2") | sq(&s, "b2"));
    // Light can never cover dark's shape with its abbey (rotations only).
    let t = s.table();
    let (lo, hi) = t.ranges[Building::Abbey as usize][0];
    assert!((lo..hi).all(|i| t.placements[i as usize].mask != dark));
    let mut x = s.clone();
    x.to_move = 0;
    let dark_id = {
        let mut d = s.clone();
        d.to_move = 1;
        d.parse_action("abbey@a1").unwrap()
    };
    assert!(x.illegal_reason(dark_id).contains("mirror images"));
}

#[test]
fn notation_reads_and_explains() {
    let s = midgame();
    for text in ["castle@c3:2", "tavern@j10", "cathedral@d4:1", "stable@a1:1"] {
        let a = s.parse_action(text).unwrap();
        assert_eq!(s.action_to_string(a), text);
    }
    for (text, reason) in [
        ("castle", "write NAME@CELL"),
        ("pagoda@c3", "unknown building 'pagoda'"),
        ("castle@z3", "not a square"),
        ("castle@c3:7", "castle has 4 orientation(s)"),
        ("bridge@j1", "does not fit"),
    ] {
        let err = s.parse_action(text).unwrap_err().to_string();
        assert!(err.contains(reason), "{text}: {err}");
    }
}

#[test]
fn the_largest_first_agent_plays_its_largest_building() {
    let mut s = game().initial_state();
    play(&mut s, 0, "cathedral@e5");
    let mut agent = LargestFirstAgent::new(1);
    let a = agent.act(&s, &Budget::UNLIMITED).unwrap();
    let b = s.table().placements[a as usize].building.unwrap();
    assert_eq!(b.squares(), 5, "a five-square building first: {}", s.action_to_string(a));
}

#[test]
fn the_neighbourhood_is_symmetric_on_both_boards() {
    // Every square's 8-neighbourhood, checked both ways against row/column arithmetic; an
    // off-board bit once wrapped from the last square onto the first column.
    for size in [8u8, 10] {
        let s = Cathedral::new(size, Variant::Standard).unwrap().initial_state();
        let n = size as i32;
        for a in 0..n * n {
            let got = s.dilate(1u128 << a);
            for b in 0..n * n {
                let near = (a / n - b / n).abs() <= 1 && (a % n - b % n).abs() <= 1;
                assert_eq!(got >> b & 1 == 1, near, "size {size}: squares {a} and {b}");
            }
        }
    }
}

#[test]
fn the_pieces_view_and_the_preview_of_a_move() {
    let s = game().initial_state();
    let view = s.text_view(0, "pieces").unwrap();
    // The cathedral waits for light: all its orientations, then light's buildings.
    assert!(view.starts_with("cathedral (neutral)\n   :0    :1     :2    :3\n   .#.   .#..   .#.   ..#.\n"), "{view}");
    assert!(view.contains("light castle, 5 squares\n   :0    :1   :2    :3\n   ###   ##   #.#   ##\n"), "{view}");
    assert!(view.contains("light tavern x2, 1 squares"), "{view}");
    assert!(!view.contains("dark "), "only the viewer's hand");
    // Dark's abbey is light's mirror image.
    let dark = s.text_view(1, "pieces").unwrap();
    assert!(dark.contains("dark abbey, 4 squares\n   :0    :1\n   .##   #."), "{dark}");
    assert_eq!(s.text_view(0, "cards"), None);
    // The preview draws the move's squares and nothing else changes.
    let a = s.parse_action("cathedral@c3").unwrap();
    let picture = s.preview(a).unwrap();
    assert_eq!(picture.matches('*').count(), 6 + 1, "six squares and the legend: {picture}");
    assert!(picture.contains(" 5  . . * * * ."), "{picture}");
}

#[test]
fn action_planes_are_one_per_building_set_and_orientation() {
    for size in [8, 10] {
        let g = Cathedral::from_spec(&format!("cathedral:size={size}").parse().unwrap()).unwrap();
        let t = g.table();
        let planes = g.action_planes().unwrap();
        let kinds = t.cathedral_orientations as usize
            + BUILDINGS
                .iter()
                .map(|&b| {
                    let [light, dark] = t.orientation_counts[b as usize];
                    light as usize + if b.chiral() { dark as usize } else { 0 }
                })
                .sum::<usize>();
        assert_eq!(planes.planes, kinds, "size {size}");
        // By hand: the cathedral 4; tavern 1, stable 2, inn 4, bridge 2, square 1, manor 4,
        // abbey 2 + 2 mirrored, academy 4 + 4 mirrored, infirmary 1, castle 4, tower 4.
        assert_eq!(kinds, 39);
        assert_eq!(planes.index.len(), t.placements.len());
        // The first placement is the cathedral's first orientation in the top-left corner.
        assert_eq!(planes.index[0], 0);
        // A placement lands on its anchor's cell; two with the same building, set and
        // orientation share a plane.
        let cells = size * size;
        for (p, &i) in t.placements.iter().zip(&planes.index) {
            assert_eq!(i as usize % cells, p.anchor.0 as usize * size + p.anchor.1 as usize);
        }
        let tavern = t.ranges[Building::Tavern as usize][0].0 as usize;
        assert_eq!(planes.index[tavern] as usize / cells, planes.index[tavern + 1] as usize / cells);
    }
    // Distinct cells, all within the planes: the conformance check.
    conformance::check(&game(), &conformance::Config::with_games(1)).unwrap();
}

#[test]
fn ownership_counts_buildings_and_territory_for_their_owner() {
    let mut s = midgame();
    put(&mut s, 0, "cathedral@e5");
    put(&mut s, 1, "tavern@b1");
    play(&mut s, 1, "tavern@a2");
    play(&mut s, 1, "stable@b2");
    let cell = |name: &str| sq(&s, name).trailing_zeros() as usize;
    let mut own = Vec::new();
    assert!(s.ownership(1, &mut own));
    assert_eq!(own.len(), 100);
    assert_eq!(own[cell("a1")], 1.0, "dark's territory\n{s}");
    assert_eq!(own[cell("b1")], 1.0, "dark's tavern");
    assert_eq!(own[cell("h1")], -1.0, "light's castle");
    assert_eq!(own[cell("e5")], 0.0, "the cathedral is nobody's");
    assert_eq!(own[cell("d8")], 0.0, "an open square");
    let held = |v: f32| own.iter().filter(|&&x| x == v).count() as u32;
    assert_eq!(held(1.0), (s.pieces[1] | s.territory(1)).count_ones());
    assert_eq!(held(-1.0), (s.pieces[0] | s.territory(0)).count_ones());
    let mut light = Vec::new();
    assert!(s.ownership(0, &mut light));
    assert!(light.iter().zip(&own).all(|(a, b)| *a == -*b), "light's view is dark's negated");
}
