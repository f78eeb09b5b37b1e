//! Tokens of the C# subset: identifiers, literals (including `1m`, `2.5d`, `@"verbatim"`, `'c'`) and
//! punctuation. Comments (`//`, `/* */`) are skipped.

use crate::error::{ErrorKind, LinqError};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Punct(&'static str),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: usize,
}

const PUNCTS: &[&str] = &[
    "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "+", "-", "*", "/", "%", "<", ">", "!", "?", ":", ".", ",", "(", ")", "[", "]",
    "{", "}", "=", ";", "&", "|", "^",
];

pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, LinqError> {
    let bytes = text.as_bytes();
    let err = |pos: usize, msg: String| LinqError::at(ErrorKind::Parse, text, pos, msg);
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map(|n| i + n + 4).ok_or_else(|| err(i, "Unterminated comment".into()))?;
            continue;
        }
        let start = i;
        if c == b'@' && bytes.get(i + 1) == Some(&b'"') {
            i += 2;
            let mut s = String::new();
            loop {
                let ch = text[i..].chars().next().ok_or_else(|| err(start, "Unterminated string literal".into()))?;
                i += ch.len_utf8();
                if ch == '"' {
                    if bytes.get(i) == Some(&b'"') {
                        s.push('"');
                        i += 1;
                    } else {
                        break;
                    }
                } else {
                    s.push(ch);
                }
            }
            out.push(Token { tok: Tok::Str(s), pos: start });
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            let mut s = String::new();
            loop {
                let ch = text[i..].chars().next().ok_or_else(|| err(start, "Unterminated string literal".into()))?;
                i += ch.len_utf8();
                if ch as u32 == c as u32 {
                    break;
                }
                if ch == '\n' {
                    return Err(err(start, "Newline in string literal".into()));
                }
                if ch == '\\' {
                    let e = text[i..].chars().next().ok_or_else(|| err(start, "Unterminated string literal".into()))?;
                    i += e.len_utf8();
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        '\\' | '"' | '\'' => e,
                        'u' => {
                            let hex = text.get(i..i + 4).ok_or_else(|| err(i, "Bad \\u escape".into()))?;
                            i += 4;
                            u32::from_str_radix(hex, 16).ok().and_then(char::from_u32).ok_or_else(|| err(i - 6, "Bad \\u escape".into()))?
                        }
                        other => return Err(err(i - 2, format!("Unsupported escape '\\{other}'"))),
                    });
                } else {
                    s.push(ch);
                }
            }
            if c == b'\'' && s.chars().count() != 1 {
                return Err(err(start, "A character literal must hold exactly one character".into()));
            }
            out.push(Token { tok: Tok::Str(s), pos: start });
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            let mut float = false;
            if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if matches!(bytes.get(i), Some(b'e' | b'E')) {
                float = true;
                i += 1;
                if matches!(bytes.get(i), Some(b'+' | b'-')) {
                    i += 1;
                }
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let digits: String = text[start..i].chars().filter(|c| *c != '_').collect();
            let suffix = bytes.get(i).copied().unwrap_or(b' ');
            let mut decimal = false;
            match suffix {
                b'm' | b'M' => {
                    decimal = true;
                    i += 1
                }
                b'd' | b'D' | b'f' | b'F' => {
                    float = true;
                    i += 1
                }
                b'l' | b'L' | b'u' | b'U' => {
                    i += 1;
                    if matches!(bytes.get(i), Some(b'l' | b'L' | b'u' | b'U')) {
                        i += 1;
                    }
                }
                _ => {}
            }
            if bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                return Err(err(start, format!("Invalid number literal '{}'", &text[start..=i])));
            }
            let tok = if float {
                Tok::Float(digits.parse().map_err(|_| err(start, "Invalid number literal".into()))?)
            } else {
                match digits.parse::<i64>() {
                    Ok(n) => Tok::Int(n),
                    Err(_) if decimal || digits.contains('.') => {
                        Tok::Float(digits.parse().map_err(|_| err(start, "Invalid number literal".into()))?)
                    }
                    Err(_) => return Err(err(start, format!("Number literal '{digits}' out of range"))),
                }
            };
            out.push(Token { tok, pos: start });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || (c == b'@' && bytes.get(i + 1).is_some_and(|b| b.is_ascii_alphabetic())) {
            if c == b'@' {
                i += 1;
            }
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(text[s..i].to_string()), pos: start });
            continue;
        }
        match PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            Some(p) => {
                // `?.5` is a conditional followed by a number, not a null-conditional access.
                if *p == "?." && bytes.get(i + 2).is_some_and(u8::is_ascii_digit) {
                    out.push(Token { tok: Tok::Punct("?"), pos: start });
                    i += 1;
                } else {
                    out.push(Token { tok: Tok::Punct(p), pos: start });
                    i += p.len();
                }
            }
            None => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                return Err(err(i, format!("Unexpected character '{ch}'")));
            }
        }
    }
    out.push(Token { tok: Tok::Eof, pos: text.len() });
    Ok(out)
}
