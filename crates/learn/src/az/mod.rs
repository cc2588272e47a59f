//! AlphaZero: its settings ([`config`]), the trainer ([`train`]: a generation a round of the run loop), batched self-play
//! ([`selfplay`]), the search with its PUCT and Gumbel roots ([`search`]), and the two roots'
//! mathematics as small free functions over a node's children ([`puct`], [`gumbel`]), which the
//! search and the hand-computed tests both call.

pub mod config;
pub mod gumbel;
pub mod puct;
pub mod search;
pub mod selfplay;
pub mod train;
