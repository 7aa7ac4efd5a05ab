//! Python literals as Ultralytics writes them into a model's metadata
//! (`str()` of a dict, list or tuple: `{0: 'person', 1: "it's"}`,
//! `[640, 640]`, `{'nms': True, 'data': None}`): a small strict parser of
//! that subset. Anything else (an expression, a set, bytes, a trailing
//! character) is refused with a message saying what and where.

/// A parsed literal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Literal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A list or a tuple.
    List(Vec<Literal>),
    /// Key/value pairs in the order written.
    Dict(Vec<(Literal, Literal)>),
}

impl Literal {
    /// Parses the whole of `text`.
    pub(crate) fn parse(text: &str) -> Result<Literal, String> {
        let mut p = Parser {
            chars: text.char_indices().collect(),
            at: 0,
        };
        let value = p.value(0)?;
        p.blank();
        if p.at < p.chars.len() {
            return Err(p.error("unexpected text after the value"));
        }
        Ok(value)
    }

    /// The value of `key` in a dict with string keys.
    pub(crate) fn get(&self, key: &str) -> Option<&Literal> {
        match self {
            Literal::Dict(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Literal::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Deeper nesting is refused: the metadata holds flat dicts and lists.
const MAX_DEPTH: usize = 16;

struct Parser {
    chars: Vec<(usize, char)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).map(|&(_, c)| c)
    }

    fn error(&self, what: &str) -> String {
        let offset = self.chars.get(self.at).map_or_else(
            || self.chars.last().map_or(0, |&(i, c)| i + c.len_utf8()),
            |&(i, _)| i,
        );
        format!("{what} at character {offset}")
    }

    fn blank(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Literal, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.blank();
        match self.peek() {
            Some('{') => self.dict(depth),
            Some('[') => self.sequence(']', depth),
            Some('(') => self.sequence(')', depth),
            Some(q @ ('\'' | '"')) => self.string(q).map(Literal::Str),
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => self.number(),
            Some(c) if c.is_ascii_alphabetic() => self.word(),
            Some(_) => Err(self.error("expected a value")),
            None => Err(self.error("expected a value, found the end")),
        }
    }

    /// Items up to `close`, separated by commas; a trailing comma is allowed.
    fn items(
        &mut self,
        close: char,
        mut item: impl FnMut(&mut Parser) -> Result<(), String>,
    ) -> Result<(), String> {
        self.at += 1;
        loop {
            self.blank();
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(());
            }
            item(self)?;
            self.blank();
            match self.peek() {
                Some(',') => self.at += 1,
                Some(c) if c == close => {}
                _ => return Err(self.error(&format!("expected ',' or '{close}'"))),
            }
        }
    }

    fn sequence(&mut self, close: char, depth: usize) -> Result<Literal, String> {
        let mut items = Vec::new();
        self.items(close, |p| {
            items.push(p.value(depth + 1)?);
            Ok(())
        })?;
        Ok(Literal::List(items))
    }

    fn dict(&mut self, depth: usize) -> Result<Literal, String> {
        let mut pairs = Vec::new();
        self.items('}', |p| {
            let key = p.value(depth + 1)?;
            p.blank();
            if p.peek() != Some(':') {
                return Err(p.error("expected ':' after a dict key"));
            }
            p.at += 1;
            pairs.push((key, p.value(depth + 1)?));
            Ok(())
        })?;
        Ok(Literal::Dict(pairs))
    }

    fn word(&mut self) -> Result<Literal, String> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        let word: String = self.chars[start..self.at].iter().map(|&(_, c)| c).collect();
        match word.as_str() {
            "None" => Ok(Literal::None),
            "True" => Ok(Literal::Bool(true)),
            "False" => Ok(Literal::Bool(false)),
            _ => {
                self.at = start;
                Err(self.error(&format!("'{word}' is not a literal")))
            }
        }
    }

