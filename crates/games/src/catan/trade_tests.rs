//! Player trading: offers, answers and their limits, one hand-built position each.

use super::tests::{after_setup, game, legal, play};
use super::*;
use meeple_game::rng_from_seed;
/// [`after_setup`] with player trading on (`offers` a turn), seat 0 rolled a 2 (which pays
/// nobody on the beginner map), hands set by the test.
fn trading(offers: u8) -> CatanState {
    let mut s = after_setup();
    s.trades = true;
    s.offers_per_turn = offers;
    play(&mut s, "roll dice:2");
    for p in 0..4 {
        s.seats[p].hand = [0; RESOURCES];
    }
    s
}

fn offers(s: &CatanState) -> Vec<String> {
    legal(s).into_iter().filter(|a| (OFFER..ACCEPT).contains(a)).map(|a| s.action_to_string(a)).collect()
}

#[test]
fn the_offer_set_is_every_small_exchange_of_different_resources() {
    let mut seen = std::collections::HashSet::new();
    let mut sizes = std::collections::HashMap::new();
    for o in OFFERS {
        assert!(seen.insert(o), "{o:?} twice");
        let (g, t) = (o.give.iter().sum::<u8>(), o.get.iter().sum::<u8>());
        *sizes.entry((g, t)).or_insert(0) += 1;
        assert!((0..RESOURCES).all(|r| o.give[r] == 0 || o.get[r] == 0), "{o:?} has a resource on both sides");
    }
    assert_eq!(sizes, [((1, 1), 20), ((1, 2), 50), ((2, 1), 50)].into_iter().collect());
    // Counted independently: one-for-two is a card, then a pair (doubles too) of the other four.
    assert_eq!(5 * 4 + 2 * 5 * (4 + 6), OFFER_KINDS);
    let g = game("catan:trades=true");
    assert_eq!(g.num_actions(), NUM_ACTIONS_TRADING as usize);
    assert_eq!(g.observation_shape(), vec![OBSERVATION_LEN + TRADE_FEATURES]);
    let plain = game("catan");
    assert_eq!(plain.num_actions(), NUM_ACTIONS as usize, "without trading the action ids are as before");
    assert_eq!(plain.observation_shape(), vec![OBSERVATION_LEN]);
    assert_eq!(g.spec().to_string(), game(&g.spec().to_string()).spec().to_string());
    let e = Catan::from_spec(&"catan:offers=2".parse().unwrap()).unwrap_err().to_string();
    assert!(e.contains("trades=true"), "{e}");
}

#[test]
fn an_offer_is_answered_in_turn_order_and_the_mover_picks_one_accepter() {
    let mut s = trading(3);
    s.seats[0].hand = [0, 0, 1, 0, 0];
    s.seats[1].hand = [0, 0, 0, 0, 2];
    s.seats[3].hand = [1, 0, 0, 0, 3];
    assert!(offers(&s).contains(&"offer:wool>ore+ore".to_string()));
    assert!(offers(&s).iter().all(|o| o.starts_with("offer:wool>")), "only wool can be offered: {:?}", offers(&s));
    // A page builds an offer in three clicks: offer, the cards to give, the cards to ask for.
    let a = s.parse_action("offer:wool>ore+ore").unwrap();
    assert_eq!(s.action_path(a), ["btn:offer", "give:wool", "get:ore+ore"]);
    play(&mut s, "offer:wool>ore+ore");
    assert_eq!(s.turn(), Turn::Player(1));
    assert_eq!(s.prompt().unwrap(), "Seat 0 offers 1 wool for 2 ore: accept or decline");
    assert_eq!(s.action_path(ACCEPT), ["btn:accept"]);
    play(&mut s, "accept");
    // Seat 2 holds no ore: it can only decline, and is told why.
    assert_eq!(s.turn(), Turn::Player(2));
    assert_eq!(legal(&s), vec![DECLINE]);
    assert_eq!(s.prompt().unwrap(), "Seat 0 offers 1 wool for 2 ore: you cannot accept (you hold 0 ore); decline");
    // Where hands are hidden the prompt, which every viewer sees, says nothing of them.
    let mut hidden = s.clone();
    hidden.hidden_hands = true;
    assert_eq!(hidden.prompt().unwrap(), "Seat 0 offers 1 wool for 2 ore: accept or decline");
    let e = s.apply(ACCEPT).unwrap_err().to_string();
    assert!(e.contains("do not hold"), "{e}");
    play(&mut s, "decline accept");
    assert_eq!(s.turn(), Turn::Player(0));
    assert_eq!(legal(&s), vec![TRADE_WITH + 1, TRADE_WITH + 3, WITHDRAW]);
    assert!(s.apply(TRADE_WITH + 2).unwrap_err().to_string().contains("did not accept"));
    let bank = s.bank;
    assert_eq!(s.describe_for(0, TRADE_WITH + 3), "trade 1 wool for 2 ore with seat 3");
    play(&mut s, "with:3");
    assert_eq!(s.seats[0].hand, [0, 0, 0, 0, 2]);
    assert_eq!(s.seats[3].hand, [1, 0, 1, 0, 1]);
    assert_eq!(s.seats[1].hand, [0, 0, 0, 0, 2], "seat 1 accepted but was not chosen");
    assert_eq!((s.bank, s.phase, s.trades_made), (bank, Phase::Main, 1));
    assert!(s.metrics().contains(&("player_trades", 1.0)));
}

