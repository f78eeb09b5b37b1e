//! The parser never panics, stops quickly on any input, and reports positions inside the text; whatever it
//! accepts prints back as RQL that it accepts again with the same canonical form.

use std::time::{Duration, Instant};

use corvid_rql::parse;
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "from",
    "index",
    "as",
    "where",
    "and",
    "or",
    "not",
    "between",
    "in",
    "all",
    "group",
    "by",
    "order",
    "asc",
    "desc",
    "long",
    "double",
    "alphaNumeric",
    "string",
    "load",
    "filter",
    "filter_limit",
    "select",
    "distinct",
    "include",
    "limit",
    "offset",
    "update",
    "declare",
    "function",
    "timeseries",
    "true",
    "false",
    "null",
    "nulls",
    "first",
    "last",
    "@all_docs",
    "Users",
    "u",
    "Name",
    "Age",
    "Lines",
    "search",
    "boost",
    "exists",
    "startsWith",
    "exact",
    "id",
    "count",
    "key",
    "sum",
    "facet",
    "suggest",
    "spatial",
    "within",
    "circle",
    "counters",
    "highlight",
    "$p0",
    "$p1",
    "0",
    "1",
    "-2",
    "3.5",
    "10_000",
    "'str'",
    "\"dq\"",
    "'it''s'",
    "'a\\nb'",
    "=",
    "==",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "(",
    ")",
    "[",
    "]",
    "[]",
    "{",
    "}",
    ",",
    ".",
    "*",
    "//c\n",
    "/*c*/",
    "'",
    "\"",
    "$",
    "@",
    "#",
    "-",
    "{ x: 1 }",
    "{ return '}'; }",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(WORDS), prop::sample::select(&[" ", "", "\n"][..])), 0..40)
        .prop_map(|parts| parts.into_iter().flat_map(|(w, sep)| [w, sep]).collect())
}

/// Query-shaped soups: a valid prefix followed by random tokens, so that later clauses get exercised.
fn shaped() -> impl Strategy<Value = String> {
    let prefixes =
        prop::sample::select(&["from Users ", "from index 'I' as u ", "from Users where ", "from Users select ", "from U order by "][..]);
    (prefixes, soup()).prop_map(|(p, s)| format!("{p}{s}"))
}

#[track_caller]
fn check(text: &str) {
    let start = Instant::now();
    let result = parse(text);
    assert!(start.elapsed() < Duration::from_secs(1), "slow parse of {text:?}");
    match result {
        Err(e) => {
            assert!(e.position <= text.len(), "{text:?}: {e}");
            assert!(e.line >= 1 && e.column >= 1);
            assert!(!e.message.is_empty());
        }
        Ok(q) => {
            let shown = q.to_string();
            let again = parse(&shown).unwrap_or_else(|e| panic!("{text:?} printed as {shown:?} which fails: {e}"));
            assert_eq!(again.to_string(), shown, "unstable display for {text:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        check(&text);
    }

    #[test]
    fn ascii_strings(text in "[ -~\\n]{0,80}") {
        check(&text);
    }

    #[test]
    fn token_soups(text in soup()) {
        check(&text);
    }

    #[test]
    fn shaped_soups(text in shaped()) {
        check(&text);
    }

    #[test]
    fn mutated_corpus(index in 0usize..CORPUS.len(), cut in 0usize..200, insert in prop::sample::select(WORDS)) {
        let base = CORPUS[index];
        let mut at = cut.min(base.len());
        while !base.is_char_boundary(at) {
            at -= 1;
        }
        check(&base[..at]);
        check(&format!("{}{insert}{}", &base[..at], &base[at..]));
        check(&format!("{}{}", &base[..at], &base[(at + 1).min(base.len())..]));
    }
}

const CORPUS: &[&str] = &[
    "from 'Users' where Name = $p0 and Age > $p1 order by Age as long desc select Name include Company limit $p2, $p3",
    "from index 'Users/ByName' as u where search(u.Name, $p0, and) or boost(exists(Age), 2) and not Tags all in ($p1)",
    "declare function f(x) { return { N: x.Name }; } from Employees as e load e.Manager as m select f(e), m.Name as 'Boss'",
    "from Orders group by Company, array(Lines[].Product) where count() > 5 order by count() as long desc select key() as K, count()",
    "from U where spatial.within(spatial.point(a.lat, a.lng), spatial.circle($p0, $p1, $p2, 'Miles')) order by spatial.distance(C, spatial.point(1.5, -2.5))",
    "from Cameras select facet(Price < $p0, Price between 1 and 2, Price >= $p3), suggest(Name, 'x') as S",
    "from Users as u where u.'@metadata'.'@id' in ('a', 'b') update { this.x = \"}\"; } limit 1 offset 2",
    "from Users filter Age > 3 select distinct * include counters(u, 'Likes'), timings() limit 10 filter_limit 100",
];

#[test]
fn deep_and_long_inputs_stay_fast() {
    let cases = [
        format!("from U where {}", "(".repeat(200_000)),
        format!("from U where {}", "not ".repeat(50_000)),
        format!("from U where {}", "f(".repeat(100_000)),
        format!("from U where A = 1{}", " and B = 2".repeat(20_000)),
        format!("from U select {{ {}", "{".repeat(100_000)),
        format!("from U where x in ({})", "1, ".repeat(50_000)),
        "'".repeat(100_000),
        "/*".repeat(100_000),
    ];
    for text in &cases {
        let start = Instant::now();
        let _ = parse(text);
        assert!(start.elapsed() < Duration::from_secs(2), "slow on input starting {:?}", &text[..40.min(text.len())]);
    }
}
