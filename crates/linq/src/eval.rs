//! Native evaluation of the syntax tree over `serde_json::Value` with C# dynamic semantics.
//!
//! Reserved object keys mark values that JSON cannot express: a group (`g` in a reduce) and the fields
//! made by `CreateField` / `CreateSpatialField`. Documents never carry these keys.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::ast::{BinOp, Clause, Expr, ExprKind, Query, QueryBody, QueryEnd, Source, UnOp};
use crate::error::{ErrorKind, LinqError};
use crate::DocumentLoader;

pub(crate) const GROUP_KEY: &str = "@corvid-group-key";
pub(crate) const GROUP_ITEMS: &str = "@corvid-group-items";
pub(crate) const FIELD: &str = "@corvid-field";
pub(crate) const SPATIAL: &str = "@corvid-spatial";

/// The document a map is applied to.
pub(crate) struct MapInput<'a> {
    pub doc: &'a Value,
}

pub(crate) struct Eval<'a> {
    pub text: &'a str,
    pub input: Option<MapInput<'a>>,
    pub results: Option<&'a [Value]>,
    pub loader: Option<&'a mut dyn DocumentLoader>,
    pub steps: u64,
    pub budget: u64,
    pub scopes: Vec<(String, Value)>,
}

type R = Result<Value, LinqError>;

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Number(n) => Some(n.as_i64().map(Num::I).unwrap_or_else(|| Num::F(n.as_f64().unwrap_or(0.0)))),
        _ => None,
    }
}

fn from_f64(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn from_num(n: Num) -> Value {
    match n {
        Num::I(i) => Value::from(i),
        Num::F(f) => from_f64(f),
    }
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    }
}

pub(crate) fn group(key: Value, items: Vec<Value>) -> Value {
    let mut m = Map::new();
    m.insert(GROUP_KEY.into(), key);
    m.insert(GROUP_ITEMS.into(), Value::Array(items));
    Value::Object(m)
}

/// The elements of an enumerable value: arrays, groups, null (empty, like a dynamic null), and objects
/// (their properties as `{Key, Value}` pairs, like a dictionary: `AsJson(doc).Select(x => x.Value)`).
fn into_items(v: Value) -> Option<Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        Value::Null => Some(Vec::new()),
        Value::Object(mut o) => match o.remove(GROUP_ITEMS) {
            Some(Value::Array(a)) => Some(a),
            Some(_) => None,
            None => Some(
                o.into_iter()
                    .filter(|(k, _)| k.as_str() != "@metadata")
                    .map(|(k, v)| {
                        let mut p = Map::new();
                        p.insert("Key".into(), Value::String(k));
                        p.insert("Value".into(), v);
                        Value::Object(p)
                    })
                    .collect(),
            ),
        },
        _ => None,
    }
}

/// C#'s `ToString()` of a JSON value.
pub(crate) fn to_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        other => other.to_string(),
    }
}

pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => match (num(a), num(b)) {
            (Some(Num::I(x)), Some(Num::I(y))) => x.cmp(&y),
            (Some(x), Some(y)) => as_f64(x).partial_cmp(&as_f64(y)).unwrap_or(Ordering::Equal),
            _ => match (a, b) {
                (Value::String(x), Value::String(y)) => x.cmp(y),
                (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
                _ => a.to_string().cmp(&b.to_string()),
            },
        },
    }
}

fn equals(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Some(_), Some(_)) => compare(a, b) == Ordering::Equal,
        _ => a == b,
    }
}

/// Date parts of an ISO 8601 string: year, month, day, hour, minute, second, fraction (7 digits).
fn date_parts(s: &str) -> Option<[u32; 7]> {
    let b = s.as_bytes();
    let d = |r: std::ops::Range<usize>| -> Option<u32> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, da) = (d(0..4)?, d(5..7)?, d(8..10)?);
    let (mut h, mut mi, mut se, mut fr) = (0, 0, 0, 0);
    if b.len() >= 19 && (b[10] == b'T' || b[10] == b' ') {
        h = d(11..13)?;
        mi = d(14..16)?;
        se = d(17..19)?;
        if b.get(19) == Some(&b'.') {
            let digits: String = s[20..].chars().take_while(char::is_ascii_digit).take(7).collect();
            fr = format!("{digits:0<7}").parse().ok()?;
        }
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some([y, mo, da, h, mi, se, fr])
}