#[test]
fn an_offer_nobody_takes_or_the_mover_withdraws_is_not_made_again_that_turn() {
    let mut s = trading(3);
    s.seats[0].hand = [0, 0, 2, 0, 0];
    s.seats[1].hand = [0, 0, 0, 1, 0];
    play(&mut s, "offer:wool>grain decline decline decline");
    assert_eq!(s.phase, Phase::Main);
    assert_eq!(s.seats[0].hand, [0, 0, 2, 0, 0]);
    assert!(!offers(&s).contains(&"offer:wool>grain".to_string()));
    let e = s.apply(s.parse_action("offer:wool>grain").unwrap()).unwrap_err().to_string();
    assert!(e.contains("not made again"), "{e}");
    play(&mut s, "offer:wool+wool>grain accept decline decline withdraw");
    assert_eq!((s.phase, s.seats[0].hand, s.seats[1].hand), (Phase::Main, [0, 0, 2, 0, 0], [0, 0, 0, 1, 0]));
    assert!(!offers(&s).contains(&"offer:wool+wool>grain".to_string()));
    // A new turn forgets them.
    play(&mut s, "end roll dice:2 end roll dice:2 end roll dice:2 end roll dice:2");
    for p in 0..4 {
        s.seats[p].hand = [0; RESOURCES];
    }
    s.seats[0].hand = [0, 0, 2, 0, 0];
    assert!(offers(&s).contains(&"offer:wool>grain".to_string()));
}

#[test]
fn the_offers_a_turn_are_limited_and_a_trade_may_be_repeated() {
    let mut s = trading(2);
    s.seats[0].hand = [0, 0, 3, 0, 0];
    s.seats[1].hand = [0, 0, 0, 3, 0];
    play(&mut s, "offer:wool>grain accept decline decline with:1");
    assert!(offers(&s).contains(&"offer:wool>grain".to_string()), "a trade made may be offered again");
    play(&mut s, "offer:wool>grain accept decline decline with:1");
    assert_eq!(s.seats[0].hand, [0, 0, 1, 2, 0]);
    assert!(offers(&s).is_empty(), "two offers a turn");
    let e = s.apply(s.parse_action("offer:wool>ore").unwrap()).unwrap_err().to_string();
    assert!(e.contains("2 offers a turn"), "{e}");
    // Without trading the moves do not exist.
    let mut plain = after_setup();
    play(&mut plain, "roll dice:2");
    let e = plain.apply(plain.parse_action("offer:wool>ore").unwrap()).unwrap_err().to_string();
    assert!(e.contains("trades=false"), "{e}");
    assert!(legal(&plain).iter().all(|&a| a < NUM_ACTIONS));
}

#[test]
fn an_offer_is_made_only_after_the_roll_on_ones_own_turn() {
    let mut s = after_setup();
    s.trades = true;
    s.offers_per_turn = 3;
    s.seats[0].hand = [1, 1, 1, 1, 1];
    assert!(offers(&s).is_empty(), "before the roll");
    play(&mut s, "roll dice:2");
    // Every one-for-one (20) and one-for-two (5 x 10), and two different cards for one (5 x 6).
    assert_eq!(offers(&s).len(), 20 + 50 + 30);
}

