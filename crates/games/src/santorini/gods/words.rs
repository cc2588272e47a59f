//! The gods' steps in words: their notation read and written, why a step is refused, what it
//! does, what a player is asked, and the click path a board draws.

use super::*;

impl SantoriniState {
    pub(crate) fn step_to_string(&self, action: Action) -> String {
        let p = self.mover();
        match decode_step(action) {
            Some(Step::Move { worker, to }) => {
                format!("{}-{}", cell_name(self.workers[p][worker] as usize), cell_name(to))
            }
            Some(Step::Build { worker, cell }) => {
                format!("{}+{}", cell_name(self.workers[p][worker] as usize), cell_name(cell))
            }
            Some(Step::Dome { worker, cell }) => {
                format!("{}+{}^", cell_name(self.workers[p][worker] as usize), cell_name(cell))
            }
            Some(Step::End) => "end".into(),
            None => format!("#{action}"),
        }
    }

    pub(crate) fn parse_step(&self, text: &str) -> Result<Action, Error> {
        let bad = |reason: String| Error::BadNotation { text: text.to_string(), reason };
        let form = "with gods a turn is played in steps: a move (c3-d4), a build by the worker on d4 (d4+e5, or \
                    +e5 when only one worker can build there), Atlas's dome (d4+e5^), or end";
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        if t == "end" || t == "pass" {
            return Ok(STEP_END);
        }
        let p = self.mover();
        let cell = |s: &str| {
            super::super::notation::parse_cell(s).ok_or_else(|| bad(format!("'{s}' is not a cell; cells are a1-e5")))
        };
        let worker_on = |c: usize| {
            self.workers[p]
                .iter()
                .position(|&w| w as usize == c)
                .ok_or_else(|| bad(format!("no worker of the player to move on {}", cell_name(c))))
        };
        if let Some((builder, rest)) = t.split_once('+') {
            let (target, dome) = match rest.strip_suffix('^') {
                Some(r) => (r, true),
                None => (rest, false),
            };
            let c = cell(target)?;
            let make = |worker| if dome { Step::Dome { worker, cell: c } } else { Step::Build { worker, cell: c } };
            if builder.is_empty() {
                let mut legal = Vec::new();
                self.step_legal_actions(&mut legal);
                let fits: Vec<Action> = (0..2).map(|w| encode_step(make(w))).filter(|a| legal.contains(a)).collect();
                return match fits.as_slice() {
                    [a] => Ok(*a),
                    [] => Ok(encode_step(make(0))),
                    _ => Err(bad(format!("both workers can build on {}: name the builder (c3+{})", target, target))),
                };
            }
            return Ok(encode_step(make(worker_on(cell(builder)?)?)));
        }
        let parts: Vec<&str> = t.split('-').collect();
        match parts.as_slice() {
            [one] if one.len() == 2 => Ok(cell(one)? as Action),
            [from, to] => Ok(encode_step(Step::Move { worker: worker_on(cell(from)?)?, to: cell(to)? })),
            _ => Err(bad(form.into())),
        }
    }

    /// Why an action of a game with gods is not legal now, in words (none where the base
    /// game's reasons apply: a placement's).
    pub(crate) fn gods_illegal_reason(&self, action: Action) -> Option<String> {
        if self.winner == NO_WINNER && self.placed == 4 {
            return Some(self.step_illegal_reason(action));
        }
        (action as usize >= NUM_ACTIONS).then(|| {
            if action as usize >= GOD_ACTIONS {
                format!("action id {action} is out of range")
            } else if self.winner != NO_WINNER {
                "the game is over".into()
            } else {
                "place your workers first: name an empty cell (c3)".into()
            }
        })
    }

