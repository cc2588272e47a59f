use crate::MAX_PLAYERS;

/// One `f64` per player (returns, scores), stored inline so terminal checks in search never
/// allocate.
#[derive(Clone, Copy, PartialEq)]
pub struct Values {
    len: u8,
    data: [f64; MAX_PLAYERS],
}

impl Values {
    /// Values for the given players.
    ///
    /// # Panics
    /// If there are more than [`MAX_PLAYERS`]: a game seating more breaks an engine invariant.
    pub fn from_slice(values: &[f64]) -> Self {
        assert!(values.len() <= MAX_PLAYERS, "at most {MAX_PLAYERS} players");
        let mut data = [0.0; MAX_PLAYERS];
        data[..values.len()].copy_from_slice(values);
        Values { len: values.len() as u8, data }
    }

    /// `n` copies of `value`.
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_PLAYERS`].
    pub fn filled(n: usize, value: f64) -> Self {
        assert!(n <= MAX_PLAYERS, "at most {MAX_PLAYERS} players");
        let mut data = [0.0; MAX_PLAYERS];
        data[..n].fill(value);
        Values { len: n as u8, data }
    }

    /// Win/loss values for a two-player game won by `winner` (1 for the winner, 0 for the loser).
    pub fn two_player_win(winner: usize) -> Self {
        let mut v = Self::filled(2, 0.0);
        v.data[winner] = 1.0;
        v
    }

    /// Returns of a two-player win/draw/loss game: `None` until it is `over`, then 1/0 for a
    /// winner or 0.5 each for a draw.
    pub fn two_player_returns(winner: Option<usize>, over: bool) -> Option<Self> {
        match winner {
            Some(w) => Some(Self::two_player_win(w)),
            None => over.then(|| Self::filled(2, 0.5)),
        }
    }

    /// Scores of a two-player game whose only score is winning: 1 for the winner, else 0.
    pub fn two_player_scores(winner: Option<usize>) -> Self {
        winner.map_or(Self::filled(2, 0.0), Self::two_player_win)
    }

    /// The values as a slice.
    pub fn as_slice(&self) -> &[f64] {
        &self.data[..self.len as usize]
    }
}

impl std::ops::Deref for Values {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}
