//! Hashing helpers for [`crate::State::zobrist`].
//!
//! Games with a compact exact key (connect four's `position + mask`) hash it with
//! [`splitmix64`], a bijection, so distinct keys never collide. Games without one XOR keys from a
//! [`keys`] table built at compile time, so tables are identical on every machine.

/// The SplitMix64 finaliser: a fast bijective mix of 64 bits.
pub const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `N` pseudo-random keys from `seed`, usable in a `const` table.
pub const fn keys<const N: usize>(seed: u64) -> [u64; N] {
    let mut out = [0u64; N];
    let mut i = 0;
    while i < N {
        out[i] = splitmix64(seed.wrapping_add((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_stable() {
        const K: [u64; 256] = keys(1);
        let mut sorted = K.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 256);
        assert_eq!(keys::<4>(1), [K[0], K[1], K[2], K[3]]);
        // Published SplitMix64 output for state 0 after one step.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
