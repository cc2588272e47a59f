use crate::{Action, State, Turn};

/// Counts the leaves of the game tree `depth` plies below `state` (chance outcomes count as
/// plies). Terminal states above the horizon end their branch and count nothing; the standard
/// definition, so the counts match published tables. `depth` is at most
/// [`crate::limits::MAX_PERFT_DEPTH`] (64): one buffer is allocated per ply and the recursion is
/// that deep, so a larger depth is refused with a panic rather than exhausting memory or stack.
pub fn perft<S: State>(state: &S, depth: u32) -> u64 {
    assert!(depth <= crate::limits::MAX_PERFT_DEPTH, "perft depth {depth} is beyond the limit of 64");
    let mut buffers: Vec<Vec<Action>> = (0..depth).map(|_| Vec::new()).collect();
    let mut chance: Vec<Vec<(Action, f64)>> = (0..depth).map(|_| Vec::new()).collect();
    count(state, depth as usize, &mut buffers, &mut chance)
}

fn count<S: State>(state: &S, depth: usize, buffers: &mut [Vec<Action>], chance: &mut [Vec<(Action, f64)>]) -> u64 {
    if depth == 0 {
        return 1;
    }
    let (buf, rest) = buffers.split_first_mut().expect("one buffer per ply");
    let (cbuf, crest) = chance.split_first_mut().expect("one buffer per ply");
    match state.turn() {
        Turn::Terminal => 0,
        Turn::Player(_) => {
            state.legal_actions(buf);
            if depth == 1 {
                return buf.len() as u64;
            }
            let mut total = 0;
            for &a in buf.iter() {
                let mut child = state.clone();
                child.apply_unchecked(a);
                total += count(&child, depth - 1, rest, crest);
            }
            total
        }
        Turn::Chance => {
            state.chance_outcomes(cbuf);
            if depth == 1 {
                return cbuf.len() as u64;
            }
            let mut total = 0;
            for &(a, _) in cbuf.iter() {
                let mut child = state.clone();
                child.apply_unchecked(a);
                total += count(&child, depth - 1, rest, crest);
            }
            total
        }
    }
}

/// Perft split by the first action: `(action, leaves below it at depth - 1)` for each legal action
/// (or chance outcome) of `state`, the usual tool for finding which move a generator gets wrong.
pub fn perft_divide<S: State>(state: &S, depth: u32) -> Vec<(Action, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut first = Vec::new();
    match state.turn() {
        Turn::Terminal => {}
        Turn::Player(_) => state.legal_actions(&mut first),
        Turn::Chance => {
            let mut outcomes = Vec::new();
            state.chance_outcomes(&mut outcomes);
            first.extend(outcomes.iter().map(|o| o.0));
        }
    }
    first
        .into_iter()
        .map(|a| {
            let mut child = state.clone();
            child.apply_unchecked(a);
            (a, perft(&child, depth - 1))
        })
        .collect()
}
