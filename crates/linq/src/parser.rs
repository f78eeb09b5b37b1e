//! Recursive-descent parser for the C# subset (precedence climbing for binary operators).

use crate::ast::{BinOp, Clause, Expr, ExprKind, Query, QueryBody, QueryEnd, Source, UnOp};
use crate::error::{ErrorKind, LinqError};
use crate::lexer::{tokenize, Tok, Token};

/// Type names accepted in casts, `new T[]` and `LoadDocument<T>`.
const CAST_TYPES: &[&str] = &[
    "int",
    "long",
    "short",
    "byte",
    "double",
    "float",
    "decimal",
    "string",
    "object",
    "bool",
    "dynamic",
    "DateTime",
    "DateTimeOffset",
    "TimeSpan",
    "Int32",
    "Int64",
    "Double",
    "Decimal",
    "String",
    "Object",
    "Boolean",
    "uint",
    "ulong",
    "char",
    "Guid",
];

/// Bound on the depth of the syntax tree (nesting plus operator and member chains), so that evaluating
/// and dropping a tree cannot overflow the stack.
const MAX_DEPTH: usize = 128;

pub(crate) fn parse(text: &str) -> Result<Expr, LinqError> {
    let tokens = tokenize(text)?;
    let mut p = Parser { text, tokens, at: 0, depth: 0 };
    let e = p.expr()?;
    while p.eat(";") {}
    if p.peek() != &Tok::Eof {
        return Err(p.unexpected("end of definition"));
    }
    Ok(e)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Int(n) => format!("'{n}'"),
        Tok::Float(f) => format!("'{f}'"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Punct(p) => format!("'{p}'"),
        Tok::Eof => "end of text".into(),
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.at].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.tokens[(self.at + n).min(self.tokens.len() - 1)].tok
    }
    fn pos(&self) -> usize {
        self.tokens[self.at].pos
    }
    fn bump(&mut self) -> Tok {
        let t = self.tokens[self.at].tok.clone();
        if self.at < self.tokens.len() - 1 {
            self.at += 1;
        }
        t
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn is_at(&self, n: usize, p: &str) -> bool {
        matches!(self.peek_at(n), Tok::Punct(q) if *q == p)
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == w)
    }
    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn error(&self, pos: usize, msg: impl Into<String>) -> LinqError {
        LinqError::at(ErrorKind::Parse, self.text, pos, msg)
    }
    fn unexpected(&self, expected: &str) -> LinqError {
        self.error(self.pos(), format!("Expected {expected} but got {}", describe(self.peek())))
    }
    fn expect(&mut self, p: &str) -> Result<(), LinqError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{p}'")))
        }
    }
    fn expect_word(&mut self, w: &str) -> Result<(), LinqError> {
        if self.is_word(w) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{w}'")))
        }
    }
    fn ident(&mut self) -> Result<String, LinqError> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.bump();
                Ok(s)
            }
            _ => Err(self.unexpected("an identifier")),
        }
    }

    pub(crate) fn expr(&mut self) -> Result<Expr, LinqError> {
        let mark = self.depth;
        let r = self.deeper().and_then(|_| self.expr_inner());
        self.depth = mark;
        r
    }

    /// Counts one more level of tree depth; fails past [`MAX_DEPTH`].
    fn deeper(&mut self) -> Result<(), LinqError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(self.pos(), "Expression nested too deeply"));
        }
        Ok(())
    }

    fn expr_inner(&mut self) -> Result<Expr, LinqError> {
        let pos = self.pos();
        // Lambdas: `x => e`, `(x, y) => e`, `() => e`.
        if matches!(self.peek(), Tok::Ident(_)) && self.is_at(1, "=>") {
            let name = self.ident()?;
            self.bump();
            let body = self.expr()?;
            return Ok(Expr { pos, kind: ExprKind::Lambda(vec![name], Box::new(body)) });
        }
        if self.is("(") {
            let mut n = 1;
            let mut names = Vec::new();
            let mut ok = true;
            loop {
                match self.peek_at(n) {
                    Tok::Ident(s) => {
                        names.push(s.clone());
                        n += 1;
                        if self.is_at(n, ",") {
                            n += 1;
                        } else if !self.is_at(n, ")") {
                            ok = false;
                            break;
                        }
                    }
                    Tok::Punct(")") => break,
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && self.is_at(n + 1, "=>") {
                self.at += n + 2;
                let body = self.expr()?;
                return Ok(Expr { pos, kind: ExprKind::Lambda(names, Box::new(body)) });
            }
        }
        // `from` starts a query unless it is used as an ordinary name (`from.X`, `from + 1`).
        if self.is_word("from") && matches!(self.peek_at(1), Tok::Ident(_)) {
            return self.query();
        }
        self.conditional()
    }

    fn conditional(&mut self) -> Result<Expr, LinqError> {
        let cond = self.binary(0)?;
        if self.is("?") {
            self.bump();
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            let pos = cond.pos;
            return Ok(Expr { pos, kind: ExprKind::Cond(Box::new(cond), Box::new(a), Box::new(b)) });
        }
        Ok(cond)
    }

    fn binop(&self) -> Option<(BinOp, u8)> {
        let p = match self.peek() {
            Tok::Punct(p) => *p,
            _ => return None,
        };
        Some(match p {
            "??" => (BinOp::Coalesce, 1),
            "||" => (BinOp::Or, 2),
            "&&" => (BinOp::And, 3),
            "==" => (BinOp::Eq, 4),
            "!=" => (BinOp::Ne, 4),
            "<" => (BinOp::Lt, 5),
            ">" => (BinOp::Gt, 5),
            "<=" => (BinOp::Le, 5),
            ">=" => (BinOp::Ge, 5),
            "+" => (BinOp::Add, 6),
            "-" => (BinOp::Sub, 6),
            "*" => (BinOp::Mul, 7),
            "/" => (BinOp::Div, 7),
            "%" => (BinOp::Rem, 7),
            _ => return None,
        })
    }

    fn binary(&mut self, min: u8) -> Result<Expr, LinqError> {
        let mark = self.depth;
        let r = self.binary_chain(min);
        self.depth = mark;
        r
    }

    fn binary_chain(&mut self, min: u8) -> Result<Expr, LinqError> {
        let mut left = self.unary()?;
        loop {
            if matches!(self.peek(), Tok::Punct("&" | "|" | "^")) {
                return Err(self.error(self.pos(), format!("Bitwise operator {} is not supported", describe(self.peek()))));
            }
            if self.is_word("is") || self.is_word("as") {
                return Err(self.error(self.pos(), format!("Operator {} is not supported", describe(self.peek()))));
            }
            let Some((op, prec)) = self.binop() else { break };
            if prec < min {
                break;
            }
            self.deeper()?;
            self.bump();
            // `??` is right-associative; the others are left-associative.
            let right = if op == BinOp::Coalesce { self.binary(prec)? } else { self.binary(prec + 1)? };
            let pos = left.pos;
            left = Expr { pos, kind: ExprKind::Binary(op, Box::new(left), Box::new(right)) };
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, LinqError> {
        let mark = self.depth;
        let r = self.deeper().and_then(|_| self.unary_inner());
        self.depth = mark;
        r
    }

    fn unary_inner(&mut self) -> Result<Expr, LinqError> {
        let pos = self.pos();
        if self.eat("!") {
            let e = self.unary()?;
            return Ok(Expr { pos, kind: ExprKind::Unary(UnOp::Not, Box::new(e)) });
        }
        if self.eat("-") {
            let e = self.unary()?;
            return Ok(match e.kind {
                ExprKind::Int(n) => Expr { pos, kind: ExprKind::Int(-n) },
                ExprKind::Float(f) => Expr { pos, kind: ExprKind::Float(-f) },
                _ => Expr { pos, kind: ExprKind::Unary(UnOp::Neg, Box::new(e)) },
            });
        }
        if self.eat("+") {
            return self.unary();
        }
        if let Some((ty, len)) = self.cast_at() {
            self.at += len;
            let e = self.unary()?;
            return Ok(Expr { pos, kind: ExprKind::Cast(ty, Box::new(e)) });
        }
        self.postfix()
    }

    /// `(T)`, `(T?)`, `(T[])`, `(System.T)` where T is a known type name: returns the type and token count.
    fn cast_at(&self) -> Option<(String, usize)> {
        if !self.is("(") {
            return None;
        }
        let mut n = 1;
        let mut name = match self.peek_at(n) {
            Tok::Ident(s) => s.clone(),
            _ => return None,
        };
        n += 1;
        if name == "System" && self.is_at(n, ".") {
            name = match self.peek_at(n + 1) {
                Tok::Ident(s) => s.clone(),
                _ => return None,
            };
            n += 2;
        }
        if !CAST_TYPES.contains(&name.as_str()) {
            return None;
        }
        if self.is_at(n, "?") {
            n += 1;
        }
        if self.is_at(n, "[") && self.is_at(n + 1, "]") {
            name.push_str("[]");
            n += 2;
        }
        if self.is_at(n, ")") {
            Some((name, n + 1))
        } else {
            None
        }
    }

    fn postfix(&mut self) -> Result<Expr, LinqError> {
        let mark = self.depth;
        let r = self.postfix_chain();
        self.depth = mark;
        r
    }

    fn postfix_chain(&mut self) -> Result<Expr, LinqError> {
        let mut e = self.primary()?;
        loop {
            let pos = self.pos();
            if self.is(".") || self.is("?.") || self.is("[") {
                self.deeper()?;
            }
            if self.is(".") || self.is("?.") {
                self.bump();
                let name = self.ident()?;
                e = if self.is("(") || (self.is("<") && self.generic_at().is_some()) {
                    let generic = self.generic()?;
                    let args = self.args()?;
                    let target = match e.kind {
                        ExprKind::Ident(ref s) if s == "this" => None,
                        _ => Some(Box::new(e)),
                    };
                    Expr { pos, kind: ExprKind::Call { target, name, generic, args } }
                } else {
                    member(e, name)
                };
            } else if self.is("[") {
                self.bump();
                let index = self.expr()?;
                if self.is(",") {
                    return Err(self.error(self.pos(), "Multi-dimensional indexers are not supported"));
                }
                self.expect("]")?;
                e = match (&e.kind, &index.kind) {
                    (ExprKind::Source(Source::AllDocs), ExprKind::Str(c)) => {
                        Expr { pos: e.pos, kind: ExprKind::Source(Source::Collection(c.clone())) }
                    }
                    _ => Expr { pos: e.pos, kind: ExprKind::Index(Box::new(e), Box::new(index)) },
                };
            } else {
                return Ok(e);
            }
        }
    }

    fn generic_at(&self) -> Option<usize> {
        if !self.is("<") {
            return None;
        }
        let mut n = 1;
        loop {
            match self.peek_at(n) {
                Tok::Ident(_) => n += 1,
                _ => return None,
            }
            if self.is_at(n, ".") {
                n += 1;
                continue;
            }
            if self.is_at(n, ">") && self.is_at(n + 1, "(") {
                return Some(n + 1);
            }
            return None;
        }
    }

    fn generic(&mut self) -> Result<Option<String>, LinqError> {
        match self.generic_at() {
            Some(len) => {
                let mut name = String::new();
                for _ in 1..len - 1 {
                    if let Tok::Ident(s) = self.peek_at(1).clone() {
                        name = s;
                    }
                    self.at += 1;
                }
                self.at += 2;
                Ok(Some(name))
            }
            None => Ok(None),
        }
    }

    fn args(&mut self) -> Result<Vec<Expr>, LinqError> {
        self.expect("(")?;
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            if let Tok::Ident(w) = self.peek() {
                if matches!(w.as_str(), "out" | "ref") {
                    return Err(self.error(self.pos(), format!("'{w}' arguments are not supported")));
                }
            }
            args.push(self.expr()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> Result<Expr, LinqError> {
        let pos = self.pos();
        let kind = match self.bump() {
            Tok::Int(n) => ExprKind::Int(n),
            Tok::Float(f) => ExprKind::Float(f),
            Tok::Str(s) => ExprKind::Str(s),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            Tok::Ident(w) => match w.as_str() {
                "null" => ExprKind::Null,
                "true" => ExprKind::Bool(true),
                "false" => ExprKind::Bool(false),
                "new" => return self.new_expr(pos),
                "docs" => ExprKind::Source(Source::AllDocs),
                "results" => ExprKind::Source(Source::Results),
                "timeSeries" => ExprKind::Source(Source::TimeSeries(String::new(), None)),
                "counters" => ExprKind::Source(Source::Counters(String::new(), None)),
                "typeof" | "sizeof" | "nameof" | "default" | "checked" | "unchecked" | "await" | "stackalloc" | "delegate" => {
                    return Err(self.error(pos, format!("'{w}' is not supported")))
                }
                _ if self.is("(") || self.generic_at().is_some() => {
                    let generic = self.generic()?;
                    let args = self.args()?;
                    ExprKind::Call { target: None, name: w, generic, args }
                }
                _ => ExprKind::Ident(w),
            },
            Tok::Eof => return Err(self.error(pos, "Unexpected end of text")),
            t => return Err(self.error(pos, format!("Unexpected {}", describe(&t)))),
        };
        Ok(Expr { pos, kind })
    }

    fn new_expr(&mut self, pos: usize) -> Result<Expr, LinqError> {
        if self.is("{") {
            return self.anon(pos);
        }
        if self.eat("[") {
            self.expect("]")?;
            return self.array_items(pos);
        }
        let ty_pos = self.pos();
        let mut ty = self.ident()?;
        while self.eat(".") {
            ty = self.ident()?;
        }
        if self.eat("[") {
            self.expect("]")?;
            return self.array_items(pos);
        }
        if self.is("(") {
            if ty != "DateTime" {
                return Err(self.error(ty_pos, format!("Creating objects of type '{ty}' is not supported")));
            }
            let args = self.args()?;
            if self.is("{") {
                return Err(self.error(self.pos(), "Object initializers are not supported"));
            }
            return Ok(Expr { pos, kind: ExprKind::NewObject(ty, args) });
        }
        Err(self.error(ty_pos, format!("Creating objects of type '{ty}' is not supported")))
    }

    fn array_items(&mut self, pos: usize) -> Result<Expr, LinqError> {
        self.expect("{")?;
        let mut items = Vec::new();
        while !self.eat("}") {
            items.push(self.expr()?);
            if !self.eat(",") {
                self.expect("}")?;
                break;
            }
        }
        Ok(Expr { pos, kind: ExprKind::Array(items) })
    }

    fn anon(&mut self, pos: usize) -> Result<Expr, LinqError> {
        self.expect("{")?;
        let mut members: Vec<(String, Expr)> = Vec::new();
        while !self.eat("}") {
            let mpos = self.pos();
            let name;
            let value;
            if matches!(self.peek(), Tok::Ident(_)) && self.is_at(1, "=") {
                name = self.ident()?;
                self.bump();
                value = self.expr()?;
            } else {
                value = self.expr()?;
                name = match &value.kind {
                    ExprKind::Member(_, n) | ExprKind::Ident(n) => n.clone(),
                    ExprKind::Source(Source::Collection(n)) => n.clone(),
                    _ => return Err(self.error(mpos, "Anonymous object member needs a name: write 'Name = expression'")),
                };
            }
            if members.iter().any(|(n, _)| *n == name) {
                return Err(self.error(mpos, format!("Duplicate member '{name}' in anonymous object")));
            }
            members.push((name, value));
            if !self.eat(",") {
                self.expect("}")?;
                break;
            }
        }
        Ok(Expr { pos, kind: ExprKind::Anon(members) })
    }

    fn query(&mut self) -> Result<Expr, LinqError> {
        let pos = self.pos();
        self.expect_word("from")?;
        let var = self.ident()?;
        self.expect_word("in")?;
        let source = self.conditional()?;
        let body = self.query_body()?;
        Ok(Expr { pos, kind: ExprKind::Query(Box::new(Query { var, source, body })) })
    }

    fn query_body(&mut self) -> Result<QueryBody, LinqError> {
        let mut clauses = Vec::new();
        let end = loop {
            let pos = self.pos();
            let word = match self.peek() {
                Tok::Ident(w) => w.clone(),
                _ => return Err(self.unexpected("'select', 'group', 'where', 'let' or 'from'")),
            };
            self.bump();
            match word.as_str() {
                "from" => {
                    let v = self.ident()?;
                    self.expect_word("in")?;
                    clauses.push(Clause::From(v, self.conditional()?));
                }
                "let" => {
                    let v = self.ident()?;
                    self.expect("=")?;
                    clauses.push(Clause::Let(v, self.expr()?));
                }
                "where" => clauses.push(Clause::Where(self.expr()?)),
                "orderby" => {
                    let mut keys = Vec::new();
                    loop {
                        let e = self.conditional()?;
                        let desc = if self.is_word("descending") {
                            self.bump();
                            true
                        } else {
                            if self.is_word("ascending") {
                                self.bump();
                            }
                            false
                        };
                        keys.push((e, desc));
                        if !self.eat(",") {
                            break;
                        }
                    }
                    clauses.push(Clause::OrderBy(keys));
                }
                "select" => break QueryEnd::Select(self.expr()?),
                "group" => {
                    let element = self.conditional()?;
                    self.expect_word("by")?;
                    let key = self.conditional()?;
                    break QueryEnd::Group { element, key };
                }
                "join" => return Err(self.error(pos, "'join' clauses are not supported")),
                _ => return Err(self.error(pos, format!("Expected 'select', 'group', 'where', 'let' or 'from' but got '{word}'"))),
            }
        };
        let into = if self.is_word("into") {
            self.bump();
            let v = self.ident()?;
            Some((v, Box::new(self.query_body()?)))
        } else {
            None
        };
        Ok(QueryBody { clauses, end, into })
    }
}

/// `docs.Users` and `timeSeries.Coll.Name` become sources; anything else is a member access.
fn member(e: Expr, name: String) -> Expr {
    let kind = match e.kind {
        ExprKind::Source(Source::AllDocs) => ExprKind::Source(Source::Collection(name)),
        ExprKind::Source(Source::TimeSeries(c, None)) if c.is_empty() => ExprKind::Source(Source::TimeSeries(name, None)),
        ExprKind::Source(Source::TimeSeries(c, None)) => ExprKind::Source(Source::TimeSeries(c, Some(name))),
        ExprKind::Source(Source::Counters(c, None)) if c.is_empty() => ExprKind::Source(Source::Counters(name, None)),
        ExprKind::Source(Source::Counters(c, None)) => ExprKind::Source(Source::Counters(c, Some(name))),
        kind => ExprKind::Member(Box::new(Expr { pos: e.pos, kind }), name),
    };
    Expr { pos: e.pos, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (String, usize, usize) {
        let e = parse(text).unwrap_err();
        (e.message, e.line, e.column)
    }

    #[test]
    fn literals_and_suffixes() {
        let p = |t: &str| parse(t).unwrap().kind;
        assert_eq!(p("1m"), ExprKind::Int(1));
        assert_eq!(p("2.5d"), ExprKind::Float(2.5));
        assert_eq!(p("3L"), ExprKind::Int(3));
        assert_eq!(p("1.5e2"), ExprKind::Float(150.0));
        assert_eq!(p("-4"), ExprKind::Int(-4));
        assert_eq!(p(r#"@"a""b""#), ExprKind::Str("a\"b".into()));
        assert_eq!(p("'x'"), ExprKind::Str("x".into()));
        assert_eq!(err("12abc"), ("Invalid number literal '12a'".into(), 1, 1));
    }

    #[test]
    fn casts_lambdas_and_parentheses() {
        assert!(matches!(parse("(int)x").unwrap().kind, ExprKind::Cast(ref t, _) if t == "int"));
        assert!(matches!(parse("((double ? ) x)").unwrap().kind, ExprKind::Cast(ref t, _) if t == "double"));
        assert!(matches!(parse("(x) + 1").unwrap().kind, ExprKind::Binary(BinOp::Add, _, _)));
        assert!(matches!(parse("(a, b) => a").unwrap().kind, ExprKind::Lambda(ref p, _) if p.len() == 2));
        assert!(matches!(parse("() => 1").unwrap().kind, ExprKind::Lambda(ref p, _) if p.is_empty()));
        assert!(matches!(parse("a ?.5 : 1").unwrap().kind, ExprKind::Cond(..)));
        assert!(
            matches!(parse("a ?? b ?? c").unwrap().kind, ExprKind::Binary(BinOp::Coalesce, _, ref r) if matches!(r.kind, ExprKind::Binary(BinOp::Coalesce, ..)))
        );
    }

    #[test]
    fn sources() {
        let src = |t: &str| match parse(t).unwrap().kind {
            ExprKind::Query(q) => q.source.kind,
            k => k,
        };
        assert_eq!(src("from d in docs select d"), ExprKind::Source(Source::AllDocs));
        assert_eq!(src("from d in docs.Users select d"), ExprKind::Source(Source::Collection("Users".into())));
        assert_eq!(src("from d in docs[\"Users\"] select d"), ExprKind::Source(Source::Collection("Users".into())));
        assert_eq!(
            src("from t in timeSeries.Companies.HeartRate select t"),
            ExprKind::Source(Source::TimeSeries("Companies".into(), Some("HeartRate".into())))
        );
    }

    #[test]
    fn errors_have_positions() {
        assert_eq!(err("from d in docs\n  select new { A = }"), ("Unexpected '}'".into(), 2, 20));
        assert_eq!(err("from d in docs select"), ("Unexpected end of text".into(), 1, 22));
        assert_eq!(err("from d in docs orderby d.A select d.A foo"), ("Expected end of definition but got 'foo'".into(), 1, 39));
        assert_eq!(err("x /* open"), ("Unterminated comment".into(), 1, 3));
        assert_eq!(err("x # y"), ("Unexpected character '#'".into(), 1, 3));
        assert_eq!(err("new { A = 1, A = 2 }"), ("Duplicate member 'A' in anonymous object".into(), 1, 14));
    }

    #[test]
    fn depth_is_bounded() {
        let long = vec!["x"; 5000].join(" + ");
        assert_eq!(err(&long).0, "Expression nested too deeply");
        let nested = format!("{}x{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(err(&nested).0, "Expression nested too deeply");
        let chain = format!("x{}", ".A".repeat(5000));
        assert_eq!(err(&chain).0, "Expression nested too deeply");
        assert!(parse(&vec!["x"; 100].join(" + ")).is_ok());
    }
}