    /// Why a step is not legal now, in words.
    pub(super) fn step_illegal_reason(&self, action: Action) -> String {
        let p = self.to_move as usize;
        let god = self.gods[p];
        let t = self.steps;
        let Some(step) = decode_step(action) else {
            return if action < STEP_MOVE {
                "with gods a turn is played in steps: a move (c3-d4), then a build (d4+e5)".into()
            } else {
                format!("action id {action} is out of range")
            };
        };
        let mut list = StepList::new();
        self.pseudo_steps(&mut list);
        if list.as_slice().contains(&action) {
            return "after it the turn could not be finished (no move or build would be left)".into();
        }
        let building = t.moves > 0 || t.flags & PREBUILT != 0;
        match step {
            Step::End if t.built == UNPLACED => "there is no optional step to decline now".into(),
            Step::End => "not a legal step here".into(),
            Step::Move { .. } if t.built != UNPLACED => "the worker has built: build once more or end".into(),
            Step::Move { .. } if t.flags & PREBUILT != 0 => {
                format!("after building first, the worker on {} moves, and not up", cell_name(t.active as usize))
            }
            Step::Move { .. } if t.moves > 0 && !(god == ARTEMIS && t.moves == 1) && t.flags & HERMES_TURN == 0 => {
                "the worker has moved: now it builds".into()
            }
            Step::Move { to, .. } if t.flags & ATHENA_BLOCK != 0 => {
                format!("Athena moved up last turn: no worker may move up now ({} is not reachable)", cell_name(to))
            }
            Step::Move { to, .. } => format!("no worker of the player to move can move to {} now", cell_name(to)),
            Step::Dome { .. } if god != ATLAS => "only Atlas builds a dome below level 3".into(),
            Step::Build { .. } | Step::Dome { .. } if !building && god != PROMETHEUS && god != HERMES => {
                "move a worker first, then build".into()
            }
            Step::Build { cell, .. } | Step::Dome { cell, .. } => {
                if self.dome >> cell & 1 != 0 {
                    format!("{} has a dome", cell_name(cell))
                } else if self.occupied() >> cell & 1 != 0 {
                    format!("{} is occupied by a worker", cell_name(cell))
                } else if t.built as usize == cell && god == DEMETER {
                    "Demeter's second build may not be on the same space".into()
                } else if t.built != UNPLACED && god == HEPHAESTUS {
                    format!("Hephaestus's second block goes on {}, and not as a dome", cell_name(t.built as usize))
                } else {
                    format!("{} is not next to the building worker, or the supply has no block for it", cell_name(cell))
                }
            }
        }
    }

    /// The step in words.
    pub(crate) fn describe_step(&self, action: Action) -> String {
        let p = self.to_move as usize;
        let god = self.gods[p];
        let t = self.steps;
        match decode_step(action) {
            Some(Step::Move { worker, to }) => {
                let from = self.workers[p][worker] as usize;
                let (hf, ht) = (self.blocks(from), self.blocks(to));
                let mut w = if t.moves > 0 && t.flags & HERMES_TURN == 0 {
                    format!("worker {} moves again, to {}", cell_name(from), cell_name(to))
                } else if NEIGHBOURS[from] >> to & 1 == 0 {
                    format!("worker {} walks to {} on its level (Hermes)", cell_name(from), cell_name(to))
                } else {
                    format!("worker {} to {}", cell_name(from), cell_name(to))
                };
                if self.worker_bits[1 - p] >> to & 1 != 0 {
                    if god == APOLLO {
                        w += &format!(", swapping the opponent's worker to {} (Apollo)", cell_name(from));
                    } else {
                        let beyond = NEIGHBOUR[to][DIRECTION[from][to] as usize] as usize;
                        w += &format!(", pushing the opponent's worker to {} (Minotaur)", cell_name(beyond));
                    }
                }
                if hf < 3 && ht == 3 {
                    w += " (up to level 3: wins)";
                } else if god == PAN && hf >= ht + 2 {
                    w += " (down two levels: wins, Pan)";
                }
                w
            }
            Some(Step::Build { cell, .. }) => {
                let h = self.blocks(cell);
                let what = if h == 3 { "a dome".to_string() } else { format!("level {}", h + 1) };
                if t.moves == 0 && god == PROMETHEUS {
                    format!("builds {what} on {} before moving (Prometheus: then it may not move up)", cell_name(cell))
                } else if t.built != UNPLACED && god == DEMETER {
                    format!("builds again, {what} on {} (Demeter)", cell_name(cell))
                } else if t.built != UNPLACED {
                    format!("builds a second block, {what} on {} (Hephaestus)", cell_name(cell))
                } else {
                    format!("builds {what} on {}", cell_name(cell))
                }
            }
            Some(Step::Dome { cell, .. }) => {
                format!("builds a dome on {} at level {} (Atlas)", cell_name(cell), self.blocks(cell))
            }
            Some(Step::End) => "ends the turn without the second build".into(),
            None => format!("#{action}"),
        }
    }

