//! A PNG sequence's file name reaches multifilesink's `location`, which is a
//! printf format given one integer (the frame index): anything but exactly
//! one integer field would read what is not there (`%s` crashes, `%n`
//! aborts, a second `%d` prints stack garbage). Checked here, before work
//! starts.

/// The accepted form, for messages.
const ACCEPTED: &str = "give one frame number, %d or %0Nd like %05d (%% for a percent sign)";

/// Checks that `name` holds exactly one integer field: `%d`, `%i` or `%u`,
/// with an optional `0` flag and a width of at most two digits; `%%` is a
/// literal percent sign.
pub fn check_pattern(name: &str) -> Result<(), String> {
    let mut fields = 0;
    let mut rest = name;
    while let Some(at) = rest.find('%') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('%') {
            rest = tail;
            continue;
        }
        let width = after.bytes().take_while(u8::is_ascii_digit).count();
        let conversion = after[width..].chars().next();
        match conversion {
            Some('d' | 'i' | 'u') if width <= 2 => fields += 1,
            _ => {
                let end = width + conversion.map_or(0, char::len_utf8);
                return Err(format!(
                    "'%{}' in the file name is not a frame number: {ACCEPTED}",
                    &after[..end]
                ));
            }
        }
        rest = &after[width + 1..];
    }
    match fields {
        1 => Ok(()),
        0 => Err(format!("the file name needs a frame number: {ACCEPTED}")),
        n => Err(format!("the file name holds {n} frame numbers: {ACCEPTED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_integer_field_and_nothing_else() {
        for good in [
            "%d.png",
            "%05d.png",
            "frame-%3i.png",
            "%u.png",
            "100%%-%02d.png",
        ] {
            assert_eq!(check_pattern(good), Ok(()), "{good}");
        }
        let cases = [
            (
                "%s%s%s%s%s%s.png",
                "'%s' in the file name is not a frame number",
            ),
            ("%n.png", "'%n' in the file name"),
            ("%d_%d.png", "the file name holds 2 frame numbers"),
            ("%ld.png", "'%l' in the file name"),
            ("%-5d.png", "'%-' in the file name"),
            ("%100d.png", "'%100d' in the file name"),
            ("%.png", "'%.' in the file name"),
            ("x%", "'%' in the file name"),
            ("100%%.png", "the file name needs a frame number"),
            ("%é.png", "'%é' in the file name"),
        ];
        for (bad, says) in cases {
            let e = check_pattern(bad).unwrap_err();
            assert!(e.starts_with(says), "{bad}: {e}");
            assert!(e.ends_with(ACCEPTED), "{bad}: {e}");
        }
    }
}
