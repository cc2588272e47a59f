//! Resolves `eval=NAME` options: `zero` for every game, then the game's own evaluators.

use meeple_game::{AgentInfo, Error, Evaluator, Game, Spec, ZeroEvaluator};
use std::sync::Arc;

/// The evaluator every game has.
pub const ZERO_INFO: AgentInfo = AgentInfo {
    name: "zero",
    about: "no opinion: 0 for every non-terminal state (search sees only results)",
    params: &[],
};

/// Evaluators available for `game`: `zero`, then the game's own.
pub fn evaluator_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = vec![ZERO_INFO];
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
