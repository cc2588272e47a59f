//! Resolves `eval=NAME` options: `zero` for every game, then the game's own evaluators.

use meeple_game::{Action, AgentInfo, Error, Evaluator, Game, ParamInfo, Player, Spec, State, ZeroEvaluator};
use std::sync::Arc;

/// The evaluator every game has.
pub const ZERO_INFO: AgentInfo = AgentInfo {
    name: "zero",
    about: "no opinion: 0 for every non-terminal state (search sees only results)",
    params: &[],
};

/// An evaluator read from the side to move (two-player games).
pub const MOVER_INFO: AgentInfo = AgentInfo {
    name: "mover",
    about: "another evaluator read from the side to move: its value for the player to move, negated for the other \
            (two players); weights TreeStrap learned with --view mover play through it",
    params: &[ParamInfo {
        name: "eval",
        default: "zero",
        accepts: "an evaluator spec of this game",
        help: "the evaluator read from the side to move",
    }],
};

/// Evaluators available for `game`: `zero` and `mover`, then the game's own.
pub fn evaluator_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = vec![ZERO_INFO, MOVER_INFO];
    all.extend(game.evaluator_infos());
    all
}

/// Builds the evaluator named by `spec` for `game`.
pub fn make_evaluator<G: Game>(game: &G, spec: &str) -> Result<Arc<dyn Evaluator<G::State>>, Error> {
    make_evaluator_with(game, spec, &None)
}

/// [`make_evaluator`] with an extension's evaluators too.
pub fn make_evaluator_with<G: Game>(
    game: &G,
    spec: &str,
    ext: &crate::Ext<G>,
) -> Result<Arc<dyn Evaluator<G::State>>, Error> {
    let parsed: Spec = spec.parse()?;
    if parsed.name == "zero" {
        parsed.options("evaluator zero", ZERO_INFO.params)?;
        return Ok(Arc::new(ZeroEvaluator));
    }
    if parsed.name == "mover" {
        let o = parsed.options("evaluator mover", MOVER_INFO.params)?;
        let inner: String = o.get("eval")?;
        if game.num_players() != 2 {
            return Err(o.bad_value(
                "eval",
                &format!("{inner} (mover reads two-player games; {} has {} players)", game.spec(), game.num_players()),
            ));
        }
        return Ok(Arc::new(Mover::new(make_evaluator_with(game, &inner, ext)?)));
    }
    if let Some(e) = ext
        && let Some(eval) = e.evaluator(game, &parsed)
    {
        return eval;
    }
    match game.evaluator(&parsed) {
        Some(e) => e.map(Arc::from),
        None => {
            let mut names: Vec<&str> = evaluator_infos(game).iter().map(|e| e.name).collect();
            let extra = ext.as_ref().map(|e| e.evaluator_infos()).unwrap_or_default();
            names.extend(extra.iter().map(|e| e.name));
            Err(Error::UnknownName { kind: "evaluator", name: parsed.name.clone(), accepted: names.join(", ") })
        }
    }
}

/// A two-player evaluator read from the side to move: `inner`'s value of a position for the
/// player to move, negated for the other (zero-sum). A linear evaluator stays linear (its
/// features for the mover, negated for the other), so TreeStrap can learn through it: its
/// values then carry who is to move, which a value for a fixed player cannot (the mover's
/// chances to improve are worth something the other's are not).
pub struct Mover<S: State> {
    inner: Arc<dyn Evaluator<S>>,
}

impl<S: State> Mover<S> {
    pub fn new(inner: Arc<dyn Evaluator<S>>) -> Self {
        Mover { inner }
    }

    /// Whose view to read, and the sign for `player`: the player to move (the other player's
    /// view negated); `player`'s own where nobody is to move.
    fn view(state: &S, player: Player) -> (Player, f64) {
        match state.current_player() {
            Some(m) if m != player => (m, -1.0),
            _ => (player, 1.0),
        }
    }
}

impl<S: State> Evaluator<S> for Mover<S> {
    fn evaluate(&self, state: &S, player: Player) -> f64 {
        let (p, sign) = Self::view(state, player);
        sign * self.inner.evaluate(state, p)
    }

    fn move_priority(&self, state: &S, action: Action) -> i32 {
        self.inner.move_priority(state, action)
    }

    fn move_priorities(&self, state: &S, actions: &[Action], out: &mut Vec<i32>) {
        self.inner.move_priorities(state, actions, out);
    }

    fn has_move_priority(&self) -> bool {
        self.inner.has_move_priority()
    }

    fn features(&self, state: &S, player: Player, out: &mut Vec<f64>) -> bool {
        let (p, sign) = Self::view(state, player);
        let linear = self.inner.features(state, p, out);
        if sign < 0.0 {
            out.iter_mut().for_each(|f| *f = -*f);
        }
        linear
    }

    fn weights(&self) -> Vec<f64> {
        self.inner.weights()
    }

    fn filter(&self, state: &S, actions: &mut Vec<Action>) {
        self.inner.filter(state, actions);
    }

    fn expected_move(&self, state: &S, root: Player) -> Option<Action> {
        self.inner.expected_move(state, root)
    }
}
