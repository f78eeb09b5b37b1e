//! Every query of the corpus (`corpus.rql`: the queries quoted in the RQL notes, section 1, including the
//! Python client's forms of section 1.16, and the C# client's forms) parses, and its canonical `Display` form
//! is stable: display(parse(display(parse(q)))) == display(parse(q)).

use corvid_rql::parse;

#[path = "support/corpus_file.rs"]
mod corpus_file;

use corpus_file::corpus;

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
