//! The `input-range` property: the value range a model expects.

use crate::error::{Error, Result};

/// Parses "lo,hi" (e.g. "0,1", "-1,1", "0,255").
pub fn parse_range(s: &str) -> Result<[f32; 2]> {
    let bad = || {
        Error::invalid(format!(
            "input-range '{s}': give two numbers 'min,max' with min < max, e.g. 0,1 or -1,1"
        ))
    };
    let (lo, hi) = s.split_once(',').ok_or_else(bad)?;
    let lo: f32 = lo.trim().parse().map_err(|_| bad())?;
    let hi: f32 = hi.trim().parse().map_err(|_| bad())?;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(bad());
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
        for bad in ["", "1", "1,0", "a,b", "0,inf", "0,1,2"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }
}
