//! clap value parsers for the CLIs' flags, so that a bad value is refused
//! (exit 2) with the accepted form before any work starts.

use std::path::Path;

use crate::tasks::BackgroundSpec;

/// The colour names `--background` takes (those [`BackgroundSpec`] knows).
const COLOUR_NAMES: &str = "black, white, grey, red, green, blue, transparent";

/// `--background`: `#RRGGBB` (exactly six hexadecimal digits), a colour
/// name, or an image file that decodes. Returns the value as given.
pub fn parse_background(value: &str) -> Result<String, String> {
    let accepted = format!(
        "give #RRGGBB (six hexadecimal digits), a colour name ({COLOUR_NAMES}) or an image file"
    );
    let v = value.trim();
    if let Some(hex) = v.strip_prefix('#') {
        if hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(v.to_string());
        }
        return Err(format!("'{value}' is not a colour: {accepted}"));
    }
    match BackgroundSpec::parse(v) {
        Ok(BackgroundSpec::Color(_)) => Ok(v.to_string()),
        Ok(BackgroundSpec::Image(path)) => {
            if !Path::new(&path).exists() {
                return Err(format!(
                    "'{value}' is neither a colour name nor an existing file: {accepted}"
                ));
            }
            BackgroundSpec::load_image(&path).map_err(|e| format!("{e}"))?;
            Ok(v.to_string())
        }
        Err(_) => Err(format!("'{value}': {accepted}")),
    }
}

fn parse_in(value: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a number: give one from {lo} to {hi}"))?;
    if !(lo..=hi).contains(&v) {
        return Err(format!(
            "{v} is out of range: give a number from {lo} to {hi}"
        ));
    }
    Ok(v)
}

/// `--frames`: a count of frames, 1 or more.
pub fn parse_frames(value: &str) -> Result<u64, String> {
    use std::num::IntErrorKind;
    match value.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Err(format!(
            "'{value}' is too large: give a number of frames from 1 to {}",
            u64::MAX
        )),
        _ => Err(format!("'{value}': give a number of frames, 1 or more")),
    }
}

/// `--smoothing`: the mask's temporal smoothing, 0 (off) to 0.95.
pub fn parse_smoothing(value: &str) -> Result<f64, String> {
    parse_in(value, 0.0, 0.95)
}

/// `--precision`: auto, f32 or f16, as the elements' `precision` property
/// takes them (clap lists them in the help and the completions).
pub fn precision_parser() -> impl clap::builder::TypedValueParser<Value = crate::ml::Precision> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(crate::ml::Precision::NAMES)
        .try_map(|s| s.parse::<crate::ml::Precision>())
}

/// `--blur`: the background blur's Gaussian sigma in pixels, 0.5 to 64.
pub fn parse_blur(value: &str) -> Result<f64, String> {
    parse_in(value, 0.5, 64.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_strict_and_names_and_images_pass() {
        assert_eq!(parse_background("#2060c0").unwrap(), "#2060c0");
        assert_eq!(parse_background("#ABCDEF").unwrap(), "#ABCDEF");
        assert_eq!(parse_background("Grey").unwrap(), "Grey");
        for bad in ["#12345", "#GGGGGG", "#1234567", "#", "#12345g", "#ff000080"] {
            let e = parse_background(bad).unwrap_err();
            assert!(e.contains("#RRGGBB") && e.contains(bad), "{bad}: {e}");
        }
        let e = parse_background("no-such-colour").unwrap_err();
        assert!(e.contains("neither a colour name"), "{e}");
        let photo = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/samples/astronaut.png");
        assert_eq!(parse_background(photo).unwrap(), photo);
        let not_image = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let e = parse_background(not_image).unwrap_err();
        assert!(e.contains("cannot read it"), "{e}");
    }

    #[test]
    fn ranges_name_their_bounds() {
        assert_eq!(parse_smoothing("0").unwrap(), 0.0);
        assert_eq!(parse_smoothing("0.95").unwrap(), 0.95);
        assert!(parse_smoothing("0.96")
            .unwrap_err()
            .contains("from 0 to 0.95"));
        assert!(parse_smoothing("NaN")
            .unwrap_err()
            .contains("from 0 to 0.95"));
        assert_eq!(parse_frames("3").unwrap(), 3);
        for bad in ["0", "-1", "x", ""] {
            assert!(
                parse_frames(bad).unwrap_err().contains("1 or more"),
                "{bad}"
            );
        }
        let e = parse_frames("99999999999999999999").unwrap_err();
        assert!(
            e.contains("too large") && e.contains("from 1 to 18446744073709551615"),
            "{e}"
        );
        assert!(parse_smoothing("abc").unwrap_err().contains("not a number"));
        assert_eq!(parse_blur("64").unwrap(), 64.0);
        assert!(parse_blur("0").unwrap_err().contains("from 0.5 to 64"));
        assert!(parse_blur("inf").unwrap_err().contains("from 0.5 to 64"));
    }
}