#[test]
fn an_offer_pending_has_hand_checkable_perft_counts() {
    let mut s = trading(3);
    s.seats[0].hand = [0, 0, 1, 0, 0];
    s.seats[1].hand = [0, 0, 0, 0, 2];
    s.seats[3].hand = [0, 0, 0, 0, 2];
    play(&mut s, "offer:wool>ore+ore");
    // Seat 1: accept or decline; seat 2 (no ore): decline; seat 3: accept or decline.
    assert_eq!(meeple_game::perft(&s, 3), 2 * 2);
    // Then: both accepted, trade with 1 or 3 or withdraw (3); one accepted, trade or withdraw
    // (2 each); nobody, the main phase's moves with that offer spent.
    let mut nobody = s.clone();
    play(&mut nobody, "decline decline decline");
    let main = legal(&nobody).len() as u64;
    // The wool for each other card (4) or pair of them (10), less the spent offer.
    assert_eq!(main, legal(&trading(3)).len() as u64 + 4 + 10 - 1);
    assert_eq!(meeple_game::perft(&s, 4), 3 + 2 + 2 + main);
}

#[test]
fn with_hidden_hands_an_offer_shows_the_cards_and_worlds_keep_them() {
    // Seat 0 steals seat 1's only card (ore) out of seat 2's sight, then offers ore.
    let mut s = after_setup();
    s.trades = true;
    s.offers_per_turn = 3;
    s.hidden_hands = true;
    for p in 0..4 {
        s.seats[p].hand = [0; RESOURCES];
    }
    s.seats[1].hand = [0, 0, 1, 0, 1];
    play(&mut s, "roll dice:7");
    let h = (0..HEXES)
        .find(|&h| {
            h != s.robber as usize
                && TOPOLOGY.hex_vertices[h].iter().any(|&v| s.seats[1].buildings() >> v & 1 == 1)
                && !TOPOLOGY.hex_vertices[h]
                    .iter()
                    .any(|&v| (s.seats[2].buildings() | s.seats[3].buildings()) >> v & 1 == 1)
        })
        .unwrap();
    play(&mut s, &format!("robber:H{h}"));
    if s.phase == Phase::Steal {
        play(&mut s, "steal:1");
    }
    play(&mut s, "stole:ore");
    assert_eq!(s.visible_hand(2, 0), ([0, 0, 0, 0, 0], 1), "seat 2 did not see the card");
    s.seats[2].hand = [0, 0, 0, 2, 0];
    play(&mut s, "offer:ore>grain");
    assert_eq!(s.visible_hand(2, 0), ([0, 0, 0, 0, 1], 0), "the offer shows the ore");
    play(&mut s, "decline accept");
    // Seat 3's worlds keep the ore with seat 0 and seat 2's grain with seat 2.
    let mut rng = rng_from_seed(8);
    for _ in 0..50 {
        let d = s.determinize(3, &mut rng);
        assert_eq!(d.seats[0].hand[4], 1);
        assert!(d.seats[2].hand[3] >= 1);
    }
    play(&mut s, "decline with:2");
    assert_eq!((s.seats[0].hand, s.seats[2].hand), ([0, 0, 0, 1, 0], [0, 0, 0, 1, 1]));
}

