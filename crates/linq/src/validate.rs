//! Compile-time checks: every name is bound and every method is in the supported subset, so that
//! definitions outside the subset are refused when the index is created, with a position.

use crate::ast::{Clause, Expr, ExprKind, QueryBody, QueryEnd, Source};
use crate::error::{ErrorKind, LinqError};
use crate::methods::{ENUMERABLE_METHODS, HELPERS, STATIC_CLASSES, STRING_METHODS, VALUE_METHODS};

/// Checks a map (`reduce == false`) or the reduce.
pub(crate) fn check(e: &Expr, text: &str, reduce: bool) -> Result<(), LinqError> {
    Checker { text, scopes: Vec::new(), reduce }.expr(e)
}

struct Checker<'a> {
    text: &'a str,
    scopes: Vec<String>,
    reduce: bool,
}

/// Static methods per class (`Enumerable` takes every LINQ operator).
fn static_method_ok(class: &str, name: &str) -> bool {
    let names: &[&str] = match class {
        "Enumerable" => ENUMERABLE_METHODS,
        "string" | "String" => &["IsNullOrEmpty", "IsNullOrWhiteSpace", "Join", "Concat", "Format"],
        "DateTime" => &["Parse"],
        "Math" => &["Abs", "Max", "Min", "Floor", "Ceiling", "Round", "Sqrt", "Pow"],
        "Convert" => &["ToInt32", "ToInt64", "ToInt16", "ToDouble", "ToSingle", "ToDecimal", "ToString", "ToBoolean"],
        _ => &[],
    };
    names.contains(&name)
}

impl Checker<'_> {
    fn err(&self, pos: usize, msg: String) -> LinqError {
        LinqError::at(ErrorKind::Compile, self.text, pos, msg)
    }

    fn bound(&self, n: &str) -> bool {
        self.scopes.iter().any(|s| s == n)
    }

    fn scoped(&mut self, names: &[String], f: impl FnOnce(&mut Self) -> Result<(), LinqError>) -> Result<(), LinqError> {
        let mark = self.scopes.len();
        self.scopes.extend(names.iter().cloned());
        let r = f(self);
        self.scopes.truncate(mark);
        r
    }

    fn expr(&mut self, e: &Expr) -> Result<(), LinqError> {
        match &e.kind {
            ExprKind::Null | ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) => Ok(()),
            ExprKind::Source(Source::Results) if !self.reduce => Err(self.err(e.pos, "'results' can only be used in a reduce".into())),
            ExprKind::Source(Source::Results) => Ok(()),
            ExprKind::Source(_) if self.reduce => Err(self.err(e.pos, "A reduce can only read 'results'".into())),
            ExprKind::Source(_) => Ok(()),
            ExprKind::Ident(n) if self.bound(n) => Ok(()),
            ExprKind::Ident(n) => Err(self.err(e.pos, format!("Unknown name '{n}'"))),
            ExprKind::Member(t, _) => self.expr(t),
            ExprKind::Index(t, i) => {
                self.expr(t)?;
                self.expr(i)
            }
            ExprKind::Lambda(params, body) => self.scoped(params, |s| s.expr(body)),
            ExprKind::Unary(_, x) | ExprKind::Cast(_, x) => self.expr(x),
            ExprKind::Binary(_, a, b) => {
                self.expr(a)?;
                self.expr(b)
            }
            ExprKind::Cond(c, a, b) => {
                self.expr(c)?;
                self.expr(a)?;
                self.expr(b)
            }
            ExprKind::Anon(m) => m.iter().try_for_each(|(_, x)| self.expr(x)),
            ExprKind::Array(items) | ExprKind::NewObject(_, items) => items.iter().try_for_each(|x| self.expr(x)),
            ExprKind::Query(q) => {
                self.expr(&q.source)?;
                self.scoped(std::slice::from_ref(&q.var), |s| s.body(&q.body))
            }
            ExprKind::Call { target, name, args, .. } => {
                match target.as_deref() {
                    None => {
                        if !HELPERS.contains(&name.as_str()) {
                            return Err(self.err(e.pos, format!("Unsupported function '{name}'")));
                        }
                    }
                    Some(Expr { kind: ExprKind::Ident(class), pos }) if !self.bound(class) => {
                        if !STATIC_CLASSES.contains(&class.as_str()) {
                            return Err(self.err(*pos, format!("Unknown name '{class}'")));
                        }
                        let ok = static_method_ok(class, name);
                        if !ok {
                            return Err(self.err(e.pos, format!("Unsupported method '{class}.{name}'")));
                        }
                    }
                    Some(t) => {
                        self.expr(t)?;
                        let n = name.as_str();
                        if !(ENUMERABLE_METHODS.contains(&n) || STRING_METHODS.contains(&n) || VALUE_METHODS.contains(&n)) {
                            return Err(self.err(e.pos, format!("Unsupported method '{name}'")));
                        }
                    }
                }
                args.iter().try_for_each(|a| self.expr(a))
            }
        }
    }

    fn body(&mut self, b: &QueryBody) -> Result<(), LinqError> {
        let mark = self.scopes.len();
        let r = (|| {
            for c in &b.clauses {
                match c {
                    Clause::From(v, e) | Clause::Let(v, e) => {
                        self.expr(e)?;
                        self.scopes.push(v.clone());
                    }
                    Clause::Where(e) => self.expr(e)?,
                    Clause::OrderBy(keys) => keys.iter().try_for_each(|(e, _)| self.expr(e))?,
                }
            }
            match &b.end {
                QueryEnd::Select(e) => self.expr(e)?,
                QueryEnd::Group { element, key } => {
                    self.expr(element)?;
                    self.expr(key)?;
                }
            }
            Ok(())
        })();
        self.scopes.truncate(mark);
        r?;
        match &b.into {
            Some((v, rest)) => self.scoped(std::slice::from_ref(v), |s| s.body(rest)),
            None => Ok(()),
        }
    }
}
