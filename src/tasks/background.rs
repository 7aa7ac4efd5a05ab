//! What replaces the background of a segmented frame, as users write it
//! (`wgnnsegment`'s `background` property, `wgnn-selfie --background`): a
//! colour or an image file.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// A background as written by the user; [`Segmenter`](super::Segmenter)
/// loads an image when it is made.
#[derive(Clone, Debug, PartialEq)]
pub enum BackgroundSpec {
    /// RGBA.
    Color([u8; 4]),
    Image(PathBuf),
}

impl BackgroundSpec {
    /// `#RRGGBB`, `#RRGGBBAA`, a colour name (black, white, grey, red, green,
    /// blue, transparent), or else the path of an image file.
    pub fn parse(s: &str) -> Result<BackgroundSpec> {
        let s = s.trim();
        if s.is_empty() {
            return Err(Error::invalid("background: empty value"));
        }
        if let Some(hex) = s.strip_prefix('#') {
            let bad = || {
                Error::invalid(format!(
                    "background \"{s}\": a colour is #RRGGBB or #RRGGBBAA in hexadecimal"
                ))
            };
            if !(hex.len() == 6 || hex.len() == 8) || !hex.is_ascii() {
                return Err(bad());
            }
            let mut rgba = [255u8; 4];
            for (i, c) in rgba.iter_mut().take(hex.len() / 2).enumerate() {
                *c = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
            }
            return Ok(BackgroundSpec::Color(rgba));
        }
        let named = match s.to_ascii_lowercase().as_str() {
            "black" => Some([0, 0, 0, 255]),
            "white" => Some([255, 255, 255, 255]),
            "grey" | "gray" => Some([128, 128, 128, 255]),
            "red" => Some([255, 0, 0, 255]),
            "green" => Some([0, 177, 64, 255]),
            "blue" => Some([0, 71, 187, 255]),
            "transparent" => Some([0, 0, 0, 0]),
            _ => None,
        };
        Ok(match named {
            Some(c) => BackgroundSpec::Color(c),
            None => BackgroundSpec::Image(PathBuf::from(s)),
        })
    }

    /// The image's pixels as RGBA rows, for [`BackgroundSpec::Image`]: a
    /// regular file, within [`crate::files::MAX_IMAGE_PIXELS`] by its header.
    pub fn load_image(path: &std::path::Path) -> Result<(Vec<u8>, u32, u32)> {
        let img = crate::files::decode_image(path)
            .map_err(|e| {
                Error::invalid(format!(
                    "background image {}: cannot read it: {e}",
                    path.display()
                ))
            })?
            .to_rgba8();
        let (w, h) = img.dimensions();
        if w == 0 || h == 0 {
            return Err(Error::invalid(format!(
                "background image {}: it is empty ({w}x{h})",
                path.display()
            )));
        }
        Ok((img.into_raw(), w, h))
    }
}

impl std::fmt::Display for BackgroundSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackgroundSpec::Color([r, g, b, a]) => write!(f, "#{r:02x}{g:02x}{b:02x}{a:02x}"),
            BackgroundSpec::Image(p) => write!(f, "{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_names_and_paths() {
        assert_eq!(
            BackgroundSpec::parse("#102030").unwrap(),
            BackgroundSpec::Color([16, 32, 48, 255])
        );
        assert_eq!(
            BackgroundSpec::parse("#10203040").unwrap(),
            BackgroundSpec::Color([16, 32, 48, 64])
        );
        assert_eq!(
            BackgroundSpec::parse("Black").unwrap(),
            BackgroundSpec::Color([0, 0, 0, 255])
        );
        assert_eq!(
            BackgroundSpec::parse("beach.jpg").unwrap(),
            BackgroundSpec::Image("beach.jpg".into())
        );
        for bad in ["", "#12345", "#zzzzzz", "#1234567", "#ééé"] {
            assert!(BackgroundSpec::parse(bad).is_err(), "{bad}");
        }
        let shown = BackgroundSpec::parse("#0a0b0c").unwrap().to_string();
        assert_eq!(shown, "#0a0b0cff");
    }
}