    fn number(&mut self) -> Result<Literal, String> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        {
            self.at += 1;
        }
        let text: String = self.chars[start..self.at].iter().map(|&(_, c)| c).collect();
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Literal::Int(i));
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Literal::Float(f)),
            _ => {
                self.at = start;
                Err(self.error(&format!("'{text}' is not a number")))
            }
        }
    }

    /// A quoted string with Python's escapes.
    fn string(&mut self, quote: char) -> Result<String, String> {
        let open = self.at;
        self.at += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                self.at = open;
                return Err(self.error("a string is not closed"));
            };
            self.at += 1;
            match c {
                c if c == quote => return Ok(out),
                '\n' => {
                    self.at = open;
                    return Err(self.error("a string runs past the end of the line"));
                }
                '\\' => out.push(self.escape()?),
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let Some(c) = self.peek() else {
            return Err(self.error("a string ends in a backslash"));
        };
        self.at += 1;
        let hex = |p: &mut Parser, digits: usize| {
            let start = p.at;
            let text: String = p
                .chars
                .get(start..start + digits)
                .map(|s| s.iter().map(|&(_, c)| c).collect())
                .unwrap_or_default();
            let code = u32::from_str_radix(&text, 16)
                .ok()
                .filter(|_| text.len() == digits && text.chars().all(|c| c.is_ascii_hexdigit()))
                .and_then(char::from_u32);
            p.at = start + digits.min(p.chars.len() - start);
            code.ok_or_else(|| {
                p.at = start;
                p.error("a bad \\x, \\u or \\U escape")
            })
        };
        Ok(match c {
            '\\' => '\\',
            '\'' => '\'',
            '"' => '"',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'x' => hex(self, 2)?,
            'u' => hex(self, 4)?,
            'U' => hex(self, 8)?,
            other => {
                self.at -= 1;
                return Err(self.error(&format!("an unknown escape '\\{other}'")));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Literal::{self, *};

    #[test]
    fn python_reprs_parse() {
        let names =
            Literal::parse(r#"{0: 'person', 1: "it's", 2: 'say "hi"', 3: 'a\\b\n\x41\u00e9'}"#)
                .unwrap();
        assert_eq!(
            names,
            Dict(vec![
                (Int(0), Str("person".into())),
                (Int(1), Str("it's".into())),
                (Int(2), Str("say \"hi\"".into())),
                (Int(3), Str("a\\b\nAé".into())),
            ])
        );
        assert_eq!(
            Literal::parse("[64, 96]").unwrap(),
            List(vec![Int(64), Int(96)])
        );
        let args = Literal::parse("{'nms': True, 'data': None, 'x': (1, -2.5,), 'e': {}}").unwrap();
        assert_eq!(args.get("nms"), Some(&Bool(true)));
        assert_eq!(args.get("data"), Some(&None));
        assert_eq!(args.get("x"), Some(&List(vec![Int(1), Float(-2.5)])));
        assert_eq!(args.get("e"), Some(&Dict(vec![])));
        assert_eq!(Literal::parse(" 640 ").unwrap(), Int(640));
    }

    #[test]
    fn malformed_literals_are_refused_saying_where() {
        for (text, needle) in [
            ("{0: 'person'", "expected ',' or '}' at character 12"),
            (
                "{0 'person'}",
                "expected ':' after a dict key at character 3",
            ),
            ("{0: 'person}", "a string is not closed at character 4"),
            ("{0: person}", "'person' is not a literal at character 4"),
            ("[1, 2] x", "unexpected text after the value at character 7"),
            ("'\\q'", "an unknown escape '\\q' at character 2"),
            ("'\\x4'", "a bad \\x, \\u or \\U escape at character 3"),
            ("[1e999]", "'1e999' is not a number"),
            ("", "expected a value, found the end at character 0"),
            (&"[".repeat(40), "nested too deeply"),
        ] {
            let err = Literal::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
