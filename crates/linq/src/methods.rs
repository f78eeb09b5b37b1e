//! Helpers (`LoadDocument`, `CreateField`, …), static methods and instance methods (string, LINQ).

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::ast::Expr;
use crate::error::LinqError;
use crate::eval::Eval;
use crate::metadata::with_id;
use crate::reserved_keys::{FIELD, SPATIAL};
use crate::value::*;

type R = Result<Value, LinqError>;

impl Eval<'_> {
    pub(crate) fn helper(&mut self, name: &str, generic: Option<&str>, args: &[Expr], pos: usize) -> R {
        let argc = args.len();
        let arity = |ok: bool| if ok { Ok(()) } else { Err(self.err(pos, format!("Wrong number of arguments ({argc}) for {name}"))) };
        match name {
            "LoadDocument" => {
                arity((1..=2).contains(&argc))?;
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

    pub(crate) fn load(&mut self, id: &Value) -> Value {
        let Value::String(id) = id else { return Value::Null };
        let Some(loader) = self.loader.as_mut() else { return Value::Null };
        match loader.load(id) {
            Some(mut doc) => {
                with_id(&mut doc, id);
                doc
            }
            None => Value::Null,
        }
    }

    pub(crate) fn static_call(&mut self, class: &str, name: &str, args: &[Expr], pos: usize) -> R {
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

    pub(crate) fn method(&mut self, recv: Value, name: &str, generic: Option<&str>, args: &[Expr], pos: usize) -> R {
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

    pub(crate) fn string_method(&mut self, s: &str, name: &str, args: &[Expr], pos: usize) -> R {
        let a = self.eval_args(args)?;
        let text = |i: usize| a.get(i).map(to_text).unwrap_or_default();
        let int = |i: usize| a.get(i).and_then(Value::as_i64);
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
                let chars: Vec<char> = s.chars().collect();
                let start = int(0).unwrap_or(-1);
                let len = if a.len() == 2 { int(1).unwrap_or(-1) } else { chars.len() as i64 - start };
                if start < 0 || len < 0 || start.checked_add(len).is_none_or(|end| end as usize > chars.len()) {
                    return Err(self.err(pos, format!("Substring({start}, {len}) is out of range for a string of length {}", chars.len())));
                }
                Value::String(chars[start as usize..(start + len) as usize].iter().collect())
            }
            ("Count", 0) => Value::from(s.chars().count()),
            _ => return Err(self.err(pos, format!("Unsupported string method '{name}' with {} arguments", a.len()))),
        })
    }

    pub(crate) fn enumerable(&mut self, items: Vec<Value>, name: &str, args: &[Expr], pos: usize) -> R {
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
                        if argc == 2 {
                            // The outer item is copied for every inner one.
                            self.charge_bytes(heap_size(&v), pos)?;
                            out.push(self.apply(&args[1], &[v.clone(), x])?);
                        } else {
                            out.push(x);
                        }
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
                                (Num::I(a), Num::I(b)) => {
                                    Num::I(a.checked_add(b).ok_or_else(|| self.err(pos, "Arithmetic operation resulted in an overflow"))?)
                                }
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
                    self.charge(out.len() as u64, pos)?;
                    if !out.iter().any(|o| equals(o, &v)) {
                        out.push(v);
                    }
                }
                Value::Array(out)
            }
            "OrderBy" | "OrderByDescending" | "ThenBy" | "ThenByDescending" if argc <= 1 => {
                let keys = match args.first() {
                    Some(f) => items.iter().map(|v| self.apply(f, std::slice::from_ref(v))).collect::<Result<Vec<_>, _>>()?,
                    None => items.clone(),
                };
                let mut pairs: Vec<(Value, Value)> = keys.into_iter().zip(items).collect();
                self.charge(sort_cost(pairs.len()), pos)?;
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
                        self.charge(d.len() as u64, pos)?;
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
                    self.charge(groups.len() as u64, pos)?;
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

pub(crate) fn is_enumerable_method(name: &str) -> bool {
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

/// `string.Format` with `{0}` placeholders (format specifiers are ignored).
pub(crate) fn format_string(fmt: &str, args: &[Value]) -> Result<Value, String> {
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
