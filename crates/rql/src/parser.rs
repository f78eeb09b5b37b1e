//! Recursive-descent parser for RQL (spec section 1.3, clause order of section 1.2).

use std::collections::VecDeque;

use crate::ast::*;
use crate::error::ParseError;
use crate::keywords::{is_reserved_word, ALIAS_GUARD, CLAUSE_ORDER};
use crate::lexer::{Lexer, Tok, Token};
use crate::span::Span;

/// More nested expressions or method arguments than this is rejected, as RavenDB does.
pub const MAX_NESTING: usize = 128;

/// Parses one RQL query.
pub fn parse(text: &str) -> Result<Query, ParseError> {
    // Each nesting level costs a few frames (up to ~30 KB in debug builds), so a query that may nest deeply
    // is parsed on a thread whose stack is sized for MAX_NESTING levels; the caller's stack may be small.
    if nesting_bound(text) <= SHALLOW_NESTING {
        return Parser::new(text).query();
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new().name("rql-parse".into()).stack_size(DEEP_STACK_BYTES);
        match worker.spawn_scoped(scope, || Parser::new(text).query()) {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => Err(ParseError::new(text, 0, "Query is too complex: no thread available to parse it", Vec::new())),
        }
    })
}

/// Queries with at most this many `(` and `not` are parsed on the caller's stack.
const SHALLOW_NESTING: usize = 24;
const DEEP_STACK_BYTES: usize = 32 << 20;

/// An upper bound on the nesting depth: every level needs a `(` or a `not`.
fn nesting_bound(text: &str) -> usize {
    let bytes = text.as_bytes();
    let parens = bytes.iter().filter(|&&b| b == b'(').count();
    let nots = bytes.windows(3).filter(|w| w.eq_ignore_ascii_case(b"not")).count();
    parens + nots
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    lookahead: VecDeque<Token>,
    /// What was tried and not found at byte `expected_at`; reported if the parse fails there.
    expected: Vec<String>,
    expected_at: usize,
    depth: usize,
    clauses: Vec<&'static str>,
}

fn is_kw(tok: &Tok, kw: &str) -> bool {
    matches!(tok, Tok::Ident(w) if w.eq_ignore_ascii_case(kw))
}

fn is_compare(tok: &Tok) -> bool {
    matches!(tok, Tok::Eq | Tok::EqEq | Tok::NotEq | Tok::LtGt | Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge)
}

fn is_value_start(tok: &Tok) -> bool {
    matches!(tok, Tok::Long(_) | Tok::Double(_) | Tok::Param(_) | Tok::Str(_))
        || is_kw(tok, "true")
        || is_kw(tok, "false")
        || is_kw(tok, "null")
}

