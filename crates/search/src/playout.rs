use meeple_game::{Action, Rng, State, Turn};

/// Plays uniformly random moves (and samples chance) from `state` to the end, in place, and
/// returns the number of plies played. `legal` and `outcomes` are caller buffers so the loop
/// never allocates; MCTS playouts and `meeple bench` share this routine.
pub fn random_playout<S: State>(
    state: &mut S,
    rng: &mut Rng,
    legal: &mut Vec<Action>,
    outcomes: &mut Vec<(Action, f64)>,
) -> u64 {
    let mut plies = 0;
    loop {
        let action = match state.turn() {
            Turn::Terminal => return plies,
            Turn::Player(_) => state.random_action(rng, legal),
            Turn::Chance => meeple_game::draw_chance(state, outcomes, rng),
        };
        state.apply_unchecked(action);
        plies += 1;
    }
}