    /// What the player to move is asked for now.
    pub(crate) fn step_prompt(&self) -> String {
        let p = self.to_move as usize;
        let god = self.gods[p];
        let t = self.steps;
        let blocked = if t.flags & ATHENA_BLOCK != 0 { " (Athena: not up this turn)" } else { "" };
        if t.moves == 0 && t.flags & PREBUILT == 0 {
            match god {
                PROMETHEUS => format!("Move a worker, or build first with it (then it may not move up){blocked}"),
                HERMES => format!(
                    "Move a worker; or keep to your levels: move your workers any number of times, then build with \
                     either{blocked}"
                ),
                _ => format!("Move a worker{blocked}"),
            }
        } else if t.moves == 0 {
            format!("Move the worker on {}, not up", cell_name(t.active as usize))
        } else if t.built == UNPLACED {
            if t.flags & HERMES_TURN != 0 {
                if t.moves == 1 {
                    "Walk your other worker on its level too, or build next to either worker".into()
                } else {
                    "Build next to either worker".into()
                }
            } else if god == ARTEMIS && t.moves == 1 {
                format!(
                    "Build next to {}, or move once more (not back to {})",
                    cell_name(t.active as usize),
                    cell_name(t.origin as usize)
                )
            } else if god == ATLAS {
                format!("Build next to {} (a block, or a dome at any level)", cell_name(t.active as usize))
            } else {
                format!("Build next to {}", cell_name(t.active as usize))
            }
        } else if god == DEMETER {
            format!("Build once more (not on {}), or end the turn", cell_name(t.built as usize))
        } else {
            format!("Build a second block on {}, or end the turn", cell_name(t.built as usize))
        }
    }

    /// The clicks that make a step at the web table.
    pub(crate) fn step_path(&self, action: Action) -> Vec<String> {
        let p = self.to_move as usize;
        let t = self.steps;
        let n = |c: usize| cell_name(c);
        match decode_step(action) {
            // Artemis's second move is the worker that moved, so a click on where it goes says
            // it all; elsewhere (a first move, Hermes's walks) the worker is clicked first.
            Some(Step::Move { to, .. }) if t.moves > 0 && t.flags & HERMES_TURN == 0 => vec![format!("m:{}", n(to))],
            Some(Step::Move { worker, to }) => {
                vec![format!("w:{}", n(self.workers[p][worker] as usize)), format!("m:{}", n(to))]
            }
            // Prometheus's first build names its worker, which must then move; elsewhere the
            // builder is the worker that moved, or (Hermes) either, one action per cell.
            Some(Step::Build { worker, cell }) if t.moves == 0 && self.gods[p] == PROMETHEUS => {
                vec![format!("w:{}", n(self.workers[p][worker] as usize)), format!("b:{}", n(cell))]
            }
            Some(Step::Build { cell, .. }) => vec![format!("b:{}", n(cell))],
            Some(Step::Dome { cell, .. }) => vec![format!("dome:{}", n(cell))],
            Some(Step::End) => vec!["btn:end".into()],
            None => vec![format!("id:{action}")],
        }
    }
}
