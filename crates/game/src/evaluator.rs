use crate::{Action, Player, State};

/// Game knowledge for search: a leaf value, and optional move-ordering and forward-pruning hooks.
/// Games implement it in their `eval.rs` and register it under a name (`eval=linear8`); search
/// code only ever sees this trait.
pub trait Evaluator<S: State>: Send + Sync {
    /// Heuristic value of a non-terminal `state` for `player`: larger is better for them. Keep
    /// values within ±100,000 so they stay below alpha-beta's win scores; MCTS playout cutoffs map
    /// them to rewards through a logistic curve (`1 / (1 + e^(-v / eval_scale))`).
    fn evaluate(&self, state: &S, player: Player) -> f64;

    /// [`Evaluator::evaluate`] of each of `states` for `player`, written to `out` (cleared
    /// first): one call for many positions, which a network answers in one forward pass.
    fn evaluate_many(&self, states: &[S], player: Player, out: &mut Vec<f64>) {
        out.clear();
        out.extend(states.iter().map(|s| self.evaluate(s, player)));
    }

    /// Whether [`Evaluator::evaluate_many`] is much cheaper than one call per position (a
    /// network): alpha-beta then values the leaves below a node in one call.
    fn prefers_batches(&self) -> bool {
        false
    }

    /// Search priority of a legal `action` of the player to move: higher is tried first by
    /// alpha-beta (after its table move and killers) and added first by MCTS with progressive
    /// widening. Called once per move per node, so keep it cheap. Only used when
    /// [`Evaluator::has_move_priority`] says so.
    fn move_priority(&self, state: &S, action: Action) -> i32 {
        let _ = (state, action);
        0
    }

    /// [`Evaluator::move_priority`] of each of `actions`, written to `out` (cleared first): one
    /// call per node, which an evaluator can answer faster than move by move.
    fn move_priorities(&self, state: &S, actions: &[Action], out: &mut Vec<i32>) {
        out.clear();
        out.extend(actions.iter().map(|&a| self.move_priority(state, a)));
    }

    /// Whether [`Evaluator::move_priority`] carries information (search skips it otherwise).
    fn has_move_priority(&self) -> bool {
        false
    }

    /// An upper bound on how much any one move of the player to move can raise their own
    /// evaluation, or lower another player's, from `state`; `None` if unknown or if some move
    /// might end the game. With it alpha-beta prunes frontier nodes that cannot reach its window
    /// (futility pruning) without changing any result.
    fn move_gain_bound(&self, state: &S) -> Option<f64> {
        let _ = state;
        None
    }

    /// The exact search value of `state` one ply above the horizon, for `root`: the best of
    /// `evaluate(child, root)` over every child (the highest if `maximize`, else the lowest),
    /// when the evaluator can tell it without generating every child; `None` if it cannot, or if
    /// some child ends the game. Alpha-beta then skips the last ply's move generation.
    fn frontier_value(&self, state: &S, root: Player, maximize: bool) -> Option<f64> {
        let _ = (state, root, maximize);
        None
    }

    /// The exact search value of `state` two plies above the horizon, for `root`: the mover's
    /// best action against the next player's best reply, each position after the reply scored
    /// by `evaluate(_, root)` (the mover maximises if `maximize`), when the evaluator can tell it
    /// faster than a search; `None` if it cannot, or if the game might end within the two plies.
    /// It may stop early with a value at least `beta` (maximising) or at most `alpha`
    /// (minimising): a bound, as alpha-beta's fail-soft values are.
    fn frontier2_value(&self, state: &S, root: Player, maximize: bool, alpha: f64, beta: f64) -> Option<f64> {
        let _ = (state, root, maximize, alpha, beta);
        None
    }

    /// The move the player to move in `state` is expected to play, where the evaluator models
    /// that decision instead of leaving it to search: a decision that is the mover's own
    /// bargain rather than a contest with `root` (Catan's answer to an offer: a seat takes a
    /// trade that gains it more than the offerer, whoever searches). Search then follows that
    /// move alone, without spending depth on it; a paranoid search would otherwise assume every
    /// answer is the one worst for `root`, so it would never expect an offer taken. Called
    /// only where the mover is not `root`. `None` (the default): search the node as usual.
    fn expected_move(&self, state: &S, root: Player) -> Option<Action> {
        let _ = (state, root);
        None
    }

    /// The features of a linear evaluator, whose value is their dot product with
    /// [`Evaluator::weights`]: learners (RootStrap, TreeStrap) train the weights through them.
    /// Writes `out` (cleared first) for `player` and returns true; false for an evaluator that is
    /// not a weighted sum.
    fn features(&self, state: &S, player: Player, out: &mut Vec<f64>) -> bool {
        let _ = (state, player);
        out.clear();
        false
    }

    /// The weights of a linear evaluator (see [`Evaluator::features`]); empty otherwise.
    fn weights(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Forward pruning: removes actions not worth searching (the Sagrada report's "heuristic
    /// filter"). Search ignores a filter that removes every action. The default keeps all.
    fn filter(&self, state: &S, actions: &mut Vec<Action>) {
        let _ = (state, actions);
    }
}

/// An evaluator behind a pointer, as games build them from specs.
pub type BoxedEvaluator<S> = Box<dyn Evaluator<S>>;

/// The evaluator every game has: no opinion (0) on any non-terminal state. Search then relies on
/// terminal results alone, which is exact wherever it reaches the end of the game.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZeroEvaluator;

impl<S: State> Evaluator<S> for ZeroEvaluator {
    fn evaluate(&self, _state: &S, _player: Player) -> f64 {
        0.0
    }
}