#[test]
fn catan_value_trades_only_when_it_gains_more_than_the_other_side() {
    use meeple_game::{Agent, Budget};
    let budget = Budget::default();
    // Seat 0 holds a wool and two ore, a grain short of a development card; seat 1 is an ore
    // short of a city, with grain to spare. Ore for grain pays seat 0's card (1) and seat 1's
    // city (3): seat 0 offers it and seat 1 takes it.
    let mut s = trading(3);
    s.seats[0].hand = [0, 0, 1, 0, 2];
    s.seats[1].hand = [0, 0, 0, 3, 2];
    let a = ValueAgent::new(1).act(&s, &budget).unwrap();
    assert_eq!(s.action_to_string(a), "offer:ore>grain");
    let mut none = s.clone();
    none.seats[1].hand = [0; RESOURCES];
    let a = ValueAgent::new(1).act(&none, &budget).unwrap();
    assert!(!(OFFER..ACCEPT).contains(&a), "nobody would take an offer: {}", none.action_to_string(a));
    assert!(!(OFFER..ACCEPT).contains(&ValueAgent::without_trades(1).act(&s, &budget).unwrap()));
    play(&mut s, "offer:ore>grain");
    assert_eq!(s.turn(), Turn::Player(1));
    assert_eq!(ValueAgent::new(2).act(&s, &budget).unwrap(), ACCEPT);
    assert_eq!(ValueAgent::without_trades(2).act(&s, &budget).unwrap(), DECLINE);
    // A seat the same ore would pay a development card gains what the offerer gains: declined.
    let mut even = s.clone();
    even.seats[1].hand = [0, 0, 1, 2, 0];
    assert_eq!(ValueAgent::new(2).act(&even, &budget).unwrap(), DECLINE);
    // The evaluator tells a search the same answers, for every seat but the searcher's own.
    let value = CatanValue::with_weights(eval::CATAN_WEIGHTS);
    assert_eq!(meeple_game::Evaluator::expected_move(&value, &s, 0), Some(ACCEPT));
    assert_eq!(meeple_game::Evaluator::expected_move(&value, &even, 2), Some(DECLINE));
    assert_eq!(meeple_game::Evaluator::expected_move(&value, &s, 1), None, "the searcher answers for itself");
    assert_eq!(meeple_game::Evaluator::expected_move(&value, &trading(3), 1), None, "no offer on the table");
    // The mover trades with the accepter left weakest.
    play(&mut s, "accept");
    s.seats[3].hand = [0, 0, 0, 1, 0];
    play(&mut s, "decline accept");
    let pick = ValueAgent::new(3).act(&s, &budget).unwrap();
    let after = |q: usize| eval::seat_value(&s.exchanged(&OFFERS[s.offer as usize], Some(q)), q);
    assert_ne!(after(1), after(3));
    assert_eq!(pick, TRADE_WITH + if after(1) < after(3) { 1 } else { 3 });
}

#[test]
fn trading_action_ids_follow_the_bank_trades() {
    assert_eq!((NUM_ACTIONS, OFFER, NUM_ACTIONS_TRADING), (249, 249, 376));
    assert_eq!(TRADE_FEATURES, 21);
}

#[test]
fn an_offer_and_an_answer_are_weighed_by_the_trade_they_complete() {
    let mut s = trading(3);
    s.seats[0].hand = [0, 0, 1, 0, 0];
    s.seats[1].hand = [0, 0, 0, 0, 2];
    let offer = s.parse_action("offer:wool>ore+ore").unwrap();
    // The offer: the trade with the first seat that would take it as catan-value answers, the
    // offer counted, still the main phase; where none would, the offer spent with no trade.
    let done = s.completed(offer).expect("an offer completes");
    assert_eq!((done.offers_made, done.phase), (1, Phase::Main));
    let o = &OFFERS[(offer - OFFER) as usize];
    match (1..4).find(|&q| eval::takes(&s, o, q)) {
        Some(q) => {
            assert_eq!((done.seats[0].hand, done.trades_made), ([0, 0, 0, 0, 2], 1));
            assert_eq!(done.seats[q].hand, s.exchanged(o, Some(q)).seats[q].hand);
        }
        None => assert_eq!((done.seats[0].hand, done.trades_made), ([0, 0, 1, 0, 0], 0)),
    }
    let mut nobody = s.clone();
    nobody.seats[1].hand = [0; RESOURCES];
    let spent = nobody.completed(offer).unwrap();
    assert_eq!(
        (spent.seats[0].hand, spent.trades_made, spent.declined >> (offer - OFFER) & 1),
        ([0, 0, 1, 0, 0], 0, 1)
    );
    // Its afterstate is the offer on the table, with nothing exchanged.
    let mut after = s.clone();
    after.apply_unchecked(offer);
    assert_eq!((after.seats[0].hand, after.phase), ([0, 0, 1, 0, 0], Phase::Answer));
    // Seat 1's answer: accepting is the trade with it; declining, the offer spent with no trade.
    let accepted = after.completed(ACCEPT).expect("an answer completes");
    assert_eq!((accepted.seats[0].hand, accepted.seats[1].hand), ([0, 0, 0, 0, 2], [0, 0, 1, 0, 0]));
    assert_eq!((accepted.phase, accepted.trades_made, accepted.current), (Phase::Main, 1, 0));
    let declined = after.completed(DECLINE).expect("an answer completes");
    assert_eq!((declined.seats[0].hand, declined.phase), ([0, 0, 1, 0, 0], Phase::Main));
    assert_eq!(declined.declined >> (offer - OFFER) & 1, 1, "the offer is spent for the turn");
    // Everything else is weighed by its afterstate.
    assert!(s.completed(END).is_none() && after.completed(ACCEPT + 100).is_none());
}
