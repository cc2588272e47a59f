//! The square's eight symmetries: a position and a move under each (free training data, since
//! the rules commute with all of them).

use super::*;

/// Maps (row, col) through symmetry `k` of the square: `k % 4` quarter turns, then a mirror
/// when `k >= 4`. Symmetry 0 is the identity.
pub(super) fn map_rc(k: usize, r: i8, c: i8) -> (i8, i8) {
    let (mut x, mut y) = (c - 2, r - 2);
    for _ in 0..k % 4 {
        (x, y) = (-y, x);
    }
    if k >= 4 {
        x = -x;
    }
    (y + 2, x + 2)
}

/// The image of `cell` under symmetry `k` (0-7).
pub fn map_cell(k: usize, cell: usize) -> usize {
    let (r, c) = map_rc(k, (cell / 5) as i8, (cell % 5) as i8);
    (r * 5 + c) as usize
}

pub(super) fn map_dir(k: usize, d: usize) -> usize {
    let (r, c) = map_rc(k, DIRS[d].0 + 2, DIRS[d].1 + 2);
    notation::dir_index(r - 2, c - 2)
}

pub(super) fn map_bits(k: usize, bits: u32) -> u32 {
    (0..CELLS).filter(|&c| bits >> c & 1 != 0).fold(0, |m, c| m | 1 << map_cell(k, c))
}

impl SantoriniState {
    /// The position under board symmetry `k` (0-7: rotations, then their mirror images).
    /// Santorini's rules commute with all eight, so they are free training data.
    pub fn symmetric(&self, k: usize) -> Self {
        let mut s = *self;
        s.level = self.level.map(|l| map_bits(k, l));
        s.dome = map_bits(k, self.dome);
        let cell = |c: u8| if c == UNPLACED { UNPLACED } else { map_cell(k, c as usize) as u8 };
        s.steps.active = cell(self.steps.active);
        s.steps.origin = cell(self.steps.origin);
        s.steps.built = cell(self.steps.built);
        s.worker_bits = self.worker_bits.map(|b| map_bits(k, b));
        for p in 0..2 {
            s.workers[p] =
                self.workers[p].map(|c| if c == UNPLACED { UNPLACED } else { map_cell(k, c as usize) as u8 });
            s.workers[p].sort_unstable();
        }
        s
    }

    /// The action that `action` becomes under symmetry `k` (in [`SantoriniState::symmetric`]).
    pub fn symmetric_action(&self, action: Action, k: usize) -> Action {
        if self.drawing {
            return action;
        }
        if self.stepped() && action >= gods::STEP_MOVE {
            return self.symmetric_step(action, k);
        }
        match self.decode(action) {
            Decoded::Place(cell) => map_cell(k, cell) as Action,
            Decoded::Turn { worker, to: _, build, from } => {
                // The image keeps its workers sorted by cell: find the moved one's new index
                // without building the whole image.
                let p = self.mover();
                let mut image_workers =
                    self.workers[p].map(|c| if c == UNPLACED { UNPLACED } else { map_cell(k, c as usize) as u8 });
                image_workers.sort_unstable();
                let from2 = map_cell(k, from) as u8;
                let w = image_workers.iter().position(|&c| c == from2).unwrap_or(worker);
                let (md, bd) = if action >= WIN_BASE {
                    ((action - WIN_BASE) as usize % 8, None)
                } else {
                    let x = (action - TURN_BASE) as usize;
                    (x / 8 % 8, build.map(|_| x % 8))
                };
                let (md, bd) = (map_dir(k, md), bd.map(|d| map_dir(k, d)));
                Self::encode_turn(w, md, bd)
            }
        }
    }
}
