//! Random documents, random filters and sorts: the index against a brute-force model written independently
//! from the index code (rql-and-indexes.md 7.3 as the specification).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value as Json};

use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, SortKey, SortKind, Value};

/// SplitMix64: small, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const FIELDS: [&str; 8] = ["Name", "Age", "Tags", "Lines[].Qty", "Address.City", "Code", "Id", "Flag"];
const NAMES: [&str; 12] = ["John", "jane", "JOHN", "Émile", "bob smith", "Alice", "alice", "Zoë", "a-b", "x10", "Mary Ann Lee", "the end"];
const TAGS: [&str; 6] = ["a", "B", "c", "d", "E", "b"];
const CITIES: [&str; 5] = ["London", "london", "Paris", "Berlin", "Rome"];
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such",
    "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

fn spec() -> IndexSpec {
    IndexSpec {
        fields: FIELDS
            .iter()
            .map(|p| FieldSpec { search: *p == "Name", exact: *p == "Name" || *p == "Code", ..FieldSpec::new(*p) })
            .collect(),
    }
}

fn random_number(rng: &mut Rng, max: i64) -> Json {
    let n = rng.below(max as u64) as i64 - 3;
    match rng.below(10) {
        0 | 1 => json!(n as f64 + 0.5),
        2 => json!(n as f64 + 0.25),
        _ => json!(n),
    }
}

fn random_doc(rng: &mut Rng, id: usize) -> Json {
    let mut doc = Map::new();
    doc.insert("Id".into(), json!(format!("id{id:05}")));
    match rng.below(20) {
        0 | 1 => {}
        2 => {
            doc.insert("Name".into(), Json::Null);
        }
        3 => {
            doc.insert("Name".into(), json!(""));
        }
        4 => {
            doc.insert("Name".into(), json!([rng.pick(&NAMES), rng.pick(&NAMES)]));
        }
        _ => {
            let name = rng.pick(&NAMES).to_string();
            let name = if rng.chance(30) { format!("{name} {}", rng.below(12)) } else { name };
            doc.insert("Name".into(), json!(name));
        }
    }
    match rng.below(20) {
        0 | 1 => {}
        2 => {
            doc.insert("Age".into(), Json::Null);
        }
        3 => {
            doc.insert("Age".into(), json!(rng.below(40).to_string()));
        }
        4 => {
            doc.insert("Age".into(), json!(true));
        }
        _ => {
            doc.insert("Age".into(), random_number(rng, 40));
        }
    }
    match rng.below(10) {
        0 => {}
        1 => {
            doc.insert("Tags".into(), json!([]));
        }
        2 => {
            doc.insert("Tags".into(), json!(rng.pick(&TAGS)));
        }
        _ => {
            let tags: Vec<Json> = (0..1 + rng.below(3)).map(|_| if rng.chance(5) { Json::Null } else { json!(rng.pick(&TAGS)) }).collect();
            doc.insert("Tags".into(), Json::Array(tags));
        }
    }
    if !rng.chance(15) {
        let lines: Vec<Json> =
            (0..rng.below(4)).map(|_| if rng.chance(10) { json!({"Other": 1}) } else { json!({"Qty": random_number(rng, 20)}) }).collect();
        doc.insert("Lines".into(), Json::Array(lines));
    }
    match rng.below(10) {
        0 => {}
        1 => {
            doc.insert("Address".into(), Json::Null);
        }
        2 => {
            doc.insert("Address".into(), json!({"Street": "x"}));
        }
        _ => {
            doc.insert("Address".into(), json!({"City": rng.pick(&CITIES)}));
        }
    }
    if !rng.chance(10) {
        let letter = *rng.pick(&["a", "A", "b", "ab", "z"]);
        let code = match rng.below(4) {
            0 => format!("{letter}{}", rng.below(30)),
            1 => format!("{letter}{:02}x", rng.below(12)),
            2 => format!("{letter}{}b{}", rng.below(5), rng.below(15)),
            _ => letter.to_string(),
        };
        doc.insert("Code".into(), json!(code));
    }
    if rng.chance(70) {
        doc.insert("Flag".into(), json!(rng.chance(50)));
    }
    Json::Object(doc)
}

