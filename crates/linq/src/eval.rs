//! Native evaluation of the syntax tree over `serde_json::Value` with C# dynamic semantics.

use std::cmp::Ordering;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ast::{BinOp, Clause, Expr, ExprKind, Query, QueryBody, QueryEnd, Source, UnOp};
use crate::budget::Budget;
use crate::document_loader::DocumentLoader;
use crate::error::{ErrorKind, Limit, LinqError};
use crate::reserved_keys::GROUP_KEY;
use crate::value::*;

/// The document a map is applied to.
pub(crate) struct MapInput<'a> {
    pub doc: &'a Value,
}

/// The variables of one row of a query. Values are shared, so a `from` that fans a row out copies
/// pointers, not the document.
pub(crate) type Row = Vec<(String, Rc<Value>)>;

/// What one more variable in a row costs in bytes: its name, its pointer and its shared value's header.
const VARIABLE_BYTES: u64 = 64;

pub(crate) struct Eval<'a> {
    pub text: &'a str,
    pub input: Option<MapInput<'a>>,
    pub results: Option<&'a [Value]>,
    pub loader: Option<&'a mut dyn DocumentLoader>,
    pub scopes: Row,
    budget: Budget,
    steps: u64,
    bytes: u64,
}

type R = Result<Value, LinqError>;

