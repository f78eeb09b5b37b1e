//! The RQL corpus file (`corpus.rql`), read by the rql crate's round-trip test and the engine's plan
//! snapshots (through `#[path]`): one query a line, `\n`, `\t` and `\\` standing for a newline, a tab and a
//! backslash; lines starting with `#` and empty lines are not queries.

const CORPUS_FILE: &str = include_str!("../corpus.rql");

/// The queries of the corpus file, in file order.
pub fn corpus() -> Vec<String> {
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
