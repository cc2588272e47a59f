/// The normal quantile for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score interval for a proportion `p` observed over `n` trials at normal quantile `z`.
/// Draws count as half a win in `p`, the usual approximation in engine testing. Returns (0, 1)
/// when there are no trials.
pub fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    if n <= 0.0 {
        return (0.0, 1.0);
    }
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_values() {
        // Wilson (1927) as tabulated by Newcombe (1998), Statistics in Medicine 17:857, table I:
        // 81/263 -> 0.2553 to 0.3662; 15/148 -> 0.0624 to 0.1605; 0/10 -> 0.0000 to 0.2775.
        let cases = [(81.0, 263.0, 0.2553, 0.3662), (15.0, 148.0, 0.0624, 0.1605), (0.0, 10.0, 0.0, 0.2775)];
        for (k, n, lo, hi) in cases {
            let (l, h) = wilson(k / n, n, Z95);
            assert!((l - lo).abs() < 5e-5 && (h - hi).abs() < 5e-5, "{k}/{n}: ({l:.4}, {h:.4})");
        }
        assert_eq!(wilson(0.5, 0.0, Z95), (0.0, 1.0));
    }
}