impl<'a> Eval<'a> {
    pub(crate) fn new(text: &'a str, budget: Budget) -> Eval<'a> {
        Eval { text, input: None, results: None, loader: None, scopes: Vec::new(), budget, steps: 0, bytes: 0 }
    }

    pub(crate) fn err(&self, pos: usize, msg: impl Into<String>) -> LinqError {
        LinqError::at(ErrorKind::Runtime, self.text, pos, msg)
    }

    fn lookup(&self, name: &str) -> Option<&Value> {
        self.scopes.iter().rev().find(|(n, _)| n == name).map(|(_, v)| &**v)
    }

    /// Resolves `x`, `x.A.B` and `x["A"]` by reference, so reading one field does not copy the whole
    /// document. `None` when the path needs the general rules of [`member`].
    fn path(&self, e: &Expr) -> Option<&Value> {
        let (target, name) = match &e.kind {
            ExprKind::Ident(n) => return self.lookup(n),
            ExprKind::Member(t, n) => (t, n.as_str()),
            ExprKind::Index(t, i) => match &i.kind {
                ExprKind::Str(n) => (t, n.as_str()),
                _ => return None,
            },
            _ => return None,
        };
        match self.path(target)? {
            Value::Object(o) if !o.contains_key(GROUP_KEY) => o.get(name),
            _ => None,
        }
    }

    pub(crate) fn truthy(&self, v: &Value, pos: usize) -> Result<bool, LinqError> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(false),
            other => Err(self.err(pos, format!("Expected a boolean but got {other}"))),
        }
    }

    /// Applies a lambda (or a plain expression that ignores its arguments) to `args`.
    pub(crate) fn apply(&mut self, f: &Expr, args: &[Value]) -> R {
        match &f.kind {
            ExprKind::Lambda(params, body) => {
                let mark = self.scopes.len();
                for (p, a) in params.iter().zip(args) {
                    self.scopes.push((p.clone(), Rc::new(a.clone())));
                }
                let r = self.eval(body);
                self.scopes.truncate(mark);
                r
            }
            _ => Err(self.err(f.pos, "Expected a lambda expression")),
        }
    }

    /// Counts `n` steps of work against the budget (one per expression evaluated, one per row a query
    /// produces, one per comparison in distinct, grouping and sorting).
    pub(crate) fn charge(&mut self, n: u64, pos: usize) -> Result<(), LinqError> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.budget.steps {
            let message = format!("Evaluation exceeded the step budget of {}", self.budget.steps);
            return Err(LinqError::at(ErrorKind::LimitExceeded(Limit::Steps), self.text, pos, message));
        }
        Ok(())
    }

    /// Counts `n` bytes of values built or copied against the budget. Bytes are counted as they are
    /// allocated and never given back, so the total bounds the evaluation's peak memory too.
    pub(crate) fn charge_bytes(&mut self, n: u64, pos: usize) -> Result<(), LinqError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.budget.bytes {
            let message = format!("Evaluation exceeded the memory budget of {} bytes", self.budget.bytes);
            return Err(LinqError::at(ErrorKind::LimitExceeded(Limit::Bytes), self.text, pos, message));
        }
        Ok(())
    }

    /// A row with one more variable, charged as a step and its bytes.
    fn extend_row(&mut self, row: &Row, var: &str, value: Value, pos: usize) -> Result<Row, LinqError> {
        self.charge(1, pos)?;
        self.charge_bytes(VARIABLE_BYTES * (row.len() as u64 + 1), pos)?;
        let mut next = Vec::with_capacity(row.len() + 1);
        next.extend(row.iter().cloned());
        next.push((var.to_owned(), Rc::new(value)));
        Ok(next)
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> R {
        self.charge(1, e.pos)?;
        let value = self.eval_kind(e)?;
        self.charge_bytes(built_bytes(&e.kind, &value), e.pos)?;
        Ok(value)
    }

    fn eval_kind(&mut self, e: &Expr) -> R {
        Ok(match &e.kind {
            ExprKind::Null => Value::Null,
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::Int(n) => Value::from(*n),
            ExprKind::Float(f) => from_f64(*f),
            ExprKind::Str(s) => Value::String(s.clone()),
            ExprKind::Ident(n) => match self.lookup(n) {
                Some(v) => v.clone(),
                None => return Err(self.err(e.pos, format!("Unknown name '{n}'"))),
            },
            ExprKind::Source(s) => self.source(s, e.pos)?,
            ExprKind::Member(t, name) => {
                let owned = if self.path(t).is_none() { Some(self.eval(t)?) } else { None };
                match &owned {
                    Some(v) => member(v, name),
                    None => member(self.path(t).unwrap_or(&Value::Null), name),
                }
            }
            ExprKind::Index(t, i) => {
                let i = self.eval(i)?;
                let owned = if self.path(t).is_none() { Some(self.eval(t)?) } else { None };
                let v = match &owned {
                    Some(v) => v,
                    None => self.path(t).unwrap_or(&Value::Null),
                };
                index(v, &i)
            }
            ExprKind::Lambda(..) => return Err(self.err(e.pos, "A lambda can only be a method argument")),
            ExprKind::Unary(UnOp::Not, x) => {
                let v = self.eval(x)?;
                match v {
                    Value::Null => Value::Null,
                    v => Value::Bool(!self.truthy(&v, x.pos)?),
                }
            }
            ExprKind::Unary(UnOp::Neg, x) => match num(&self.eval(x)?) {
                Some(Num::I(i)) => Value::from(i.wrapping_neg()),
                Some(Num::F(f)) => from_f64(-f),
                None => Value::Null,
            },
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, e.pos)?,
            ExprKind::Cond(c, a, b) => {
                let cv = self.eval(c)?;
                if self.truthy(&cv, c.pos)? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            ExprKind::Cast(ty, x) => {
                let v = self.eval(x)?;
                cast(ty, v).map_err(|m| self.err(e.pos, m))?
            }
            ExprKind::Anon(members) => {
                let mut m = Map::new();
                for (n, x) in members {
                    let v = self.eval(x)?;
                    m.insert(n.clone(), v);
                }
                Value::Object(m)
            }
            ExprKind::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(self.eval(x)?);
                }
                Value::Array(out)
            }
            ExprKind::NewObject(ty, args) => {
                let mut parts = [0u32; 7];
                if ty != "DateTime" || !(3..=7).contains(&args.len()) {
                    return Err(self.err(e.pos, format!("Unsupported constructor {ty} with {} arguments", args.len())));
                }
                for (i, a) in args.iter().enumerate() {
                    let v = self.eval(a)?;
                    parts[i] = match num(&v) {
                        Some(Num::I(n)) if n >= 0 => n as u32,
                        _ => return Err(self.err(a.pos, format!("Expected a non-negative integer but got {v}"))),
                    };
                }
                parts[6] *= 10_000;
                Value::String(format_date(parts))
            }
            ExprKind::Query(q) => self.query(q)?,
            ExprKind::Call { target, name, generic, args } => self.call(target.as_deref(), name, generic.as_deref(), args, e.pos)?,
        })
    }

    fn source(&mut self, s: &Source, pos: usize) -> R {
        match s {
            // A counters or time-series map is given one counter or segment at a time, like a document.
            Source::AllDocs | Source::Collection(_) | Source::TimeSeries(..) | Source::Counters(..) => match &self.input {
                Some(i) => Ok(Value::Array(vec![i.doc.clone()])),
                None => Err(self.err(pos, "'docs', 'counters' and 'timeSeries' can only be used in a map")),
            },
            Source::Results => match self.results {
                Some(r) => Ok(Value::Array(r.to_vec())),
                None => Err(self.err(pos, "'results' can only be used in a reduce")),
            },
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, pos: usize) -> R {
        match op {
            BinOp::And | BinOp::Or => {
                let x = self.eval(a)?;
                let x = self.truthy(&x, a.pos)?;
                if (op == BinOp::And) != x {
                    return Ok(Value::Bool(x));
                }
                let y = self.eval(b)?;
                return Ok(Value::Bool(self.truthy(&y, b.pos)?));
            }
            BinOp::Coalesce => {
                let x = self.eval(a)?;
                return if x.is_null() { self.eval(b) } else { Ok(x) };
            }
            _ => {}
        }
        let x = self.eval(a)?;
        let y = self.eval(b)?;
        if op == BinOp::Sub {
            if let Some(ticks) = date_difference(&x, &y) {
                return Ok(Value::from(ticks));
            }
        }
        Ok(match op {
            BinOp::Eq => Value::Bool(equals(&x, &y)),
            BinOp::Ne => Value::Bool(!equals(&x, &y)),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                if x.is_null() || y.is_null() {
                    return Ok(Value::Bool(false));
                }
                let o = compare(&x, &y);
                Value::Bool(match op {
                    BinOp::Lt => o == Ordering::Less,
                    BinOp::Le => o != Ordering::Greater,
                    BinOp::Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                })
            }
            BinOp::Add if x.is_string() || y.is_string() => Value::String(to_text(&x) + &to_text(&y)),
            _ => {
                // RavenDB's null object converts implicitly to a number on the right of an integer (C# picks its
                // conversion to int, 0): `5 / doc.Missing` divides by zero there and `5 + doc.Missing` is 5. On
                // the left it makes the result null, as it does on the right of a floating-point number (NaN).
                let y = if y.is_null() && matches!(num(&x), Some(Num::I(_))) { Value::from(0) } else { y };
                let (Some(p), Some(q)) = (num(&x), num(&y)) else {
                    if x.is_null() || y.is_null() {
                        return Ok(Value::Null);
                    }
                    return Err(self.err(pos, format!("Operator {op:?} cannot be applied to {x} and {y}")));
                };
                match (p, q) {
                    (Num::I(i), Num::I(j)) => match op {
                        BinOp::Add => Value::from(i.wrapping_add(j)),
                        BinOp::Sub => Value::from(i.wrapping_sub(j)),
                        BinOp::Mul => Value::from(i.wrapping_mul(j)),
                        BinOp::Div | BinOp::Rem if j == 0 => return Err(self.err(pos, "Attempted to divide by zero")),
                        BinOp::Div => Value::from(i.wrapping_div(j)),
                        _ => Value::from(i.wrapping_rem(j)),
                    },
                    (p, q) => {
                        let (i, j) = (as_f64(p), as_f64(q));
                        from_f64(match op {
                            BinOp::Add => i + j,
                            BinOp::Sub => i - j,
                            BinOp::Mul => i * j,
                            BinOp::Div => i / j,
                            _ => i % j,
                        })
                    }
                }
            }
        })
    }

    fn query(&mut self, q: &Query) -> R {
        let src = self.eval(&q.source)?;
        let items = into_items(src).ok_or_else(|| self.err(q.source.pos, "The query source is not a collection"))?;
        let rows = self.rows_of(&q.var, items, q.source.pos)?;
        self.body(&q.body, rows).map(Value::Array)
    }

    /// One single-variable row per item.
    fn rows_of(&mut self, var: &str, items: Vec<Value>, pos: usize) -> Result<Vec<Row>, LinqError> {
        self.charge(items.len() as u64, pos)?;
        self.charge_bytes(VARIABLE_BYTES * items.len() as u64, pos)?;
        Ok(items.into_iter().map(|v| vec![(var.to_owned(), Rc::new(v))]).collect())
    }

    /// Runs `f` with the row's variables in scope; the row is moved into the scopes and back, not cloned.
    fn with_row<T>(&mut self, row: &mut Row, f: impl FnOnce(&mut Self) -> Result<T, LinqError>) -> Result<T, LinqError> {
        let mark = self.scopes.len();
        self.scopes.append(row);
        let r = f(self);
        row.extend(self.scopes.drain(mark..));
        r
    }

    fn body(&mut self, body: &QueryBody, mut rows: Vec<Row>) -> Result<Vec<Value>, LinqError> {
        for clause in &body.clauses {
            let mut next = Vec::new();
            match clause {
                Clause::From(var, e) => {
                    for mut row in rows {
                        let v = self.with_row(&mut row, |s| s.eval(e))?;
                        let items = into_items(v).ok_or_else(|| self.err(e.pos, "The 'from' source is not a collection"))?;
                        for it in items {
                            next.push(self.extend_row(&row, var, it, e.pos)?);
                        }
                    }
                }
                Clause::Let(var, e) => {
                    for mut row in rows {
                        let v = self.with_row(&mut row, |s| s.eval(e))?;
                        self.charge_bytes(VARIABLE_BYTES, e.pos)?;
                        row.push((var.clone(), Rc::new(v)));
                        next.push(row);
                    }
                }
                Clause::Where(e) => {
                    for mut row in rows {
                        let v = self.with_row(&mut row, |s| s.eval(e))?;
                        if self.truthy(&v, e.pos)? {
                            next.push(row);
                        }
                    }
                }
                Clause::OrderBy(keys) => {
                    let mut keyed = Vec::new();
                    for mut row in rows {
                        let mut k = Vec::new();
                        for (e, _) in keys {
                            k.push(self.with_row(&mut row, |s| s.eval(e))?);
                        }
                        keyed.push((k, row));
                    }
                    self.charge(sort_cost(keyed.len()), keys[0].0.pos)?;
                    keyed.sort_by(|(a, _), (b, _)| {
                        for (i, (_, desc)) in keys.iter().enumerate() {
                            let o = compare(&a[i], &b[i]);
                            let o = if *desc { o.reverse() } else { o };
                            if o != Ordering::Equal {
                                return o;
                            }
                        }
                        Ordering::Equal
                    });
                    next = keyed.into_iter().map(|(_, r)| r).collect();
                }
            }
            rows = next;
        }
        let out = match &body.end {
            QueryEnd::Select(e) => {
                let mut out = Vec::with_capacity(rows.len());
                for mut row in rows {
                    out.push(self.with_row(&mut row, |s| s.eval(e))?);
                }
                out
            }
            QueryEnd::Group { element, key } => {
                let mut groups: Vec<(Value, Vec<Value>)> = Vec::new();
                for mut row in rows {
                    let (k, v) = self.with_row(&mut row, |s| Ok((s.eval(key)?, s.eval(element)?)))?;
                    self.charge(groups.len() as u64, key.pos)?;
                    match groups.iter_mut().find(|(g, _)| equals(g, &k)) {
                        Some((_, items)) => items.push(v),
                        None => groups.push((k, vec![v])),
                    }
                }
                groups.into_iter().map(|(k, items)| group(k, items)).collect()
            }
        };
        match &body.into {
            Some((var, rest)) => {
                let pos = match &body.end {
                    QueryEnd::Select(e) => e.pos,
                    QueryEnd::Group { key, .. } => key.pos,
                };
                let rows = self.rows_of(var, out, pos)?;
                self.body(rest, rows)
            }
            None => Ok(out),
        }
    }

    fn call(&mut self, target: Option<&Expr>, name: &str, generic: Option<&str>, args: &[Expr], pos: usize) -> R {
        if let Some(t) = target {
            if let ExprKind::Ident(class) = &t.kind {
                if self.lookup(class).is_none() {
                    return self.static_call(class, name, args, pos);
                }
            }
            let recv = self.eval(t)?;
            return self.method(recv, name, generic, args, pos);
        }
        self.helper(name, generic, args, pos)
    }

    pub(crate) fn eval_args(&mut self, args: &[Expr]) -> Result<Vec<Value>, LinqError> {
        args.iter().map(|a| self.eval(a)).collect()
    }
}

/// Bytes an expression's value newly occupies: a copy (a variable, a member, a method's result) or a new
/// string is counted whole; an object, array or query result built from values already counted only for
/// its slots; the document and literals are free.
fn built_bytes(kind: &ExprKind, v: &Value) -> u64 {
    match kind {
        ExprKind::Anon(_) | ExprKind::Array(_) | ExprKind::Query(_) => shallow_size(v),
        ExprKind::Source(_) | ExprKind::Null | ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Cond(..) => 0,
        _ => heap_size(v),
    }
}
