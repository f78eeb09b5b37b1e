//! Every query of the corpus (`corpus.rql`: the queries quoted in the RQL notes, section 1, including the
//! Python client's forms of section 1.16, and the C# client's forms) parses, and its canonical `Display` form
//! is stable: display(parse(display(parse(q)))) == display(parse(q)).

use corvid_rql::parse;

/// The corpus file: one query a line (`\n`, `\t` and `\\` stand for a newline, a tab and a backslash);
/// lines starting with `#` and empty lines are not queries.
const CORPUS_FILE: &str = include_str!("corpus.rql");

/// The queries of the corpus file.
fn corpus() -> Vec<String> {
    CORPUS_FILE.lines().filter(|line| !line.is_empty() && !line.starts_with('#')).map(unescape).collect()
}

/// A corpus line as the query it stands for.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            other => panic!("unknown escape \\{other:?} in corpus.rql: {line}"),
        }
    }
    out
}

#[test]
fn every_documented_query_parses_and_round_trips() {
    let corpus = corpus();
    assert!(!corpus.is_empty(), "corpus.rql holds no query");
    for q in &corpus {
        let parsed = parse(q).unwrap_or_else(|e| panic!("{q}\n  -> {e}"));
        let first = parsed.to_string();
        let reparsed = parse(&first).unwrap_or_else(|e| panic!("{q}\n  displayed as {first}\n  -> {e}"));
        assert_eq!(first, reparsed.to_string(), "display is not stable for {q}");
    }
}
