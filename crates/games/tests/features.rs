//! Every evaluator a game names that exposes features (the hook the RootStrap, TreeStrap and
//! TD-Leaf trainers learn through) values a position as its features times its weights, for
//! every player, along random games; and takes other weights through `weights=`.

use meeple_game::{Game, Rng, State, rng_from_seed};
use meeple_games::with_game;
use rand::RngExt;

fn check<G: Game>(game: &G) -> usize {
    let mut rng: Rng = rng_from_seed(7);
    let mut checked = 0;
    for info in game.evaluator_infos() {
        let eval = game.evaluator(&info.name.parse().unwrap()).unwrap().unwrap();
        let weights = eval.weights();
        let mut f = Vec::new();
        if !eval.features(&game.initial_state(), 0, &mut f) {
            assert!(weights.is_empty(), "{}: weights without features", info.name);
            continue;
        }
        assert_eq!(f.len(), weights.len(), "{}", info.name);
        // Other weights, inline, change the value as the features say.
        let other: Vec<f64> = (0..weights.len()).map(|i| (i as f64 * 0.37).sin() * 3.0).collect();
        let text: Vec<String> = other.iter().map(|w| w.to_string()).collect();
        let spec = format!("{}:weights=({})", info.name, text.join(","));
        let reweighted = game.evaluator(&spec.parse().unwrap()).unwrap().unwrap();
        assert_eq!(reweighted.weights(), other, "{spec}");
        let mut buf = Vec::new();
        let mut outcomes = Vec::new();
        for _ in 0..3 {
            let mut s = game.initial_state();
            for _ in 0..400 {
                if s.is_terminal() {
                    break;
                }
                for p in 0..game.num_players() {
                    for (e, w) in [(&eval, &weights), (&reweighted, &other)] {
                        assert!(e.features(&s, p, &mut f));
                        let dot: f64 = f.iter().zip(w.iter()).map(|(a, b)| a * b).sum();
                        let v = e.evaluate(&s, p);
                        assert!((dot - v).abs() < 1e-9 * v.abs().max(1.0), "{}: {dot} against {v}", info.name);
                        checked += 1;
                    }
                }
                if s.turn() == meeple_game::Turn::Chance {
                    let a = meeple_game::draw_chance(&s, &mut outcomes, &mut rng);
                    s.apply_unchecked(a);
                } else {
                    let a = s.random_action(&mut rng, &mut buf);
                    s.apply_unchecked(a);
                }
                let _ = rng.random::<u8>();
            }
        }
    }
    checked
}

#[test]
fn features_times_weights_is_the_value_for_every_linear_evaluator() {
    for spec in ["santorini", "connect4", "cathedral", "catan:players=3", "catan:players=4,board=random"] {
        let n = with_game!(spec, |game| check(&game)).unwrap();
        assert!(n > 0, "{spec}: no linear evaluator checked");
    }
}
