//! "Did you mean" (`select suggest(Name, $p0[, $options])`): candidates are the field's index terms, kept
//! when their similarity to a searched term reaches the accuracy, ordered by popularity (how many entries
//! hold the term) or by similarity, as RavenDB's suggestions are.

use corvid_index::DocumentIndex;
use serde_json::{json, Value};

use crate::EngineError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Distance {
    Levenshtein,
    JaroWinkler,
    NGram,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuggestOptions {
    pub page_size: usize,
    pub accuracy: f64,
    pub distance: Distance,
    pub by_popularity: bool,
}

impl Default for SuggestOptions {
    fn default() -> Self {
        SuggestOptions { page_size: 15, accuracy: 0.5, distance: Distance::Levenshtein, by_popularity: true }
    }
}

impl SuggestOptions {
    /// SuggestionOptions JSON; PascalCase (C#) and camelCase (Python) keys are both accepted.
    pub fn from_json(value: &Value) -> Result<SuggestOptions, EngineError> {
        let Value::Object(map) = value else {
            return Err(EngineError::InvalidQuery { message: format!("suggestion options must be an object, not {value}") });
        };
        let get = |key: &str| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v);
        let mut options = SuggestOptions::default();
        if let Some(n) = get("PageSize").and_then(Value::as_u64) {
            options.page_size = n as usize;
        }
        if let Some(a) = get("Accuracy").and_then(Value::as_f64) {
            options.accuracy = a;
        }
        if let Some(d) = get("Distance").and_then(Value::as_str) {
            options.distance = match d.to_ascii_lowercase().as_str() {
                "levenshtein" | "default" | "none" => Distance::Levenshtein,
                "jarowinkler" => Distance::JaroWinkler,
                "ngram" => Distance::NGram,
                other => return Err(EngineError::InvalidQuery { message: format!("unknown suggestion distance '{other}'") }),
            };
        }
        if let Some(s) = get("SortMode").and_then(Value::as_str) {
            options.by_popularity = s.eq_ignore_ascii_case("Popularity");
        }
        Ok(options)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SuggestPlan {
    pub name: String,
    pub field: String,
    pub terms: Vec<String>,
    pub options: SuggestOptions,
}

/// 1 - edit distance / longer length (Lucene's LevensteinDistance).
fn levenshtein(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            current[j + 1] = (previous[j + 1] + 1).min(current[j] + 1).min(previous[j] + cost);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    1.0 - previous[b.len()] as f64 / a.len().max(b.len()) as f64
}

fn jaro_winkler(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if a == b { 1.0 } else { 0.0 };
    }
    let window = (a.len().max(b.len()) / 2).saturating_sub(1);
    let mut a_matched = vec![false; a.len()];
    let mut b_matched = vec![false; b.len()];
    let mut matches = 0usize;
    for (i, ca) in a.iter().enumerate() {
        let from = i.saturating_sub(window);
        let to = (i + window + 1).min(b.len());
        for j in from..to {
            if !b_matched[j] && b[j] == *ca {
                a_matched[i] = true;
                b_matched[j] = true;
                matches += 1;
                break;
            }
        }
    }
    if matches == 0 {
        return 0.0;
    }
    let a_seq: Vec<char> = a.iter().zip(&a_matched).filter(|(_, m)| **m).map(|(c, _)| *c).collect();
    let b_seq: Vec<char> = b.iter().zip(&b_matched).filter(|(_, m)| **m).map(|(c, _)| *c).collect();
    let transpositions = a_seq.iter().zip(&b_seq).filter(|(x, y)| x != y).count() / 2;
    let m = matches as f64;
    let jaro = (m / a.len() as f64 + m / b.len() as f64 + (m - transpositions as f64) / m) / 3.0;
    let prefix = a.iter().zip(b).take(4).take_while(|(x, y)| x == y).count() as f64;
    if jaro > 0.7 {
        jaro + prefix * 0.1 * (1.0 - jaro)
    } else {
        jaro
    }
}

/// Dice coefficient of the character bigrams (with word-boundary padding).
fn ngram(a: &[char], b: &[char]) -> f64 {
    let grams = |s: &[char]| -> Vec<(char, char)> {
        let mut padded = vec!['\u{0}'];
        padded.extend_from_slice(s);
        padded.push('\u{0}');
        padded.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let (ga, mut gb) = (grams(a), grams(b));
    let total = ga.len() + gb.len();
    let mut shared = 0;
    for g in &ga {
        if let Some(p) = gb.iter().position(|x| x == g) {
            gb.swap_remove(p);
            shared += 1;
        }
    }
    2.0 * shared as f64 / total as f64
}

pub(crate) fn similarity(distance: Distance, a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    match distance {
        Distance::Levenshtein => levenshtein(&a, &b),
        Distance::JaroWinkler => jaro_winkler(&a, &b),
        Distance::NGram => ngram(&a, &b),
    }
}

/// The n-gram sizes a word of `length` characters is looked up by (Lucene's spell checker: short words
/// by single letters and pairs, long ones by 3- and 4-grams).
fn gram_sizes(length: usize) -> std::ops::RangeInclusive<usize> {
    match length {
        0..=4 => 1..=2,
        5 => 2..=3,
        _ => 3..=4,
    }
}

fn grams(word: &[char], sizes: std::ops::RangeInclusive<usize>) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for n in sizes {
        for window in word.windows(n) {
            out.insert(window.iter().collect());
        }
    }
    out
}

/// One `suggest()` result JSON.
pub(crate) fn run_suggest(index: &DocumentIndex, plan: &SuggestPlan) -> Result<Value, EngineError> {
    let terms = index.field_terms(&plan.field)?;
    let mut candidates: Vec<(String, u64, f64)> = Vec::new();
    for searched in &plan.terms {
        let searched = searched.to_lowercase();
        let chars: Vec<char> = searched.chars().collect();
        let sizes = gram_sizes(chars.len());
        let wanted = grams(&chars, sizes.clone());
        for (term, frequency) in &terms {
            if *term == searched {
                continue;
            }
            // Only terms sharing an n-gram with the searched word are candidates, as in Lucene's spell
            // checker, whose index holds each term's n-grams of the sizes for the term's own length: a term is
            // found through the sizes both lengths use ("oern" does not find "john steinbeck", whose 3- and
            // 4-grams the single letters and pairs of a 4-letter word never meet). The similarity then decides.
            let term_chars: Vec<char> = term.chars().collect();
            let term_sizes = gram_sizes(term_chars.len());
            let shared = *sizes.start().max(term_sizes.start())..=*sizes.end().min(term_sizes.end());
            if shared.is_empty() || !grams(&term_chars, shared).iter().any(|g| wanted.contains(g)) {
                continue;
            }
            let score = similarity(plan.options.distance, &searched, term);
            if score >= plan.options.accuracy {
                match candidates.iter_mut().find(|c| c.0 == *term) {
                    Some(existing) => existing.2 = existing.2.max(score),
                    None => candidates.push((term.clone(), *frequency, score)),
                }
            }
        }
    }
    if plan.options.by_popularity {
        candidates.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then_with(|| a.0.cmp(&b.0)));
    } else {
        candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    }
    let suggestions: Vec<String> = candidates.into_iter().take(plan.options.page_size).map(|c| c.0).collect();
    Ok(json!({"Name": plan.name, "Suggestions": suggestions}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarities() {
        assert_eq!(similarity(Distance::Levenshtein, "john", "jon"), 0.75);
        assert_eq!(similarity(Distance::Levenshtein, "abc", "abc"), 1.0);
        let jw = similarity(Distance::JaroWinkler, "martha", "marhta");
        assert!((jw - 0.961).abs() < 0.01, "{jw}");
        assert!(similarity(Distance::NGram, "night", "nacht") < similarity(Distance::NGram, "night", "nights"));
    }

    #[test]
    fn options_accept_both_casings() {
        let o = SuggestOptions::from_json(&json!({"pageSize": 3, "accuracy": 0.4, "distance": "JaroWinkler", "sortMode": "None"})).unwrap();
        assert_eq!(o, SuggestOptions { page_size: 3, accuracy: 0.4, distance: Distance::JaroWinkler, by_popularity: false });
    }
}