fn format_date(p: [u32; 7]) -> String {
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}", p[0], p[1], p[2], p[3], p[4], p[5], p[6])
}

fn day_of_week(y: u32, m: u32, d: u32) -> u32 {
    // Sakamoto's method; 0 = Sunday as in .NET's DayOfWeek.
    let t = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = if m < 3 { y - 1 } else { y };
    (y + y / 4 - y / 100 + y / 400 + t[(m - 1) as usize] + d) % 7
}

/// Members of values: `Length`, `Count`, date parts, document `Id`, group `Key`.
pub(crate) fn member(v: &Value, name: &str) -> Value {
    match v {
        Value::Object(o) => {
            if let Some(k) = o.get(GROUP_KEY) {
                return match name {
                    "Key" => k.clone(),
                    "Count" => Value::from(o.get(GROUP_ITEMS).and_then(Value::as_array).map_or(0, Vec::len)),
                    _ => Value::Null,
                };
            }
            match o.get(name) {
                Some(x) => x.clone(),
                None if name == "Id" => o.get("@metadata").and_then(|m| m.get("@id")).cloned().unwrap_or(Value::Null),
                None => Value::Null,
            }
        }
        Value::Array(a) if name == "Length" || name == "Count" => Value::from(a.len()),
        Value::String(s) => {
            if name == "Length" {
                return Value::from(s.chars().count());
            }
            match date_parts(s) {
                Some(p) => match name {
                    "Year" => Value::from(p[0]),
                    "Month" => Value::from(p[1]),
                    "Day" => Value::from(p[2]),
                    "Hour" => Value::from(p[3]),
                    "Minute" => Value::from(p[4]),
                    "Second" => Value::from(p[5]),
                    "Millisecond" => Value::from(p[6] / 10_000),
                    "DayOfWeek" => Value::from(day_of_week(p[0], p[1], p[2])),
                    "Date" => Value::String(format_date([p[0], p[1], p[2], 0, 0, 0, 0])),
                    _ => Value::Null,
                },
                None => Value::Null,
            }
        }
        _ => Value::Null,
    }
}

