//! On-demand tokenizer for RQL (RavenDB's `QueryScanner` rules, spec section 1.1).
//!
//! The lexer is pulled by the parser one token at a time, because JavaScript bodies (`declare function`,
//! `select { … }`, `update { … }`) are not RQL tokens: the parser takes them as raw text with
//! [`Lexer::scan_balanced`] and resumes lexing after them.

use crate::error::ParseError;
use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A bare identifier; keywords are identifiers too, matched case-insensitively by the parser.
    Ident(String),
    /// `'…'` or `"…"`, escapes resolved.
    Str(String),
    Long(i64),
    Double(f64),
    /// `$name`, without the `$`.
    Param(String),
    Eq,
    EqEq,
    NotEq,
    LtGt,
    Lt,
    Le,
    Gt,
    Ge,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Dot,
    Star,
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '@'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Lexer<'a> {
        Lexer { text, pos: 0 }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Moves the read position (used after a raw block was consumed).
    pub fn reset(&mut self, pos: usize) {
        self.pos = pos;
    }

    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        ParseError::new(self.text, pos, msg, Vec::new())
    }

    fn peek_char(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        self.text.get(pos..).and_then(|s| s.chars().next())
    }

    /// Skips whitespace and both comment forms.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            let rest = &self.text[self.pos..];
            if let Some(c) = rest.chars().next().filter(|c| c.is_whitespace()) {
                self.pos += c.len_utf8();
            } else if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if let Some(body) = rest.strip_prefix("/*") {
                match body.find("*/") {
                    Some(end) => self.pos += end + 4,
                    None => return Err(self.err(self.pos, "Unterminated comment")),
                }
            } else {
                return Ok(());
            }
        }
    }

    pub fn next_token(&mut self) -> Result<Token, ParseError> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok(Token { tok: Tok::Eof, span: Span::new(start, start) });
        };
        let two = self.text[start..].get(..2).unwrap_or("");
        let (tok, len) = match (c, two) {
            (_, "==") => (Tok::EqEq, 2),
            (_, "!=") => (Tok::NotEq, 2),
            (_, "<>") => (Tok::LtGt, 2),
            (_, "<=") => (Tok::Le, 2),
            (_, ">=") => (Tok::Ge, 2),
            ('=', _) => (Tok::Eq, 1),
            ('<', _) => (Tok::Lt, 1),
            ('>', _) => (Tok::Gt, 1),
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('{', _) => (Tok::LBrace, 1),
            ('}', _) => (Tok::RBrace, 1),
            ('[', _) => (Tok::LBracket, 1),
            (']', _) => (Tok::RBracket, 1),
            (',', _) => (Tok::Comma, 1),
            ('.', _) => (Tok::Dot, 1),
            ('*', _) => (Tok::Star, 1),
            ('\'' | '"', _) => return self.string(c),
            ('$', _) => return self.parameter(),
            ('-', _) if self.char_at(start + 1).is_some_and(|d| d.is_ascii_digit()) => return self.number(),
            (d, _) if d.is_ascii_digit() => return self.number(),
            (c, _) if is_ident_start(c) => return self.identifier(),
            (c, _) => return Err(self.err(start, format!("Unexpected character '{c}'"))),
        };
        self.pos += len;
        Ok(Token { tok, span: Span::new(start, self.pos) })
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek_char().filter(|&c| f(c)) {
            self.pos += c.len_utf8();
        }
        &self.text[start..self.pos]
    }

    fn identifier(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        let first = self.peek_char().unwrap_or('_');
        self.pos += first.len_utf8();
        self.take_while(is_ident_continue);
        let word = &self.text[start..self.pos];
        if first == '@' && (word.len() == 1 || self.char_at(start + 1) == Some('@')) {
            return Err(self.err(start, "Invalid identifier: '@' must be followed by a letter"));
        }
        if first == '_' && self.char_at(self.pos) == Some('@') {
            return Err(self.err(start, "Invalid identifier: '@' cannot follow '_'"));
        }
        Ok(Token { tok: Tok::Ident(word.to_string()), span: Span::new(start, self.pos) })
    }

    fn parameter(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        self.pos += 1;
        if !self.peek_char().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return Err(self.err(start, "Expected a parameter name after '$'"));
        }
        let name = self.take_while(is_ident_continue);
        Ok(Token { tok: Tok::Param(name.to_string()), span: Span::new(start, self.pos) })
    }

    fn number(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        if self.peek_char() == Some('-') {
            self.pos += 1;
        }
        self.take_while(|c| c.is_ascii_digit() || c == '_');
        let is_double = self.peek_char() == Some('.') && self.char_at(self.pos + 1).is_some_and(|c| c.is_ascii_digit());
        if is_double {
            self.pos += 1;
            self.take_while(|c| c.is_ascii_digit() || c == '_');
        }
        let raw = &self.text[start..self.pos];
        let span = Span::new(start, self.pos);
        if raw.ends_with('_') {
            return Err(self.err(start, format!("Invalid number '{raw}'")));
        }
        if is_double {
            if raw.contains('_') {
                return Err(self.err(start, format!("Invalid number '{raw}': '_' is allowed only in integers")));
            }
            let value: f64 = raw.parse().map_err(|_| self.err(start, format!("Invalid number '{raw}'")))?;
            return Ok(Token { tok: Tok::Double(value), span });
        }
        let digits: String = raw.chars().filter(|&c| c != '_').collect();
        let value: i64 = digits.parse().map_err(|_| self.err(start, format!("Number '{raw}' is too large")))?;
        Ok(Token { tok: Tok::Long(value), span })
    }

    fn string(&mut self, quote: char) -> Result<Token, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut value = String::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(self.err(start, "Unterminated string"));
            };
            self.pos += c.len_utf8();
            if c == quote {
                if self.peek_char() == Some(quote) {
                    self.pos += 1;
                    value.push(quote);
                    continue;
                }
                return Ok(Token { tok: Tok::Str(value), span: Span::new(start, self.pos) });
            }
            if c == '\\' {
                let esc_pos = self.pos - 1;
                let Some(e) = self.peek_char() else {
                    return Err(self.err(start, "Unterminated string"));
                };
                self.pos += e.len_utf8();
                value.push(match e {
                    '\'' => '\'',
                    '"' => '"',
                    '\\' => '\\',
                    't' => '\t',
                    'n' => '\n',
                    'r' => '\r',
                    'f' => '\u{c}',
                    'b' => '\u{8}',
                    'u' => self.unicode_escape(esc_pos)?,
                    other => return Err(self.err(esc_pos, format!("Invalid escape sequence '\\{other}' in string"))),
                });
                continue;
            }
            value.push(c);
        }
    }

    /// The rest of a `\uXXXX` escape (the clients escape non-ASCII and control characters this way); a
    /// surrogate pair is two escapes in a row, as in JSON.
    fn unicode_escape(&mut self, esc_pos: usize) -> Result<char, ParseError> {
        let high = self.hex4(esc_pos)?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high).ok_or_else(|| self.err(esc_pos, "Invalid escape sequence '\\u': a lone low surrogate"));
        }
        let rest = &self.text[self.pos..];
        if !rest.starts_with("\\u") {
            return Err(self.err(esc_pos, "Invalid escape sequence '\\u': a high surrogate must be followed by a low one"));
        }
        self.pos += 2;
        let low = self.hex4(esc_pos)?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(self.err(esc_pos, "Invalid escape sequence '\\u': a high surrogate must be followed by a low one"));
        }
        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
        char::from_u32(code).ok_or_else(|| self.err(esc_pos, "Invalid escape sequence '\\u'"))
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self, esc_pos: usize) -> Result<u32, ParseError> {
        let digits = self.text.get(self.pos..self.pos + 4).filter(|d| d.chars().all(|c| c.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(self.err(esc_pos, "Invalid escape sequence '\\u': expected four hex digits"));
        };
        self.pos += 4;
        Ok(u32::from_str_radix(digits, 16).expect("checked hex digits"))
    }

    /// Scans a balanced `open … close` block that starts at byte `start` (which must hold `open`), skipping
    /// JavaScript strings, template literals and comments. Returns the end offset (just past `close`).
    pub fn scan_balanced(&self, start: usize, open: u8, close: u8, what: &str) -> Result<usize, ParseError> {
        let bytes = self.text.as_bytes();
        debug_assert_eq!(bytes.get(start), Some(&open));
        let mut depth = 0usize;
        let mut i = start;
        let unterminated = || self.err(start, format!("Unterminated {what}: missing '{}'", close as char));
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'\'' | b'"' | b'`' => {
                    i += 1;
                    loop {
                        match bytes.get(i) {
                            None => return Err(unterminated()),
                            Some(b'\\') => i += 2,
                            Some(&q) if q == b => break,
                            Some(_) => i += 1,
                        }
                    }
                }
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => match self.text[i + 2..].find("*/") {
                    Some(end) => i += 2 + end + 1,
                    None => return Err(unterminated()),
                },
                _ if b == open => depth += 1,
                _ if b == close => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(unterminated())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token().unwrap();
            if t.tok == Tok::Eof {
                return out;
            }
            out.push(t.tok);
        }
    }

    fn lex_err(text: &str) -> ParseError {
        let mut lx = Lexer::new(text);
        loop {
            match lx.next_token() {
                Err(e) => return e,
                Ok(t) if t.tok == Tok::Eof => panic!("no error for {text}"),
                Ok(_) => {}
            }
        }
    }

    fn id(s: &str) -> Tok {
        Tok::Ident(s.into())
    }

    #[test]
    fn identifiers_and_punctuation() {
        assert_eq!(
            toks("from Users as u where u.Name=='x'"),
            vec![id("from"), id("Users"), id("as"), id("u"), id("where"), id("u"), Tok::Dot, id("Name"), Tok::EqEq, Tok::Str("x".into())]
        );
        assert_eq!(toks("a-b @all_docs _x1"), vec![id("a-b"), id("@all_docs"), id("_x1")]);
        assert_eq!(
            toks("Lines[].P[0]"),
            vec![id("Lines"), Tok::LBracket, Tok::RBracket, Tok::Dot, id("P"), Tok::LBracket, Tok::Long(0), Tok::RBracket]
        );
        assert_eq!(
            toks("= == != <> < <= > >= ( ) { } , *"),
            vec![
                Tok::Eq,
                Tok::EqEq,
                Tok::NotEq,
                Tok::LtGt,
                Tok::Lt,
                Tok::Le,
                Tok::Gt,
                Tok::Ge,
                Tok::LParen,
                Tok::RParen,
                Tok::LBrace,
                Tok::RBrace,
                Tok::Comma,
                Tok::Star
            ]
        );
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            toks(r#"'O''Neil' "say ""hi""" 'a\'b\\c\n' "tab\t""#),
            vec![Tok::Str("O'Neil".into()), Tok::Str("say \"hi\"".into()), Tok::Str("a'b\\c\n".into()), Tok::Str("tab\t".into())]
        );
        assert_eq!(lex_err("x = 'abc").position, 4);
        assert_eq!(lex_err("x = 'abc").message, "Unterminated string");
        assert_eq!(lex_err(r"'a\qb'").position, 2);
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(toks(r"'caf\u00e9 \u00E9t\u00e9'"), vec![Tok::Str("café été".into())]);
        assert_eq!(toks(r#""\ud83d\ude00!""#), vec![Tok::Str("\u{1F600}!".into())]);
        assert_eq!(toks(r"'\u0041\u000a'"), vec![Tok::Str("A\n".into())]);
        assert_eq!(lex_err(r"'a\u12'").position, 2);
        assert_eq!(lex_err(r"'a\uzzzz'").position, 2);
        assert!(lex_err(r"'\ud83d x'").message.contains("low"));
        assert!(lex_err(r"'\ude00'").message.contains("surrogate"));
    }

    #[test]
    fn numbers_and_parameters() {
        assert_eq!(
            toks("1 -5 10_000 3.25 -0.5 $p0 $userName"),
            vec![
                Tok::Long(1),
                Tok::Long(-5),
                Tok::Long(10_000),
                Tok::Double(3.25),
                Tok::Double(-0.5),
                Tok::Param("p0".into()),
                Tok::Param("userName".into())
            ]
        );
        assert_eq!(toks("Age>-5"), vec![id("Age"), Tok::Gt, Tok::Long(-5)]);
        assert!(lex_err("1_0.5").message.contains("'_'"));
        assert!(lex_err("99999999999999999999").message.contains("too large"));
        assert!(lex_err("$ x").message.contains("parameter"));
    }

    #[test]
    fn comments_and_bad_identifiers() {
        assert_eq!(toks("a // comment\n b /* x \n y */ c"), vec![id("a"), id("b"), id("c")]);
        assert_eq!(lex_err("a /* open").message, "Unterminated comment");
        assert!(lex_err("@ x").message.contains('@'));
        assert!(lex_err("@@x").message.contains('@'));
        assert_eq!(lex_err("a # b").position, 2);
    }

    #[test]
    fn balanced_blocks() {
        let text = "{ a: '}', b: \"{\", c: `}`, d: { e: 1 } /* } */ // }\n }rest";
        let lx = Lexer::new(text);
        assert_eq!(&text[lx.scan_balanced(0, b'{', b'}', "block").unwrap()..], "rest");
        assert!(Lexer::new("{ a: { }").scan_balanced(0, b'{', b'}', "block").is_err());
        assert!(Lexer::new("{ 'abc }").scan_balanced(0, b'{', b'}', "block").is_err());
    }
}
