//! The `input-range` property: the value range a model expects.

/// The accepted form of `input-range`, for the refusal of a bad value.
pub const ACCEPTED: &str =
    "two finite numbers 'min,max' with min < max, e.g. 0,1 or -1,1 or 0,255 (empty: the model's \
     convention)";

/// Parses "lo,hi" (e.g. "0,1", "-1,1", "0,255"). An error says what is
/// wrong with the value ([`ACCEPTED`] says what is right).
pub fn parse_range(s: &str) -> Result<[f32; 2], String> {
    let Some((lo, hi)) = s.split_once(',') else {
        return Err("not two numbers separated by a comma".into());
    };
    let number = |t: &str| {
        t.trim()
            .parse::<f32>()
            .map_err(|_| format!("'{}' is not a number", t.trim()))
    };
    let (lo, hi) = (number(lo)?, number(hi)?);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err("the bounds must be finite".into());
    }
    if lo >= hi {
        return Err(format!("min {lo} is not below max {hi}"));
    }
    Ok([lo, hi])
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0,1").unwrap(), [0.0, 1.0]);
        assert_eq!(parse_range(" -1 , 1 ").unwrap(), [-1.0, 1.0]);
        for bad in ["", "1", "1,0", "a,b", "0,inf", "0,1,2", "abc"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }
}