// ---- the model -------------------------------------------------------------------------------------------

/// Values at a path: breadth-first over a frontier, arrays expanded wherever they appear.
fn model_values(body: &Json, path: &str) -> Vec<Json> {
    let mut frontier = vec![body.clone()];
    for segment in path.split('.') {
        let name = segment.strip_suffix("[]").unwrap_or(segment);
        let mut next = Vec::new();
        for value in frontier {
            let mut stack = vec![value];
            while let Some(v) = stack.pop() {
                match v {
                    Json::Array(items) => stack.extend(items.into_iter().rev()),
                    Json::Object(map) => next.extend(map.get(name).cloned()),
                    _ => {}
                }
            }
        }
        frontier = next;
    }
    let mut out = Vec::new();
    let mut stack: Vec<Json> = frontier.into_iter().rev().collect();
    while let Some(v) = stack.pop() {
        match v {
            Json::Array(items) => stack.extend(items.into_iter().rev()),
            other => out.push(other),
        }
    }
    out
}

fn exact_term(v: &Json) -> String {
    match v {
        Json::Null => "NULL_VALUE".into(),
        Json::String(s) if s.is_empty() => "EMPTY_STRING".into(),
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn default_term_model(v: &Json) -> String {
    match v {
        Json::String(s) if !s.is_empty() => s.to_lowercase(),
        other => exact_term(other),
    }
}

/// What the search analyzer sees: strings as written, other scalars as JSON text, nulls skipped.
fn search_text(v: &Json) -> Option<String> {
    match v {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn numbers(v: &Json) -> Option<(i64, f64)> {
    let n = v.as_number()?;
    match n.as_i64() {
        Some(i) => Some((i, i as f64)),
        None => {
            let d = n.as_f64()?;
            Some((d.trunc() as i64, d))
        }
    }
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .collect()
}

struct ModelDoc {
    key: String,
    values: BTreeMap<&'static str, Vec<Json>>,
}

impl ModelDoc {
    fn new(key: String, body: &Json) -> ModelDoc {
        ModelDoc { key, values: FIELDS.iter().map(|f| (*f, model_values(body, f))).collect() }
    }

    fn vals(&self, field: &str) -> &[Json] {
        &self.values[field]
    }

    fn terms(&self, field: &str) -> Vec<String> {
        self.vals(field).iter().map(default_term_model).collect()
    }

    fn equal(&self, field: &str, value: &Value, exact: bool) -> bool {
        let vals = self.vals(field);
        match value {
            Value::Null => vals.iter().any(Json::is_null),
            Value::Bool(b) => self.terms(field).contains(&b.to_string()),
            Value::Long(l) => vals.iter().filter_map(numbers).any(|(i, _)| i == *l),
            Value::Double(d) => vals.iter().filter_map(numbers).any(|(_, f)| f == *d),
            Value::String(s) if s.is_empty() => self.terms(field).iter().any(|t| t == "EMPTY_STRING"),
            Value::String(s) if exact && has_exact(field) => vals.iter().any(|v| exact_term(v) == *s),
            Value::String(s) if exact => self.terms(field).contains(s),
            Value::String(s) => self.terms(field).contains(&s.to_lowercase()),
        }
    }

    fn matches(&self, filter: &Filter) -> bool {
        match filter {
            Filter::All => true,
            Filter::Spatial { .. } | Filter::Fuzzy { .. } | Filter::Proximity { .. } | Filter::AnyTerm { .. } | Filter::Key(_) => {
                unreachable!("not generated")
            }
            Filter::Equal { field, value, exact } => self.equal(field, value, *exact),
            Filter::Range { field, lower, upper } => {
                let bounds: Vec<&Value> = lower.iter().chain(upper.iter()).map(|(v, _)| v).collect();
                let in_range = |cmp_lower: Option<Ordering>, cmp_upper: Option<Ordering>| {
                    let lower_ok = match (lower, cmp_lower) {
                        (None, _) => true,
                        (Some((_, incl)), Some(o)) => o == Ordering::Greater || (*incl && o == Ordering::Equal),
                        _ => false,
                    };
                    let upper_ok = match (upper, cmp_upper) {
                        (None, _) => true,
                        (Some((_, incl)), Some(o)) => o == Ordering::Less || (*incl && o == Ordering::Equal),
                        _ => false,
                    };
                    lower_ok && upper_ok
                };
                if bounds.iter().all(|b| matches!(b, Value::Long(_))) {
                    let as_long = |b: &Option<(Value, bool)>| match b {
                        Some((Value::Long(l), _)) => Some(*l),
                        _ => None,
                    };
                    let (lo, hi) = (as_long(lower), as_long(upper));
                    self.vals(field).iter().filter_map(numbers).any(|(i, _)| in_range(lo.map(|l| i.cmp(&l)), hi.map(|h| i.cmp(&h))))
                } else if bounds.iter().all(|b| matches!(b, Value::Long(_) | Value::Double(_))) {
                    let as_double = |b: &Option<(Value, bool)>| match b {
                        Some((Value::Long(l), _)) => Some(*l as f64),
                        Some((Value::Double(d), _)) => Some(*d),
                        _ => None,
                    };
                    let (lo, hi) = (as_double(lower), as_double(upper));
                    self.vals(field)
                        .iter()
                        .filter_map(numbers)
                        .any(|(_, f)| in_range(lo.and_then(|l| f.partial_cmp(&l)), hi.and_then(|h| f.partial_cmp(&h))))
                } else {
                    let as_text = |b: &Option<(Value, bool)>| match b {
                        Some((Value::String(s), _)) => Some(s.to_lowercase()),
                        _ => None,
                    };
                    let (lo, hi) = (as_text(lower), as_text(upper));
                    self.terms(field)
                        .iter()
                        .any(|t| in_range(lo.as_ref().map(|l| t.as_str().cmp(l)), hi.as_ref().map(|h| t.as_str().cmp(h))))
                }
            }
            Filter::In { field, values, all, exact } => {
                if *all {
                    values.iter().all(|v| self.equal(field, v, *exact))
                } else {
                    values.iter().any(|v| self.equal(field, v, *exact))
                }
            }
            Filter::StartsWith { field, prefix, exact } => {
                self.keyword_terms(field, *exact).iter().any(|t| t.starts_with(&keyword_text(prefix, *exact)))
            }
            Filter::EndsWith { field, suffix, exact } => {
                self.keyword_terms(field, *exact).iter().any(|t| t.ends_with(&keyword_text(suffix, *exact)))
            }
            Filter::Exists { field } => !self.vals(field).is_empty(),
            Filter::Search { field, terms, all } => {
                let doc_tokens: Vec<String> = self.vals(field).iter().filter_map(search_text).flat_map(|t| tokens(&t)).collect();
                let clauses: Vec<bool> = terms
                    .split_whitespace()
                    .filter_map(|word| match word.strip_suffix('*') {
                        Some(prefix) => Some(doc_tokens.iter().any(|t| t.starts_with(&prefix.to_lowercase()))),
                        None => {
                            let query = tokens(word);
                            assert!(query.len() <= 1, "phrases are not generated");
                            query.first().map(|q| doc_tokens.contains(q))
                        }
                    })
                    .collect();
                if clauses.is_empty() {
                    false
                } else if *all {
                    clauses.iter().all(|c| *c)
                } else {
                    clauses.iter().any(|c| *c)
                }
            }
            Filter::Regex { field, pattern } => {
                let terms = self.terms(field);
                match (pattern.strip_prefix('^'), pattern.strip_suffix('$')) {
                    (Some(p), _) => terms.iter().any(|t| t.starts_with(p)),
                    (_, Some(p)) => terms.iter().any(|t| t.ends_with(p)),
                    _ => terms.iter().any(|t| t.contains(pattern.as_str())),
                }
            }
            Filter::And(children) => children.iter().all(|c| self.matches(c)),
            Filter::Or(children) => children.iter().any(|c| self.matches(c)),
            Filter::Not(inner) => !self.matches(inner),
            Filter::Boost(inner, _) => self.matches(inner),
        }
    }

    fn keyword_terms(&self, field: &str, exact: bool) -> Vec<String> {
        if exact && has_exact(field) {
            self.vals(field).iter().map(exact_term).collect()
        } else {
            self.terms(field)
        }
    }

    fn sort_value(&self, key: &SortKey) -> SortValue {
        let vals = self.vals(&key.field);
        match key.kind {
            SortKind::String => SortValue::Text(vals.first().map(default_term_model)),
            SortKind::AlphaNumeric => SortValue::Natural(vals.first().map(default_term_model)),
            SortKind::Long => SortValue::Long(vals.iter().find_map(numbers).map(|(i, _)| i)),
            SortKind::Double => SortValue::Double(vals.iter().find_map(numbers).map(|(_, f)| f)),
            SortKind::Score | SortKind::Distance { .. } => unreachable!("not generated"),
        }
    }
}

fn has_exact(field: &str) -> bool {
    field == "Name" || field == "Code"
}

fn keyword_text(text: &str, exact: bool) -> String {
    if exact {
        text.to_string()
    } else {
        text.to_lowercase()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum SortValue {
    Text(Option<String>),
    Natural(Option<String>),
    Long(Option<i64>),
    Double(Option<f64>),
}

/// Natural order, chunk by chunk: digit runs by numeric value, everything else byte by byte.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let run = |s: &[u8], mut k: usize| {
                let start = k;
                while k < s.len() && s[k].is_ascii_digit() {
                    k += 1;
                }
                let digits: Vec<u8> = s[start..k].iter().copied().skip_while(|d| *d == b'0').collect();
                (digits, k)
            };
            let ((da, ni), (db, nj)) = (run(a, i), run(b, j));
            let ord = da.len().cmp(&db.len()).then_with(|| da.cmp(&db));
            if ord != Ordering::Equal {
                return ord;
            }
            (i, j) = (ni, nj);
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

fn compare_values(a: &SortValue, b: &SortValue) -> Ordering {
    fn opt<T>(a: &Option<T>, b: &Option<T>, f: impl Fn(&T, &T) -> Ordering) -> Ordering {
        match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => f(x, y),
        }
    }
    match (a, b) {
        (SortValue::Text(x), SortValue::Text(y)) => opt(x, y, |x, y| x.as_bytes().cmp(y.as_bytes())),
        (SortValue::Natural(x), SortValue::Natural(y)) => opt(x, y, |x, y| natural_cmp(x, y)),
        (SortValue::Long(x), SortValue::Long(y)) => opt(x, y, |x, y| x.cmp(y)),
        (SortValue::Double(x), SortValue::Double(y)) => opt(x, y, |x, y| x.total_cmp(y)),
        _ => unreachable!("same key, same kind"),
    }
}

fn compare_tuples(a: &[SortValue], b: &[SortValue], sort: &[SortKey]) -> Ordering {
    for ((x, y), key) in a.iter().zip(b).zip(sort) {
        let ord = compare_values(x, y);
        if ord != Ordering::Equal {
            return if key.descending { ord.reverse() } else { ord };
        }
    }
    Ordering::Equal
}

// ---- random queries --------------------------------------------------------------------------------------

struct Gen<'a> {
    rng: Rng,
    docs: &'a [ModelDoc],
}

impl Gen<'_> {
    fn sample_value(&mut self, field: &str) -> Option<Json> {
        for _ in 0..20 {
            let doc = &self.docs[self.rng.below(self.docs.len() as u64) as usize];
            let vals = doc.vals(field);
            if !vals.is_empty() {
                return Some(vals[self.rng.below(vals.len() as u64) as usize].clone());
            }
        }
        None
    }

    fn random_case(&mut self, s: &str) -> String {
        match self.rng.below(3) {
            0 => s.to_uppercase(),
            1 => s.to_lowercase(),
            _ => s.to_string(),
        }
    }

    fn value(&mut self, field: &str) -> Value {
        let sampled = self.sample_value(field);
        match (self.rng.below(10), sampled) {
            (0, _) => Value::Null,
            (1, _) => Value::Bool(self.rng.chance(50)),
            (2, _) => Value::Long(self.rng.below(40) as i64 - 3),
            (3, _) => Value::String(self.rng.pick(&NAMES).to_string()),
            (_, Some(Json::Null)) | (_, None) => Value::Null,
            (_, Some(Json::Bool(b))) => Value::Bool(b),
            (_, Some(Json::String(s))) => Value::String(self.random_case(&s)),
            (_, Some(n)) => match numbers(&n) {
                Some((_, f)) if n.is_f64() && self.rng.chance(80) => Value::Double(f),
                Some((i, _)) if self.rng.chance(70) => Value::Long(i),
                _ => Value::String(n.to_string()),
            },
        }
    }

    fn numeric_bound(&mut self) -> Option<(Value, bool)> {
        if self.rng.chance(25) {
            return None;
        }
        let v = if self.rng.chance(50) {
            Value::Long(self.rng.below(40) as i64 - 5)
        } else {
            Value::Double(self.rng.below(80) as f64 / 2.0 - 5.0)
        };
        Some((v, self.rng.chance(50)))
    }

    fn text_bound(&mut self, field: &str) -> Option<(Value, bool)> {
        if self.rng.chance(25) {
            return None;
        }
        let text = match self.sample_value(field) {
            Some(Json::String(s)) if !s.is_empty() && self.rng.chance(70) => self.random_case(&s),
            _ => self.rng.pick(&["a", "b", "L", "m", "p", "z", "1", "3"]).to_string(),
        };
        Some((Value::String(text), self.rng.chance(50)))
    }

    fn field(&mut self) -> &'static str {
        FIELDS[self.rng.below(FIELDS.len() as u64) as usize]
    }

    fn filter(&mut self, depth: u32) -> Filter {
        let kind = if depth >= 2 { self.rng.below(9) } else { self.rng.below(13) };
        match kind {
            0 => Filter::All,
            1 | 2 => {
                let field = self.field();
                let value = self.value(field);
                Filter::Equal { field: field.into(), value, exact: self.rng.chance(30) }
            }
            3 => {
                let field = *self.rng.pick(&["Age", "Lines[].Qty", "Flag"]);
                let (lower, upper) = (self.numeric_bound(), self.numeric_bound());
                match (lower, upper) {
                    (None, None) => Filter::Exists { field: field.into() },
                    (lower, upper) => Filter::Range { field: field.into(), lower, upper },
                }
            }
            4 => {
                let field = *self.rng.pick(&["Name", "Address.City", "Code", "Tags"]);
                match (self.text_bound(field), self.text_bound(field)) {
                    (None, None) => Filter::Exists { field: field.into() },
                    (lower, upper) => Filter::Range { field: field.into(), lower, upper },
                }
            }
            5 => {
                let field = self.field();
                let values = (0..1 + self.rng.below(3)).map(|_| self.value(field)).collect();
                Filter::In { field: field.into(), values, all: self.rng.chance(30), exact: self.rng.chance(20) }
            }
            6 => {
                let field = *self.rng.pick(&["Name", "Address.City", "Code", "Tags", "Age"]);
                let text = match self.sample_value(field) {
                    Some(Json::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => "a".into(),
                };
                let cut = text.chars().count().min(1 + self.rng.below(3) as usize);
                let exact = self.rng.chance(30);
                if self.rng.chance(50) {
                    let prefix: String = text.chars().take(cut).collect();
                    Filter::StartsWith { field: field.into(), prefix: self.random_case(&prefix), exact }
                } else {
                    let chars: Vec<char> = text.chars().collect();
                    let suffix: String = chars[chars.len() - cut..].iter().collect();
                    Filter::EndsWith { field: field.into(), suffix: self.random_case(&suffix), exact }
                }
            }
            7 => Filter::Exists { field: self.field().into() },
            8 => {
                let words: Vec<String> = (0..1 + self.rng.below(3))
                    .map(|_| {
                        let name = *self.rng.pick(&NAMES);
                        let word = name.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("x").to_string();
                        let word = if self.rng.chance(25) { format!("{}*", word.chars().take(2).collect::<String>()) } else { word };
                        self.random_case(&word)
                    })
                    .collect();
                Filter::Search { field: "Name".into(), terms: words.join(" "), all: self.rng.chance(40) }
            }
            9 => {
                let field = *self.rng.pick(&["Code", "Name", "Tags"]);
                let lit = *self.rng.pick(&["a", "b", "1", "0", "x", "jo", "an", "ab"]);
                let pattern = match self.rng.below(3) {
                    0 => format!("^{lit}"),
                    1 => format!("{lit}$"),
                    _ => lit.to_string(),
                };
                Filter::Regex { field: field.into(), pattern }
            }
            10 => Filter::And((0..1 + self.rng.below(3)).map(|_| self.filter(depth + 1)).collect()),
            11 => Filter::Or((0..1 + self.rng.below(3)).map(|_| self.filter(depth + 1)).collect()),
            _ => {
                let inner = self.filter(depth + 1);
                if self.rng.chance(30) {
                    Filter::Boost(Box::new(inner), 3.0)
                } else {
                    Filter::Not(Box::new(inner))
                }
            }
        }
    }

    fn sort(&mut self) -> Vec<SortKey> {
        let mut keys: Vec<SortKey> = (0..self.rng.below(4))
            .map(|_| {
                let field = *self.rng.pick(&["Name", "Age", "Tags", "Lines[].Qty", "Address.City", "Code", "Flag"]);
                let kind = *self.rng.pick(&[SortKind::String, SortKind::Long, SortKind::Double, SortKind::AlphaNumeric]);
                SortKey { field: field.into(), kind, descending: self.rng.chance(40) }
            })
            .collect();
        if !keys.is_empty() && self.rng.chance(50) {
            keys.push(SortKey { field: "Id".into(), kind: SortKind::String, descending: self.rng.chance(30) });
        }
        keys
    }
}

fn check(index: &DocumentIndex, docs: &[ModelDoc], filter: &Filter, sort: &[SortKey], skip: usize, take: usize) {
    let by_key: BTreeMap<&str, &ModelDoc> = docs.iter().map(|d| (d.key.as_str(), d)).collect();
    let expected: Vec<&ModelDoc> = docs.iter().filter(|d| d.matches(filter)).collect();
    let result = index.search(filter, sort, skip, take).unwrap_or_else(|e| panic!("{filter:?} {sort:?}: {e}"));
    let context = || format!("filter {filter:?}\nsort {sort:?}\nskip {skip} take {take}");
    assert_eq!(result.total, expected.len(), "total\n{}", context());
    let page_len = expected.len().saturating_sub(skip).min(take);
    assert_eq!(result.keys.len(), page_len, "page length\n{}", context());
    assert_eq!(result.scores.len(), page_len);
    let distinct: BTreeSet<&String> = result.keys.iter().collect();
    assert_eq!(distinct.len(), page_len, "duplicate keys\n{}", context());
    for key in &result.keys {
        let doc = by_key.get(key.as_str()).unwrap_or_else(|| panic!("unknown key {key}"));
        assert!(doc.matches(filter), "{key} does not match\n{}", context());
    }
    if sort.is_empty() {
        return;
    }
    let tuple = |d: &ModelDoc| sort.iter().map(|k| d.sort_value(k)).collect::<Vec<_>>();
    let mut expected: Vec<(Vec<SortValue>, &ModelDoc)> = expected.into_iter().map(|d| (tuple(d), d)).collect();
    expected.sort_by(|a, b| compare_tuples(&a.0, &b.0, sort));
    let expected_page: Vec<&(Vec<SortValue>, &ModelDoc)> = expected.iter().skip(skip).take(take).collect();
    for (n, (key, (expected_tuple, _))) in result.keys.iter().zip(&expected_page).enumerate() {
        let actual = tuple(by_key[key.as_str()]);
        assert_eq!(&actual, expected_tuple, "sort values at position {n} ({key})\n{}", context());
    }
    if sort.last().is_some_and(|k| k.field == "Id") {
        let expected_keys: Vec<&str> = expected_page.iter().map(|(_, d)| d.key.as_str()).collect();
        assert_eq!(result.keys, expected_keys, "keys\n{}", context());
    }
}

#[test]
fn random_queries_match_brute_force_over_segments() {
    random_queries_match_brute_force(4, 0x5EED_C0DE);
}

/// One segment: string sort keys stay term ordinals all the way.
#[test]
fn random_queries_match_brute_force_in_one_segment() {
    random_queries_match_brute_force(1, 0xFACE);
}

fn random_queries_match_brute_force(batches: u64, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let index = DocumentIndex::open_or_create(dir.path(), &spec()).unwrap();
    let mut rng = Rng(seed);
    let mut bodies: BTreeMap<String, Json> = BTreeMap::new();
    // Several commits (segments), then updates and deletes on top.
    let mut next_id = 0;
    for batch in 0..batches {
        let docs: Vec<MappedDocument> = (0..2000 / batches)
            .map(|_| {
                next_id += 1;
                let key = format!("docs/{next_id}");
                let body = random_doc(&mut rng, next_id);
                bodies.insert(key.clone(), body.clone());
                MappedDocument { key, body }
            })
            .collect();
        index.apply(&docs, &[], batch + 1).unwrap();
    }
    let mut updates = Vec::new();
    let mut deletes = Vec::new();
    for _ in 0..200 {
        let key = format!("docs/{}", 1 + rng.below(next_id as u64));
        if rng.chance(30) {
            bodies.remove(&key);
            deletes.push(key);
        } else {
            let body = random_doc(&mut rng, 10_000 + updates.len());
            bodies.insert(key.clone(), body.clone());
            updates.push(MappedDocument { key, body });
        }
    }
    // A key both updated and deleted in one batch ends up updated (deletes apply first).
    for update in &updates {
        if deletes.contains(&update.key) {
            bodies.insert(update.key.clone(), update.body.clone());
        }
    }
    if batches > 1 {
        index.apply(&updates, &deletes, 10).unwrap();
    } else {
        // Keep the single segment: the first batch goes in again with the changes folded in.
        let all: Vec<MappedDocument> = bodies.iter().map(|(k, b)| MappedDocument { key: k.clone(), body: b.clone() }).collect();
        let dir2 = tempfile::tempdir().unwrap();
        let fresh = DocumentIndex::open_or_create(dir2.path(), &spec()).unwrap();
        fresh.apply(&all, &[], 1).unwrap();
        return run_queries(&fresh, &bodies, seed);
    }
    run_queries(&index, &bodies, seed);
}

fn run_queries(index: &DocumentIndex, bodies: &BTreeMap<String, Json>, seed: u64) {
    assert_eq!(index.entries_count(), bodies.len() as u64);
    let docs: Vec<ModelDoc> = bodies.iter().map(|(k, b)| ModelDoc::new(k.clone(), b)).collect();
    let mut gen = Gen { rng: Rng(seed ^ 0xD1FF), docs: &docs };
    let mut non_empty = 0;
    for _ in 0..1500 {
        let filter = gen.filter(0);
        let sort = gen.sort();
        let skip = if gen.rng.chance(60) { 0 } else { gen.rng.below(300) as usize };
        let take = *gen.rng.pick(&[0, 1, 5, 30, 128, 5000]);
        check(index, &docs, &filter, &sort, skip, take);
        if docs.iter().any(|d| d.matches(&filter)) {
            non_empty += 1;
        }
    }
    // The generator must produce meaningful queries, not mostly empty ones.
    assert!(non_empty > 700, "only {non_empty} queries matched anything");
}

#[test]
fn natural_order_model_agrees_with_examples() {
    let mut words = vec!["a10", "a2", "a", "a02b", "b1", "10", "9", "a2a", "a-1"];
    words.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(words, vec!["9", "10", "a", "a-1", "a2", "a2a", "a02b", "a10", "b1"]);
}