fn quote_list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| format!("'{s}'")).collect()
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser { lexer: Lexer::new(text), lookahead: VecDeque::new(), expected: Vec::new(), expected_at: 0, depth: 0, clauses: Vec::new() }
    }

    fn text(&self) -> &'a str {
        self.lexer.text()
    }

    // ---- token access -------------------------------------------------------------------------------

    #[inline(never)]
    fn peek_nth(&mut self, n: usize) -> Result<&Token, ParseError> {
        while self.lookahead.len() <= n {
            let t = self.lexer.next_token()?;
            self.lookahead.push_back(t);
        }
        Ok(&self.lookahead[n])
    }

    fn peek(&mut self) -> Result<&Token, ParseError> {
        self.peek_nth(0)
    }

    fn peek_tok(&mut self) -> Result<Tok, ParseError> {
        Ok(self.peek()?.tok.clone())
    }

    fn bump(&mut self) -> Result<Token, ParseError> {
        self.peek()?;
        Ok(self.lookahead.pop_front().expect("peeked"))
    }

    /// Records that `what` would have been accepted at the current token.
    #[inline(never)]
    fn note(&mut self, what: impl Into<String>) -> Result<(), ParseError> {
        let at = self.peek()?.span.start;
        if at != self.expected_at {
            self.expected.clear();
            self.expected_at = at;
        }
        let what = what.into();
        if !self.expected.contains(&what) {
            self.expected.push(what);
        }
        Ok(())
    }

    #[inline(never)]
    fn check_kw(&mut self, kw: &str) -> Result<bool, ParseError> {
        if is_kw(&self.peek()?.tok, kw) {
            return Ok(true);
        }
        self.note(format!("'{kw}'"))?;
        Ok(false)
    }

    fn eat_kw(&mut self, kw: &str) -> Result<bool, ParseError> {
        if self.check_kw(kw)? {
            self.bump()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect_kw(&mut self, kw: &str) -> Result<Token, ParseError> {
        if self.check_kw(kw)? {
            return self.bump();
        }
        Err(self.unexpected()?)
    }

    #[inline(never)]
    fn eat(&mut self, tok: &Tok, display: &str) -> Result<Option<Token>, ParseError> {
        if &self.peek()?.tok == tok {
            return Ok(Some(self.bump()?));
        }
        self.note(format!("'{display}'"))?;
        Ok(None)
    }

    fn expect(&mut self, tok: &Tok, display: &str) -> Result<Token, ParseError> {
        match self.eat(tok, display)? {
            Some(t) => Ok(t),
            None => Err(self.unexpected()?),
        }
    }

    #[inline(never)]
    fn describe(&self, token: &Token) -> String {
        if token.tok == Tok::Eof {
            return "end of query".to_string();
        }
        let raw = token.span.text(self.text());
        let mut short: String = raw.chars().take(40).collect();
        if short.len() < raw.len() {
            short.push('…');
        }
        match token.tok {
            Tok::Str(_) => format!("string {short}"),
            _ => format!("'{short}'"),
        }
    }

    /// An "Expected … but got …" error at the current token.
    #[inline(never)]
    fn unexpected(&mut self) -> Result<ParseError, ParseError> {
        let token = self.peek()?.clone();
        let expected = if self.expected_at == token.span.start { self.expected.clone() } else { Vec::new() };
        let got = self.describe(&token);
        let message =
            if expected.is_empty() { format!("Unexpected {got}") } else { format!("Expected {} but got {got}", expected.join(", ")) };
        Ok(ParseError::new(self.text(), token.span.start, message, expected))
    }

    #[inline(never)]
    fn error_at(&self, pos: usize, message: impl Into<String>, expected: &[&str]) -> ParseError {
        ParseError::new(self.text(), pos, message, expected.iter().map(|s| s.to_string()).collect())
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            let at = self.peek()?.span.start;
            return Err(self.error_at(at, format!("Query is too complex: more than {MAX_NESTING} nested expressions"), &[]));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Takes the balanced block that starts at the current token (`{` or `(`) as raw text.
    fn raw_block(&mut self, open: u8, close: u8, what: &str) -> Result<JsBlock, ParseError> {
        let start = self.peek()?.span.start;
        let end = self.lexer.scan_balanced(start, open, close, what)?;
        self.lookahead.clear();
        self.lexer.reset(end);
        Ok(JsBlock { source: self.text()[start..end].to_string(), span: Span::new(start, end) })
    }

    // ---- query and clauses --------------------------------------------------------------------------

    fn query(mut self) -> Result<Query, ParseError> {
        let mut declared_functions: Vec<DeclaredFunction> = Vec::new();
        while self.check_kw("declare")? {
            let d = self.declare()?;
            if declared_functions.iter().any(|f| f.name.name == d.name.name) {
                return Err(self.error_at(d.name.span.start, format!("Function '{}' is declared more than once", d.name.name), &[]));
            }
            declared_functions.push(d);
        }
        let from = self.parse_from()?;
        let mut q = Query {
            declared_functions,
            from,
            group_by: Vec::new(),
            where_clause: None,
            order_by: Vec::new(),
            load: Vec::new(),
            filter: None,
            select: None,
            update: None,
            include: Vec::new(),
            limit: None,
            offset: None,
            filter_limit: None,
        };
        if self.clause("group")? {
            self.expect_kw("by")?;
            q.group_by = self.comma_list(Self::group_by_item)?;
        }
        if self.clause("where")? {
            q.where_clause = Some(self.expr()?);
        }
        if self.clause("order")? {
            self.expect_kw("by")?;
            q.order_by = self.comma_list(Self::order_field)?;
        }
        if self.clause("load")? {
            q.load = self.comma_list(Self::load_item)?;
        }
        if self.clause("filter")? {
            q.filter = Some(self.expr()?);
        }
        if self.check_kw("update")? {
            self.clause("update")?;
            if self.peek()?.tok != Tok::LBrace {
                self.note("'{'")?;
                return Err(self.unexpected()?);
            }
            q.update = Some(self.raw_block(b'{', b'}', "update script")?);
        } else {
            if self.check_kw("select")? {
                let start = self.bump()?.span.start;
                self.clauses.push("select");
                q.select = Some(self.select(start)?);
            }
            if self.clause("include")? {
                q.include = self.comma_list(Self::include_item)?;
            }
        }
        self.paging(&mut q)?;
        if !self.clauses.contains(&"include") && self.clause("include")? {
            q.include = self.comma_list(Self::include_item)?;
        }
        if self.peek()?.tok != Tok::Eof {
            self.note("end of query")?;
            return Err(self.trailing_error()?);
        }
        Ok(q)
    }

    /// Consumes clause keyword `kw` if present and records it.
    fn clause(&mut self, kw: &'static str) -> Result<bool, ParseError> {
        if self.eat_kw(kw)? {
            self.clauses.push(kw);
            return Ok(true);
        }
        Ok(false)
    }

    /// The error for a token left over after the query, with a hint when it is a misplaced clause.
    #[inline(never)]
    fn trailing_error(&mut self) -> Result<ParseError, ParseError> {
        let mut err = self.unexpected()?;
        if let Tok::Ident(word) = self.peek_tok()? {
            let lower = word.to_ascii_lowercase();
            if let Some(idx) = CLAUSE_ORDER.iter().position(|c| *c == lower) {
                let hint = if self.clauses.contains(&CLAUSE_ORDER[idx]) {
                    format!("a query can have only one '{lower}' clause")
                } else if let Some(later) = self.clauses.iter().find(|c| CLAUSE_ORDER.iter().position(|o| o == *c) > Some(idx)) {
                    format!("the '{lower}' clause must come before '{later}'")
                } else {
                    String::new()
                };
                if !hint.is_empty() {
                    err.message = format!("{} ({hint})", err.message);
                }
            }
        }
        Ok(err)
    }

    fn comma_list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T, ParseError>) -> Result<Vec<T>, ParseError> {
        let mut items = vec![item(self)?];
        while self.eat(&Tok::Comma, ",")?.is_some() {
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn ident(&mut self, what: &str) -> Result<Ident, ParseError> {
        match self.peek_tok()? {
            Tok::Ident(name) => {
                let t = self.bump()?;
                Ok(Ident { name, span: t.span })
            }
            _ => {
                self.note(what)?;
                Err(self.unexpected()?)
            }
        }
    }

    /// An alias after `as`: a name or a quoted string.
    fn alias_name(&mut self) -> Result<Ident, ParseError> {
        match self.peek_tok()? {
            Tok::Str(name) => {
                let t = self.bump()?;
                Ok(Ident { name, span: t.span })
            }
            Tok::Ident(w) if !ALIAS_GUARD.iter().any(|g| g.eq_ignore_ascii_case(&w)) => self.ident("alias"),
            _ => {
                self.note("alias")?;
                Err(self.unexpected()?)
            }
        }
    }

    fn declare(&mut self) -> Result<DeclaredFunction, ParseError> {
        let start = self.expect_kw("declare")?.span.start;
        let kind = if self.eat_kw("function")? {
            DeclarationKind::Function
        } else if self.eat_kw("timeseries")? {
            DeclarationKind::TimeSeries
        } else {
            return Err(self.unexpected()?);
        };
        let name = self.ident("function name")?;
        self.expect(&Tok::LParen, "(")?;
        let mut params = Vec::new();
        if self.eat(&Tok::RParen, ")")?.is_none() {
            params = self.comma_list(|p| p.ident("parameter name"))?;
            self.expect(&Tok::RParen, ")")?;
        }
        if self.peek()?.tok != Tok::LBrace {
            self.note("'{'")?;
            return Err(self.unexpected()?);
        }
        let body = self.raw_block(b'{', b'}', "function body")?;
        let span = Span::new(start, body.span.end);
        Ok(DeclaredFunction { kind, name, params, body, span })
    }

    fn parse_from(&mut self) -> Result<From, ParseError> {
        let start = self.expect_kw("from")?.span.start;
        self.clauses.push("from");
        let mut revisions = false;
        let source = if self.check_kw("index")? && !matches!(self.peek_nth(1)?.tok, Tok::Eof) {
            self.bump()?;
            let t = self.bump()?;
            match t.tok {
                Tok::Str(name) | Tok::Ident(name) => FromSource::Index { name, span: t.span },
                _ => {
                    return Err(self.error_at(
                        t.span.start,
                        format!("Expected an index name but got {}", self.describe(&t)),
                        &["index name"],
                    ))
                }
            }
        } else {
            let (name, span) = match self.peek_tok()? {
                Tok::Str(name) => (name, self.bump()?.span),
                Tok::Ident(_) => {
                    let first = self.bump()?;
                    let path = self.path_from(first)?;
                    (path.dotted(), path.span)
                }
                _ => {
                    self.note("collection name")?;
                    self.note("'index'")?;
                    return Err(self.unexpected()?);
                }
            };
            if self.peek()?.tok == Tok::LParen {
                let at = self.peek()?.span.start;
                if !self.revisions_option()? {
                    return Err(self.error_at(at, "A filtered 'from Collection(…)' is not supported; only '(Revisions = true)'", &[]));
                }
                revisions = true;
            }
            if name.eq_ignore_ascii_case("@all_docs") {
                FromSource::AllDocs { span }
            } else {
                FromSource::Collection { name, span }
            }
        };
        let alias = self.collection_alias()?;
        let source_end = match &source {
            FromSource::Collection { span, .. } | FromSource::AllDocs { span } | FromSource::Index { span, .. } => span.end,
        };
        let span = Span::new(start, alias.as_ref().map_or(source_end, |a| a.span.end));
        Ok(From { source, alias, span, revisions })
    }

    /// Consumes `(Revisions = true)` after a collection name; false (nothing consumed) for anything else.
    fn revisions_option(&mut self) -> Result<bool, ParseError> {
        let is_revisions = matches!(&self.peek_nth(1)?.tok, Tok::Ident(w) if w.eq_ignore_ascii_case("revisions"))
            && matches!(self.peek_nth(2)?.tok, Tok::Eq | Tok::EqEq)
            && matches!(&self.peek_nth(3)?.tok, Tok::Ident(w) if w.eq_ignore_ascii_case("true"))
            && self.peek_nth(4)?.tok == Tok::RParen;
        if is_revisions {
            for _ in 0..5 {
                self.bump()?;
            }
        }
        Ok(is_revisions)
    }

    fn collection_alias(&mut self) -> Result<Option<Ident>, ParseError> {
        if self.eat_kw("as")? {
            return Ok(Some(self.alias_name()?));
        }
        let Tok::Ident(word) = self.peek_tok()? else { return Ok(None) };
        if ALIAS_GUARD.iter().any(|g| g.eq_ignore_ascii_case(&word)) {
            return Ok(None);
        }
        if word.eq_ignore_ascii_case("filter") {
            // `filter` is an alias only when a keyword follows it.
            let next_is_kw = matches!(&self.peek_nth(1)?.tok, Tok::Ident(w) if is_reserved_word(w));
            if !next_is_kw {
                return Ok(None);
            }
        }
        self.note("alias")?;
        Ok(Some(self.ident("alias")?))
    }

    fn group_by_item(&mut self) -> Result<GroupByItem, ParseError> {
        let expr = self.named_operand(true)?;
        let mut span = expr.span();
        let mut alias = None;
        if self.eat_kw("as")? {
            let a = self.alias_name()?;
            span = span.to(a.span);
            alias = Some(a);
        }
        Ok(GroupByItem { expr, alias, span })
    }

    fn order_field(&mut self) -> Result<OrderField, ParseError> {
        let expr = self.named_operand(false)?;
        let mut span = expr.span();
        let mut ordering = None;
        if self.eat_kw("as")? {
            const TYPES: &[&str] = &["string", "long", "double", "alphaNumeric"];
            let t = self.peek()?.clone();
            ordering = Some(match &t.tok {
                Tok::Ident(w) if w.eq_ignore_ascii_case("string") => OrderingType::String,
                Tok::Ident(w) if w.eq_ignore_ascii_case("long") => OrderingType::Long,
                Tok::Ident(w) if w.eq_ignore_ascii_case("double") => OrderingType::Double,
                Tok::Ident(w) if w.eq_ignore_ascii_case("alphaNumeric") => OrderingType::AlphaNumeric,
                _ => {
                    let got = self.describe(&t);
                    return Err(self.error_at(t.span.start, format!("Expected {} but got {got}", quote_list(TYPES).join(", ")), TYPES));
                }
            });
            span = span.to(self.bump()?.span);
        }
        let mut descending = false;
        for (kw, desc) in [("asc", false), ("ascending", false), ("desc", true), ("descending", true)] {
            if self.check_kw(kw)? {
                span = span.to(self.bump()?.span);
                descending = desc;
                break;
            }
        }
        let mut nulls = None;
        if self.eat_kw("nulls")? {
            let t = self.peek()?.clone();
            nulls = Some(if self.check_kw("first")? {
                NullsOrder::First
            } else if self.check_kw("last")? {
                NullsOrder::Last
            } else {
                return Err(self.unexpected()?);
            });
            self.bump()?;
            span = span.to(t.span);
        }
        Ok(OrderField { expr, ordering, descending, nulls, span })
    }

    fn load_item(&mut self) -> Result<LoadItem, ParseError> {
        let path = match self.peek_tok()? {
            Tok::Ident(_) | Tok::Str(_) => {
                let first = self.bump()?;
                self.path_from(first)?
            }
            _ => {
                self.note("path")?;
                return Err(self.unexpected()?);
            }
        };
        self.eat_kw("as")?;
        let alias = self.alias_name()?;
        let span = path.span.to(alias.span);
        Ok(LoadItem { path, alias, span })
    }

    fn select(&mut self, start: usize) -> Result<Select, ParseError> {
        let distinct = self.eat_kw("distinct")?;
        let projection = match self.peek_tok()? {
            Tok::Star => {
                self.bump()?;
                Projection::All
            }
            Tok::LBrace => Projection::Js(self.raw_block(b'{', b'}', "object literal")?),
            _ => Projection::Fields(self.comma_list(Self::select_field)?),
        };
        let end = match &projection {
            Projection::Js(js) => js.span.end,
            Projection::Fields(fs) => fs.last().map_or(start, |f| f.span.end),
            Projection::All => self.peek()?.span.start,
        };
        Ok(Select { distinct, projection, span: Span::new(start, end.max(start)) })
    }

    fn select_field(&mut self) -> Result<SelectField, ParseError> {
        let is_timeseries =
            is_kw(&self.peek()?.tok, "timeseries") && self.peek_nth(1)?.tok == Tok::LParen && is_kw(&self.peek_nth(2)?.tok, "from");
        let start = self.peek()?.span.start;
        let expr = if is_timeseries {
            self.bump()?;
            SelectExpr::TimeSeries(self.raw_block(b'(', b')', "timeseries sub-query")?)
        } else {
            match self.named_operand(true)? {
                Operand::Field(p) => SelectExpr::Field(p),
                Operand::Call(c) => SelectExpr::Call(c),
                Operand::Value(v) => SelectExpr::Value(v),
            }
        };
        let mut span = match &expr {
            SelectExpr::Field(p) => p.span,
            SelectExpr::Call(c) => c.span,
            SelectExpr::Value(v) => v.span,
            SelectExpr::TimeSeries(raw) => Span::new(start, raw.span.end),
        };
        let mut alias = None;
        if self.eat_kw("as")? {
            let a = self.alias_name()?;
            span = span.to(a.span);
            alias = Some(a);
        }
        Ok(SelectField { expr, alias, span })
    }

    fn include_item(&mut self) -> Result<IncludeItem, ParseError> {
        Ok(match self.named_operand(false)? {
            Operand::Call(c) => IncludeItem::Call(c),
            Operand::Field(p) => IncludeItem::Path(p),
            Operand::Value(_) => unreachable!("named_operand(false) returns no values"),
        })
    }

    fn paging(&mut self, q: &mut Query) -> Result<(), ParseError> {
        if self.clause("limit")? {
            let first = self.paging_value("limit")?;
            if self.eat(&Tok::Comma, ",")?.is_some() {
                q.offset = Some(first);
                q.limit = Some(self.paging_value("limit")?);
                if self.check_kw("offset")? {
                    let at = self.peek()?.span.start;
                    return Err(self.error_at(at, "'offset' cannot follow 'limit skip, take'", &[]));
                }
            } else {
                q.limit = Some(first);
                if self.clause("offset")? {
                    q.offset = Some(self.paging_value("offset")?);
                }
            }
        } else if self.clause("offset")? {
            q.offset = Some(self.paging_value("offset")?);
        }
        if self.clause("filter_limit")? {
            q.filter_limit = Some(self.paging_value("filter_limit")?);
        }
        Ok(())
    }

    /// A non-negative integer or a parameter.
    fn paging_value(&mut self, clause: &str) -> Result<Value, ParseError> {
        let t = self.peek()?.clone();
        let kind = match t.tok {
            Tok::Long(n) if n >= 0 => ValueKind::Long(n),
            Tok::Param(p) => ValueKind::Parameter(p),
            _ => {
                let got = self.describe(&t);
                return Err(self.error_at(
                    t.span.start,
                    format!("Expected a non-negative integer or a parameter after '{clause}' but got {got}"),
                    &["number", "parameter"],
                ));
            }
        };
        self.bump()?;
        Ok(Value { kind, span: t.span })
    }

    // ---- paths, calls, values -----------------------------------------------------------------------

    /// A path continuing after its first token (an identifier or a quoted name).
    #[inline(never)]
    fn path_from(&mut self, first: Token) -> Result<FieldPath, ParseError> {
        let mut span = first.span;
        let mut segments = vec![match first.tok {
            Tok::Ident(name) => PathSegment::Field { name, quoted: false },
            Tok::Str(name) => PathSegment::Field { name, quoted: true },
            _ => unreachable!("path_from takes a name token"),
        }];
        loop {
            match self.peek_tok()? {
                Tok::Dot => {
                    self.bump()?;
                    let t = self.peek()?.clone();
                    let seg = match t.tok {
                        Tok::Ident(name) => PathSegment::Field { name, quoted: false },
                        Tok::Str(name) => PathSegment::Field { name, quoted: true },
                        _ => {
                            self.note("field name")?;
                            return Err(self.unexpected()?);
                        }
                    };
                    self.bump()?;
                    segments.push(seg);
                    span = span.to(t.span);
                }
                Tok::LBracket => {
                    self.bump()?;
                    let t = self.peek()?.clone();
                    let seg = match t.tok {
                        Tok::RBracket => PathSegment::AllElements,
                        Tok::Long(n) if n >= 0 => {
                            self.bump()?;
                            PathSegment::Index(n as u64)
                        }
                        _ => {
                            let got = self.describe(&t);
                            return Err(self.error_at(
                                t.span.start,
                                format!("Expected ']' or a non-negative integer index but got {got}"),
                                &["']'", "index"],
                            ));
                        }
                    };
                    let close = self.expect(&Tok::RBracket, "]")?;
                    segments.push(seg);
                    span = span.to(close.span);
                }
                _ => return Ok(FieldPath { segments, span }),
            }
        }
    }

    /// A path, or a call when the path is a plain (dotted) name followed by `(`.
    fn path_or_call(&mut self, first: Token) -> Result<Operand, ParseError> {
        let path = self.path_from(first)?;
        if self.peek()?.tok != Tok::LParen {
            return Ok(Operand::Field(path));
        }
        let (name, name_span) = self.method_name(path)?;
        self.bump()?;
        let mut args = Vec::new();
        let close = match self.eat(&Tok::RParen, ")")? {
            Some(close) => close.span,
            None => {
                args.push(self.arg()?);
                while self.eat(&Tok::Comma, ",")?.is_some() {
                    // A trailing comma is accepted, as RavenDB does: the clients write
                    // `include timeseries('Name', 'from', 'to', )`.
                    if self.peek()?.tok == Tok::RParen {
                        break;
                    }
                    args.push(self.arg()?);
                }
                self.expect(&Tok::RParen, ")")?.span
            }
        };
        Ok(Operand::Call(Call { name, name_span, args, span: name_span.to(close) }))
    }

    /// The dotted name of a call (`spatial.within`); quoted or indexed segments are not names.
    #[inline(never)]
    fn method_name(&self, path: FieldPath) -> Result<(String, Span), ParseError> {
        let mut names = Vec::new();
        for seg in &path.segments {
            match seg {
                PathSegment::Field { name, quoted: false } => names.push(name.as_str()),
                _ => return Err(self.error_at(path.span.start, format!("'{path}' is not a valid method name"), &[])),
            }
        }
        Ok((names.join("."), path.span))
    }

    /// A field, call or (when `values`) literal, as in `group by`, `select`, `order by`, `include`.
    /// A quoted string here names a field.
    fn named_operand(&mut self, values: bool) -> Result<Operand, ParseError> {
        let tok = self.peek_tok()?;
        match tok {
            Tok::Ident(ref w)
                if values && (w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") || w.eq_ignore_ascii_case("null")) =>
            {
                Ok(Operand::Value(self.value()?))
            }
            Tok::Ident(_) | Tok::Str(_) => {
                let first = self.bump()?;
                self.path_or_call(first)
            }
            Tok::Long(_) | Tok::Double(_) | Tok::Param(_) if values => Ok(Operand::Value(self.value()?)),
            _ => {
                self.note("field")?;
                self.note("method call")?;
                if values {
                    self.note("value")?;
                }
                Err(self.unexpected()?)
            }
        }
    }

    #[inline(never)]
    fn value(&mut self) -> Result<Value, ParseError> {
        let t = self.peek()?.clone();
        let kind = match t.tok {
            Tok::Str(s) => ValueKind::String(s),
            Tok::Long(n) => ValueKind::Long(n),
            Tok::Double(d) => ValueKind::Double(d),
            Tok::Param(p) => ValueKind::Parameter(p),
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("true") => ValueKind::Bool(true),
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("false") => ValueKind::Bool(false),
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("null") => ValueKind::Null,
            _ => {
                self.note("value")?;
                return Err(self.unexpected()?);
            }
        };
        self.bump()?;
        Ok(Value { kind, span: t.span })
    }

    // ---- expressions --------------------------------------------------------------------------------

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.or_expr(None)
    }

    // `a and b and c` folds to the left, so each operator deepens the tree by one: it counts toward
    // MAX_NESTING like a nested expression (as in RavenDB, whose parser recurses on the right side), which
    // bounds the depth of every tree later stages walk. An error ends the parse, so `depth` is restored only
    // on success.

    fn or_expr(&mut self, first: Option<Expr>) -> Result<Expr, ParseError> {
        let base = self.depth;
        let mut left = self.and_expr(first)?;
        while self.eat_kw("or")? {
            self.enter()?;
            let right = self.and_expr(None)?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        self.depth = base;
        Ok(left)
    }

    fn and_expr(&mut self, first: Option<Expr>) -> Result<Expr, ParseError> {
        let base = self.depth;
        let mut left = match first {
            Some(e) => e,
            None => self.unary()?,
        };
        while self.eat_kw("and")? {
            self.enter()?;
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        self.depth = base;
        Ok(left)
    }

    // The functions on the recursion path (unary, or_expr, and_expr, not_expr, paren_expr, arg, path_or_call)
    // keep their frames small, so that MAX_NESTING levels fit in a thread's stack even in debug builds; the
    // work that does not recurse lives in `#[inline(never)]` helpers.

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        let result = match self.peek()?.tok {
            Tok::LParen => self.paren_expr(),
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("not") => self.not_expr(),
            _ => self.simple_term(),
        };
        self.leave();
        result
    }

    fn not_expr(&mut self) -> Result<Expr, ParseError> {
        let start = self.bump()?.span.start;
        let expr = Box::new(self.unary()?);
        let span = Span::new(start, expr.span().end);
        Ok(Expr::Not { expr, span })
    }

    fn paren_expr(&mut self) -> Result<Expr, ParseError> {
        self.bump()?;
        let e = self.or_expr(None)?;
        self.expect(&Tok::RParen, ")")?;
        Ok(e)
    }

    /// `true`, a predicate or a boolean method.
    #[inline(never)]
    fn simple_term(&mut self) -> Result<Expr, ParseError> {
        self.note("'not'")?;
        let t = self.peek()?.clone();
        match &t.tok {
            Tok::Ident(w) if w.eq_ignore_ascii_case("true") && !self.starts_predicate(1)? => {
                self.bump()?;
                Ok(Expr::True(t.span))
            }
            Tok::Ident(w) if !w.eq_ignore_ascii_case("and") && !w.eq_ignore_ascii_case("or") || self.starts_predicate(1)? => {
                let first = self.bump()?;
                let operand = self.path_or_call(first)?;
                match self.predicate(operand, false)? {
                    Some(e) => Ok(e),
                    None => Err(self.unexpected()?),
                }
            }
            Tok::Str(_) => {
                let first = self.bump()?;
                let operand = self.path_or_call(first)?;
                match self.predicate(operand, false)? {
                    Some(e) => Ok(e),
                    None => Err(self.unexpected()?),
                }
            }
            _ => {
                for w in ["'('", "'true'", "field", "method call"] {
                    self.note(w)?;
                }
                Err(self.unexpected()?)
            }
        }
    }

    /// Whether the token `n` ahead starts the right side of a predicate.
    fn starts_predicate(&mut self, n: usize) -> Result<bool, ParseError> {
        let tok = &self.peek_nth(n)?.tok;
        Ok(is_compare(tok) || is_kw(tok, "between") || is_kw(tok, "in") || is_kw(tok, "all"))
    }

    /// The rest of a predicate after its left operand. A call with nothing after it is a boolean method;
    /// a field with nothing after it gives `None` (or an error unless `lenient`).
    #[inline(never)]
    fn predicate(&mut self, left: Operand, lenient: bool) -> Result<Option<Expr>, ParseError> {
        let start = left.span().start;
        let t = self.peek()?.clone();
        if let Some(op) = match t.tok {
            Tok::Eq | Tok::EqEq => Some(CompareOp::Eq),
            Tok::NotEq | Tok::LtGt => Some(CompareOp::NotEq),
            Tok::Lt => Some(CompareOp::Lt),
            Tok::Le => Some(CompareOp::Le),
            Tok::Gt => Some(CompareOp::Gt),
            Tok::Ge => Some(CompareOp::Ge),
            _ => None,
        } {
            self.bump()?;
            let right = self.comparison_rhs()?;
            let span = Span::new(start, right.span().end);
            return Ok(Some(Expr::Compare { left, op, right, span }));
        }
        if self.eat_kw("between")? {
            let low = self.value()?;
            self.expect_kw("and")?;
            let high = self.value()?;
            let span = Span::new(start, high.span.end);
            return Ok(Some(Expr::Between { operand: left, low, high, span }));
        }
        let all = self.eat_kw("all")?;
        if all || self.check_kw("in")? {
            self.expect_kw("in")?;
            self.expect(&Tok::LParen, "(")?;
            let mut values = Vec::new();
            let close = match self.eat(&Tok::RParen, ")")? {
                Some(close) => close,
                None => {
                    values = self.comma_list(Self::value)?;
                    self.expect(&Tok::RParen, ")")?
                }
            };
            let span = Span::new(start, close.span.end);
            return Ok(Some(Expr::In { operand: left, values, all, span }));
        }
        if !lenient {
            for op in ["'='", "'!='", "'<'", "'<='", "'>'", "'>='"] {
                self.note(op)?;
            }
        }
        match left {
            Operand::Call(call) => Ok(Some(Expr::Method(call))),
            _ if lenient => Ok(None),
            _ => Err(self.unexpected()?),
        }
    }

    #[inline(never)]
    fn comparison_rhs(&mut self) -> Result<Operand, ParseError> {
        let tok = self.peek_tok()?;
        if is_value_start(&tok) {
            return Ok(Operand::Value(self.value()?));
        }
        if let Tok::Ident(_) = tok {
            let first = self.bump()?;
            return self.path_or_call(first);
        }
        self.note("value")?;
        self.note("field")?;
        Err(self.unexpected()?)
    }

    fn arg(&mut self) -> Result<Arg, ParseError> {
        self.enter()?;
        let result = self.arg_inner();
        self.leave();
        result
    }

    #[inline(never)]
    fn arg_inner(&mut self) -> Result<Arg, ParseError> {
        let tok = self.peek_tok()?;
        let arg = match tok {
            Tok::LParen => Arg::Expr(self.expr()?),
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("not") && !matches!(self.peek_nth(1)?.tok, Tok::Comma | Tok::RParen) => {
                Arg::Expr(self.expr()?)
            }
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("true") && !self.starts_predicate(1)? => {
                let v = self.value()?;
                if self.check_kw("and")? || self.check_kw("or")? {
                    Arg::Expr(self.or_expr(Some(Expr::True(v.span)))?)
                } else {
                    Arg::Value(v)
                }
            }
            Tok::Str(_) if !matches!(self.peek_nth(1)?.tok, Tok::Dot | Tok::LBracket) && !self.starts_predicate(1)? => {
                Arg::Value(self.value()?)
            }
            Tok::Ident(ref w) if (w.eq_ignore_ascii_case("false") || w.eq_ignore_ascii_case("null")) && !self.starts_predicate(1)? => {
                Arg::Value(self.value()?)
            }
            Tok::Ident(_) | Tok::Str(_) => {
                let first = self.bump()?;
                let operand = self.path_or_call(first)?;
                let is_call = matches!(operand, Operand::Call(_));
                let continues = self.starts_predicate(0)? || (is_call && (self.check_kw("and")? || self.check_kw("or")?));
                if continues {
                    let pred = self.predicate(operand, true)?.expect("a predicate or a call");
                    Arg::Expr(self.or_expr(Some(pred))?)
                } else {
                    match operand {
                        Operand::Field(p) => Arg::Field(p),
                        Operand::Call(c) => Arg::Call(c),
                        Operand::Value(v) => Arg::Value(v),
                    }
                }
            }
            Tok::Long(_) | Tok::Double(_) | Tok::Param(_) => Arg::Value(self.value()?),
            _ => {
                for w in ["value", "field", "method call", "'('"] {
                    self.note(w)?;
                }
                return Err(self.unexpected()?);
            }
        };
        if !matches!(arg, Arg::Expr(_)) && self.eat_kw("as")? {
            let alias = self.alias_name()?;
            return Ok(Arg::Aliased { arg: Box::new(arg), alias });
        }
        Ok(arg)
    }
}
