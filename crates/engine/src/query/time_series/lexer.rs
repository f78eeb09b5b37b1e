//! Tokens of a time-series sub-query (`from HeartRate between $start and $end where Tag = 'x' group by 1h
//! select min(), max()`): words, numbers, quoted strings, `$parameters` and punctuation.

use super::error::invalid;
use crate::EngineError;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    /// A name or keyword (`from`, `HeartRate`, `h`).
    Word(String),
    /// A number as written.
    Number(String),
    /// A quoted string, unquoted.
    Text(String),
    /// `$name`, without the `$`.
    Parameter(String),
    /// `(`, `)`, `,`, `.`, `[`, `]`, `=`, `==`, `!=`, `<`, `<=`, `>`, `>=`.
    Symbol(&'static str),
}

const SYMBOLS: [&str; 13] = ["==", "!=", "<=", ">=", "(", ")", ",", ".", "[", "]", "=", "<", ">"];

/// Splits `text` into tokens.
pub(super) fn tokenize(text: &str) -> Result<Vec<Token>, EngineError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' || c == '"' {
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(invalid(format!("Unterminated string in the time-series query '{text}'"))),
                    Some('\\') if chars.get(i + 1).is_some() => {
                        value.push(chars[i + 1]);
                        i += 2;
                    }
                    Some(q) if *q == c => {
                        i += 1;
                        break;
                    }
                    Some(other) => {
                        value.push(*other);
                        i += 1;
                    }
                }
            }
            out.push(Token::Text(value));
        } else if c == '$' {
            let start = i + 1;
            i = start;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Parameter(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' || c == '@' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '@') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let symbol = SYMBOLS
                .iter()
                .find(|s| rest.starts_with(**s))
                .ok_or_else(|| invalid(format!("Unexpected '{c}' in the time-series query '{text}'")))?;
            i += symbol.chars().count();
            out.push(Token::Symbol(symbol));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_query() {
        let tokens = tokenize("from p.\"gas m3\" between $start and '2020' where Values[0] >= -1.5 group by 1h").unwrap();
        assert_eq!(tokens[1], Token::Word("p".into()));
        assert_eq!(tokens[3], Token::Text("gas m3".into()));
        assert_eq!(tokens[5], Token::Parameter("start".into()));
        assert!(tokens.contains(&Token::Symbol(">=")));
        assert!(tokens.contains(&Token::Number("-1.5".into())));
        assert_eq!(tokens[tokens.len() - 2], Token::Number("1".into()));
        assert_eq!(tokens[tokens.len() - 1], Token::Word("h".into()));
    }
}
