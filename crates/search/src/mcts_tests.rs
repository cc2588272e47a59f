use super::*;
use meeple_game::testing::{Dice, DiceState};

fn shaped(spec: &str, dice: [u8; 2]) -> Vec<f64> {
    let cfg = MctsConfig::from_spec(&spec.parse().unwrap()).unwrap();
    let search = Searcher::new(&cfg, Arc::new(meeple_game::ZeroEvaluator), None, 2, 0, false).unwrap();
    let s = DiceState::with_dice(&Dice::default(), &dice, 2);
    search.rollout.shape(&s, s.returns().unwrap()).to_vec()
}

#[test]
fn margin_rewards_follow_the_sagrada_report() {
    // Dice scores are the dice: 6 against 1 is a win by 5 points, one step of margin_unit 5.
    assert_eq!(shaped("mcts", [6, 1]), vec![1.0, 0.0]);
    assert_eq!(shaped("mcts:margin=steps", [6, 1]), vec![0.4, 0.0]);
    assert_eq!(shaped("mcts:margin=steps", [6, 4]), vec![0.2, 0.0]);
    assert_eq!(shaped("mcts:margin=steps,margin_unit=1", [6, 1]), vec![1.0, 0.0], "capped at 4 steps");
    assert_eq!(shaped("mcts:margin=steps,margin_unit=2", [2, 5]), vec![0.0, 0.4], "3 points: one step of 2");
    let smooth = shaped("mcts:margin=smooth", [6, 4]);
    assert!((smooth[0] - (1.0 + 0.4) / 5.0).abs() < 1e-12, "{smooth:?}");
    assert_eq!(shaped("mcts:margin=steps", [3, 3]), vec![0.1, 0.1], "a draw earns half a win, no bonus");
}