/// `v[i]`: object members, array elements and string characters; anything else is null.
fn index(v: &Value, i: &Value) -> Value {
    match (v, i) {
        (Value::Object(_), Value::String(k)) => member(v, k),
        (Value::Array(a), _) => match num(i) {
            Some(Num::I(n)) if n >= 0 => a.get(n as usize).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        (Value::String(s), _) => match num(i) {
            Some(Num::I(n)) if n >= 0 => s.chars().nth(n as usize).map_or(Value::Null, |c| Value::String(c.into())),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

impl<'a> Eval<'a> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> LinqError {
        LinqError::at(ErrorKind::Runtime, self.text, pos, msg)
    }

    fn lookup(&self, name: &str) -> Option<&Value> {
        self.scopes.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
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

    fn truthy(&self, v: &Value, pos: usize) -> Result<bool, LinqError> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(false),
            other => Err(self.err(pos, format!("Expected a boolean but got {other}"))),
        }
    }

    /// Applies a lambda (or a plain expression that ignores its arguments) to `args`.
    fn apply(&mut self, f: &Expr, args: &[Value]) -> R {
        match &f.kind {
            ExprKind::Lambda(params, body) => {
                let mark = self.scopes.len();
                for (p, a) in params.iter().zip(args) {
                    self.scopes.push((p.clone(), a.clone()));
                }
                let r = self.eval(body);
                self.scopes.truncate(mark);
                r
            }
            _ => Err(self.err(f.pos, "Expected a lambda expression")),
        }
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> R {
        self.steps += 1;
        if self.steps > self.budget {
            return Err(self.err(e.pos, format!("Evaluation exceeded the step budget of {}", self.budget)));
        }
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
            Source::AllDocs | Source::Collection(_) => match &self.input {
                Some(i) => Ok(Value::Array(vec![i.doc.clone()])),
                None => Err(self.err(pos, "'docs' can only be used in a map")),
            },
            Source::Results => match self.results {
                Some(r) => Ok(Value::Array(r.to_vec())),
                None => Err(self.err(pos, "'results' can only be used in a reduce")),
            },
            Source::TimeSeries(..) | Source::Counters(..) => Err(self.err(pos, "Time-series and counter indexes are not supported yet")),
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
        let rows: Vec<Vec<(String, Value)>> = items.into_iter().map(|v| vec![(q.var.clone(), v)]).collect();
        self.body(&q.body, rows).map(Value::Array)
    }

    /// Runs `f` with the row's variables in scope; the row is moved into the scopes and back, not cloned.
    fn with_row<T>(&mut self, row: &mut Vec<(String, Value)>, f: impl FnOnce(&mut Self) -> Result<T, LinqError>) -> Result<T, LinqError> {
        let mark = self.scopes.len();
        self.scopes.append(row);
        let r = f(self);
        row.extend(self.scopes.drain(mark..));
        r
    }

    fn body(&mut self, body: &QueryBody, mut rows: Vec<Vec<(String, Value)>>) -> Result<Vec<Value>, LinqError> {
        for clause in &body.clauses {
            let mut next = Vec::new();
            match clause {
                Clause::From(var, e) => {
                    for mut row in rows {
                        let v = self.with_row(&mut row, |s| s.eval(e))?;
                        let items = into_items(v).ok_or_else(|| self.err(e.pos, "The 'from' source is not a collection"))?;
                        for it in items {
                            let mut r = row.clone();
                            r.push((var.clone(), it));
                            next.push(r);
                        }
                    }
                }
                Clause::Let(var, e) => {
                    for mut row in rows {
                        let v = self.with_row(&mut row, |s| s.eval(e))?;
                        row.push((var.clone(), v));
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
                let rows = out.into_iter().map(|v| vec![(var.clone(), v)]).collect();
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

    fn eval_args(&mut self, args: &[Expr]) -> Result<Vec<Value>, LinqError> {
        args.iter().map(|a| self.eval(a)).collect()
    }

    fn helper(&mut self, name: &str, generic: Option<&str>, args: &[Expr], pos: usize) -> R {
        let argc = args.len();
        let arity = |ok: bool| if ok { Ok(()) } else { Err(self.err(pos, format!("Wrong number of arguments ({argc}) for {name}"))) };
        match name {
            "LoadDocument" => {
                arity((1..=2).contains(&argc))?;
                let _ = generic;
                let id = self.eval(&args[0])?;
                match id {
                    Value::Array(ids) => {
                        let mut out = Vec::new();
                        for id in ids {
                            out.push(self.load(&id));
                        }
                        Ok(Value::Array(out))
                    }
                    id => Ok(self.load(&id)),
                }
            }
            "Id" | "DocumentId" => {
                arity(argc == 1)?;
                let d = self.eval(&args[0])?;
                Ok(member(&d, "Id"))
            }
            "MetadataFor" => {
                arity(argc == 1)?;
                let d = self.eval(&args[0])?;
                Ok(d.get("@metadata").cloned().unwrap_or(Value::Null))
            }
            "AsJson" => {
                arity(argc == 1)?;
                self.eval(&args[0])
            }
            "TryConvert" => {
                arity(argc == 1)?;
                let v = self.eval(&args[0])?;
                Ok(cast(generic.unwrap_or("object"), v).unwrap_or(Value::Null))
            }
            "CreateField" => {
                arity((2..=4).contains(&argc))?;
                let a = self.eval_args(args)?;
                let mut m = Map::new();
                m.insert("name".into(), Value::String(to_text(&a[0])));
                m.insert("value".into(), a[1].clone());
                if argc == 3 && a[2].is_object() {
                    m.insert("options".into(), a[2].clone());
                } else {
                    m.insert("stored".into(), a.get(2).cloned().unwrap_or(Value::Null));
                    m.insert("analyzed".into(), a.get(3).cloned().unwrap_or(Value::Null));
                }
                let mut o = Map::new();
                o.insert(FIELD.into(), Value::Object(m));
                Ok(Value::Object(o))
            }
            "CreateSpatialField" => {
                arity((1..=2).contains(&argc))?;
                let a = self.eval_args(args)?;
                let mut m = Map::new();
                if argc == 1 {
                    m.insert("wkt".into(), a[0].clone());
                } else {
                    m.insert("lat".into(), a[0].clone());
                    m.insert("lng".into(), a[1].clone());
                }
                let mut o = Map::new();
                o.insert(SPATIAL.into(), Value::Object(m));
                Ok(Value::Object(o))
            }
            "Recurse" => {
                arity(argc == 2)?;
                let root = self.eval(&args[0])?;
                let mut out = Vec::new();
                let mut stack = match root {
                    Value::Array(a) => a.into_iter().rev().collect(),
                    Value::Null => vec![],
                    v => vec![v],
                };
                while let Some(v) = stack.pop() {
                    let children = self.apply(&args[1], std::slice::from_ref(&v))?;
                    out.push(v);
                    match children {
                        Value::Array(a) => stack.extend(a.into_iter().rev()),
                        Value::Null => {}
                        c => stack.push(c),
                    }
                    if out.len() > 100_000 {
                        return Err(self.err(pos, "Recurse produced too many items"));
                    }
                }
                Ok(Value::Array(out))
            }
            _ => Err(self.err(pos, format!("Unknown function '{name}'"))),
        }
    }

    fn load(&mut self, id: &Value) -> Value {
        let Value::String(id) = id else { return Value::Null };
        let Some(loader) = self.loader.as_mut() else { return Value::Null };
        match loader.load(id) {
            Some(mut doc) => {
                crate::with_id(&mut doc, id);
                doc
            }
            None => Value::Null,
        }
    }

    fn static_call(&mut self, class: &str, name: &str, args: &[Expr], pos: usize) -> R {
        match class {
            "Enumerable" => {
                let Some((first, rest)) = args.split_first() else {
                    return Err(self.err(pos, format!("Enumerable.{name} needs a source argument")));
                };
                let recv = self.eval(first)?;
                self.method(recv, name, None, rest, pos)
            }
            "string" | "String" => {
                let a = self.eval_args(args)?;
                match name {
                    "IsNullOrEmpty" => Ok(Value::Bool(a.first().is_none_or(|v| v.is_null() || v.as_str() == Some("")))),
                    "IsNullOrWhiteSpace" => {
                        Ok(Value::Bool(a.first().is_none_or(|v| v.is_null() || v.as_str().is_some_and(|s| s.trim().is_empty()))))
                    }
                    "Join" if !a.is_empty() => {
                        let sep = to_text(&a[0]);
                        let parts: Vec<String> = match a.get(1) {
                            Some(Value::Array(v)) if a.len() == 2 => v.iter().map(to_text).collect(),
                            _ => a[1..].iter().map(to_text).collect(),
                        };
                        Ok(Value::String(parts.join(&sep)))
                    }
                    "Concat" => {
                        let parts: Vec<String> = match a.first() {
                            Some(Value::Array(x)) if a.len() == 1 => x.iter().map(to_text).collect(),
                            _ => a.iter().map(to_text).collect(),
                        };
                        Ok(Value::String(parts.concat()))
                    }
                    "Format" if !a.is_empty() => format_string(&to_text(&a[0]), &a[1..]).map_err(|m| self.err(pos, m)),
                    _ => Err(self.err(pos, format!("Unknown method string.{name}"))),
                }
            }
            "DateTime" => {
                let a = self.eval_args(args)?;
                match (name, a.first()) {
                    ("Parse", Some(Value::String(s))) => match date_parts(s) {
                        Some(p) => Ok(Value::String(format_date(p))),
                        None => Err(self.err(pos, format!("String '{s}' was not recognized as a valid DateTime"))),
                    },
                    _ => Err(self.err(pos, format!("Unsupported DateTime.{name}"))),
                }
            }
            "Math" => {
                let a = self.eval_args(args)?;
                let n: Vec<Option<Num>> = a.iter().map(num).collect();
                if n.iter().any(Option::is_none) {
                    return Ok(Value::Null);
                }
                let n: Vec<Num> = n.into_iter().flatten().collect();
                let f = |i: usize| n.get(i).copied().map_or(0.0, as_f64);
                Ok(match (name, n.as_slice()) {
                    ("Abs", [Num::I(i)]) => Value::from(i.wrapping_abs()),
                    ("Abs", [_]) => from_f64(f(0).abs()),
                    ("Max", [Num::I(i), Num::I(j)]) => Value::from(*i.max(j)),
                    ("Min", [Num::I(i), Num::I(j)]) => Value::from(*i.min(j)),
                    ("Max", [_, _]) => from_f64(f(0).max(f(1))),
                    ("Min", [_, _]) => from_f64(f(0).min(f(1))),
                    ("Floor", [_]) => from_f64(f(0).floor()),
                    ("Ceiling", [_]) => from_f64(f(0).ceil()),
                    ("Round", [_]) => from_f64(f(0).round_ties_even()),
                    ("Round", [_, Num::I(d)]) => {
                        let m = 10f64.powi(*d as i32);
                        from_f64((f(0) * m).round_ties_even() / m)
                    }
                    ("Sqrt", [_]) => from_f64(f(0).sqrt()),
                    ("Pow", [_, _]) => from_f64(f(0).powf(f(1))),
                    _ => return Err(self.err(pos, format!("Unsupported Math.{name} with {} arguments", n.len()))),
                })
            }
            "Convert" => {
                let a = self.eval_args(args)?;
                let ty = match name {
                    "ToInt32" | "ToInt64" | "ToInt16" => "long",
                    "ToDouble" | "ToSingle" => "double",
                    "ToDecimal" => "decimal",
                    "ToString" => "string",
                    "ToBoolean" => "bool",
                    _ => return Err(self.err(pos, format!("Unsupported Convert.{name}"))),
                };
                cast(ty, a.into_iter().next().unwrap_or(Value::Null)).map_err(|m| self.err(pos, m))
            }
            _ => Err(self.err(pos, format!("Unknown name '{class}'"))),
        }
    }

    fn method(&mut self, recv: Value, name: &str, generic: Option<&str>, args: &[Expr], pos: usize) -> R {
        match name {
            "Boost" => return Ok(recv),
            "ToString" if args.is_empty() => return Ok(if recv.is_null() { Value::Null } else { Value::String(to_text(&recv)) }),
            "Equals" if args.len() == 1 => {
                let o = self.eval(&args[0])?;
                return Ok(Value::Bool(equals(&recv, &o)));
            }
            "Value" | "Value2" if args.len() == 1 => {
                let k = self.eval(&args[0])?;
                let v = member(&recv, &to_text(&k));
                return cast(generic.unwrap_or("object"), v).map_err(|m| self.err(pos, m));
            }
            "GetValueOrDefault" | "HasValue" if args.is_empty() => {
                return Ok(if name == "HasValue" { Value::Bool(!recv.is_null()) } else { recv });
            }
            _ => {}
        }
        if let Value::String(s) = &recv {
            return self.string_method(s, name, args, pos);
        }
        if recv.is_null() && !is_enumerable_method(name) {
            return Ok(Value::Null);
        }
        if !matches!(recv, Value::Array(_) | Value::Null | Value::Object(_)) {
            return Err(self.err(pos, format!("Method '{name}' cannot be called on {recv}")));
        }
        let Some(items) = into_items(recv) else {
            return Err(self.err(pos, format!("Method '{name}' cannot be called on this value")));
        };
        self.enumerable(items, name, args, pos)
    }

    fn string_method(&mut self, s: &str, name: &str, args: &[Expr], pos: usize) -> R {
        let a = self.eval_args(args)?;
        let text = |i: usize| a.get(i).map(to_text).unwrap_or_default();
        let int = |i: usize| a.get(i).and_then(Value::as_i64);
        let chars: Vec<char> = s.chars().collect();
        Ok(match (name, a.len()) {
            ("ToLower" | "ToLowerInvariant", 0) => Value::String(s.to_lowercase()),
            ("ToUpper" | "ToUpperInvariant", 0) => Value::String(s.to_uppercase()),
            ("Trim", 0) => Value::String(s.trim().into()),
            ("TrimStart", 0) => Value::String(s.trim_start().into()),
            ("TrimEnd", 0) => Value::String(s.trim_end().into()),
            ("Contains", 1) => Value::Bool(s.contains(&text(0))),
            ("StartsWith", 1) => Value::Bool(s.starts_with(&text(0))),
            ("EndsWith", 1) => Value::Bool(s.ends_with(&text(0))),
            ("IndexOf", 1) => Value::from(s.find(&text(0)).map_or(-1, |b| s[..b].chars().count() as i64)),
            ("Replace", 2) => Value::String(s.replace(&text(0), &text(1))),
            ("Split", _) if !a.is_empty() => {
                let seps: Vec<String> = a
                    .iter()
                    .flat_map(|v| match v {
                        Value::Array(x) => x.iter().map(to_text).collect(),
                        v => vec![to_text(v)],
                    })
                    .filter(|x| !x.is_empty())
                    .collect();
                let mut parts = vec![s.to_string()];
                for sep in &seps {
                    parts = parts.iter().flat_map(|p| p.split(sep.as_str()).map(String::from).collect::<Vec<_>>()).collect();
                }
                Value::Array(parts.into_iter().map(Value::String).collect())
            }
            ("Substring", 1 | 2) => {
                let start = int(0).unwrap_or(-1);
                let len = if a.len() == 2 { int(1).unwrap_or(-1) } else { chars.len() as i64 - start };
                if start < 0 || len < 0 || (start + len) as usize > chars.len() {
                    return Err(self.err(pos, format!("Substring({start}, {len}) is out of range for a string of length {}", chars.len())));
                }
                Value::String(chars[start as usize..(start + len) as usize].iter().collect())
            }
            ("Count", 0) => Value::from(chars.len()),
            _ => return Err(self.err(pos, format!("Unsupported string method '{name}' with {} arguments", a.len()))),
        })
    }

    fn enumerable(&mut self, items: Vec<Value>, name: &str, args: &[Expr], pos: usize) -> R {
        let argc = args.len();
        let bad = |s: &Self| s.err(pos, format!("Unsupported call {name} with {argc} arguments"));
        // Projects every item through the optional selector lambda.
        let select = |s: &mut Self, items: Vec<Value>| -> Result<Vec<Value>, LinqError> {
            match args.first() {
                Some(f) => items.iter().map(|v| s.apply(f, std::slice::from_ref(v))).collect(),
                None => Ok(items),
            }
        };
        Ok(match name {
            "Select" if argc == 1 => {
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    out.push(self.apply(&args[0], &[v, Value::from(i)])?);
                }
                Value::Array(out)
            }
            "SelectMany" if argc == 1 || argc == 2 => {
                let mut out = Vec::new();
                for v in items {
                    let inner = self.apply(&args[0], std::slice::from_ref(&v))?;
                    let inner = into_items(inner).ok_or_else(|| self.err(args[0].pos, "SelectMany selector must return a collection"))?;
                    for x in inner {
                        out.push(if argc == 2 { self.apply(&args[1], &[v.clone(), x])? } else { x });
                    }
                }
                Value::Array(out)
            }
            "Where" | "Count" | "Any" | "All" | "First" | "FirstOrDefault" | "Last" | "LastOrDefault" | "LongCount" if argc <= 1 => {
                let mut kept = Vec::new();
                for v in items {
                    let ok = match args.first() {
                        Some(f) => {
                            let r = self.apply(f, std::slice::from_ref(&v))?;
                            self.truthy(&r, f.pos)?
                        }
                        None => true,
                    };
                    if ok {
                        kept.push(v);
                    } else if name == "All" {
                        return Ok(Value::Bool(false));
                    }
                }
                match name {
                    "Where" => Value::Array(kept),
                    "Count" | "LongCount" => Value::from(kept.len()),
                    "Any" => Value::Bool(!kept.is_empty()),
                    "All" => Value::Bool(true),
                    "First" | "Last" if kept.is_empty() => return Err(self.err(pos, "Sequence contains no matching element")),
                    "First" | "FirstOrDefault" => kept.into_iter().next().unwrap_or(Value::Null),
                    _ => kept.pop().unwrap_or(Value::Null),
                }
            }
            "Sum" | "Average" | "Min" | "Max" if argc <= 1 => {
                let vals: Vec<Value> = select(self, items)?.into_iter().filter(|v| !v.is_null()).collect();
                match name {
                    "Min" | "Max" => {
                        let want = if name == "Min" { Ordering::Less } else { Ordering::Greater };
                        let mut best: Option<Value> = None;
                        for v in vals {
                            if best.as_ref().is_none_or(|b| compare(&v, b) == want) {
                                best = Some(v);
                            }
                        }
                        best.unwrap_or(Value::Null)
                    }
                    _ => {
                        let mut acc = Num::I(0);
                        for v in &vals {
                            let n = num(v).ok_or_else(|| self.err(pos, format!("{name} over a non-number {v}")))?;
                            acc = match (acc, n) {
                                (Num::I(a), Num::I(b)) => Num::I(a.wrapping_add(b)),
                                (a, b) => Num::F(as_f64(a) + as_f64(b)),
                            };
                        }
                        if name == "Sum" {
                            from_num(acc)
                        } else if vals.is_empty() {
                            Value::Null
                        } else {
                            from_f64(as_f64(acc) / vals.len() as f64)
                        }
                    }
                }
            }
            "Distinct" if argc == 0 => {
                let mut out: Vec<Value> = Vec::new();
                for v in items {
                    if !out.iter().any(|o| equals(o, &v)) {
                        out.push(v);
                    }
                }
                Value::Array(out)
            }
            "OrderBy" | "OrderByDescending" | "ThenBy" | "ThenByDescending" if argc <= 1 => {
                let keys = select(self, items.clone())?;
                let mut pairs: Vec<(Value, Value)> = keys.into_iter().zip(items).collect();
                pairs.sort_by(|a, b| compare(&a.0, &b.0));
                if name.ends_with("Descending") {
                    pairs.reverse();
                }
                Value::Array(pairs.into_iter().map(|p| p.1).collect())
            }
            "ToList" | "ToArray" | "AsEnumerable" | "ToHashSet" if argc == 0 => Value::Array(items),
            "Reverse" if argc == 0 => Value::Array(items.into_iter().rev().collect()),
            "Contains" if argc == 1 => {
                let x = self.eval(&args[0])?;
                Value::Bool(items.iter().any(|v| equals(v, &x)))
            }
            "Take" | "Skip" if argc == 1 => {
                let n = self.eval(&args[0])?.as_i64().unwrap_or(0).max(0) as usize;
                Value::Array(if name == "Take" { items.into_iter().take(n).collect() } else { items.into_iter().skip(n).collect() })
            }
            "Concat" | "Union" if argc == 1 => {
                let other = self.eval(&args[0])?;
                let mut out = items;
                out.extend(into_items(other).unwrap_or_default());
                if name == "Union" {
                    let mut d: Vec<Value> = Vec::new();
                    for v in out {
                        if !d.iter().any(|o| equals(o, &v)) {
                            d.push(v);
                        }
                    }
                    out = d;
                }
                Value::Array(out)
            }
            "DefaultIfEmpty" if argc == 0 => Value::Array(if items.is_empty() { vec![Value::Null] } else { items }),
            "GroupBy" if argc == 1 || argc == 2 => {
                let mut groups: Vec<(Value, Vec<Value>)> = Vec::new();
                for v in items {
                    let k = self.apply(&args[0], std::slice::from_ref(&v))?;
                    let v = if argc == 2 { self.apply(&args[1], &[v])? } else { v };
                    match groups.iter_mut().find(|(g, _)| equals(g, &k)) {
                        Some((_, items)) => items.push(v),
                        None => groups.push((k, vec![v])),
                    }
                }
                Value::Array(groups.into_iter().map(|(k, v)| group(k, v)).collect())
            }
            _ => return Err(bad(self)),
        })
    }
}

fn is_enumerable_method(name: &str) -> bool {
    ENUMERABLE_METHODS.contains(&name)
}

/// Enumerable (LINQ) operators callable on arrays and groups.
pub(crate) const ENUMERABLE_METHODS: &[&str] = &[
    "Select",
    "SelectMany",
    "Where",
    "Count",
    "LongCount",
    "Any",
    "All",
    "First",
    "FirstOrDefault",
    "Last",
    "LastOrDefault",
    "Sum",
    "Average",
    "Min",
    "Max",
    "Distinct",
    "OrderBy",
    "OrderByDescending",
    "ThenBy",
    "ThenByDescending",
    "ToList",
    "ToArray",
    "AsEnumerable",
    "ToHashSet",
    "Reverse",
    "Contains",
    "Take",
    "Skip",
    "Concat",
    "Union",
    "DefaultIfEmpty",
    "GroupBy",
];

/// String instance methods.
pub(crate) const STRING_METHODS: &[&str] = &[
    "ToLower",
    "ToLowerInvariant",
    "ToUpper",
    "ToUpperInvariant",
    "Trim",
    "TrimStart",
    "TrimEnd",
    "Contains",
    "StartsWith",
    "EndsWith",
    "IndexOf",
    "Replace",
    "Split",
    "Substring",
];

/// Methods valid on any value.
pub(crate) const VALUE_METHODS: &[&str] = &["Boost", "ToString", "Equals", "Value", "Value2", "GetValueOrDefault", "HasValue"];

/// Free helper functions (`this.` is dropped by the parser).
pub(crate) const HELPERS: &[&str] =
    &["LoadDocument", "Id", "DocumentId", "MetadataFor", "AsJson", "TryConvert", "CreateField", "CreateSpatialField", "Recurse"];

/// Static classes usable as call targets.
pub(crate) const STATIC_CLASSES: &[&str] = &["Enumerable", "string", "String", "DateTime", "Math", "Convert"];

fn cast(ty: &str, v: Value) -> Result<Value, String> {
    let base = ty.trim_end_matches("[]");
    if ty.ends_with("[]") || v.is_null() {
        return Ok(v);
    }
    Ok(match base {
        "int" | "long" | "short" | "byte" | "uint" | "ulong" | "Int32" | "Int64" => match num(&v) {
            Some(Num::I(i)) => Value::from(i),
            Some(Num::F(f)) => Value::from(f.trunc() as i64),
            None => match &v {
                Value::String(s) => Value::from(s.trim().parse::<i64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        "double" | "float" | "Double" => match num(&v) {
            Some(n) => from_f64(as_f64(n)),
            None => match &v {
                Value::String(s) => from_f64(s.trim().parse::<f64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        // Decimals keep integral values integral so sums of `(decimal)` stay exact where JSON allows.
        "decimal" | "Decimal" => match num(&v) {
            Some(_) => v,
            None => match &v {
                Value::String(s) => from_f64(s.trim().parse::<f64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        "string" | "String" => Value::String(to_text(&v)),
        "DateTime" | "DateTimeOffset" => match &v {
            Value::String(s) => match date_parts(s) {
                Some(_) => v,
                None => return Err(format!("Cannot convert \"{s}\" to DateTime")),
            },
            _ => return Err(format!("Cannot convert {v} to DateTime")),
        },
        _ => v,
    })
}

/// `string.Format` with `{0}` placeholders (format specifiers are ignored).
fn format_string(fmt: &str, args: &[Value]) -> Result<Value, String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut spec = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    spec.push(c);
                }
                let idx: usize =
                    spec.split([',', ':']).next().unwrap_or("").trim().parse().map_err(|_| format!("Bad format item {{{spec}}}"))?;
                out.push_str(&to_text(args.get(idx).ok_or_else(|| format!("Format item {{{idx}}} has no argument"))?));
            }
            c => out.push(c),
        }
    }
    Ok(Value::String(out))
}
