//! Highlighting (`include highlight(Field, fragmentLength, fragmentCount[, $options])`): fragments of the
//! field's text around the words a `search()` on that field matched, with each word wrapped in tags (one
//! colour per searched term, as RavenDB does).

use serde_json::Value;

/// RavenDB's default tags: a different background per searched term.
const COLOURS: [&str; 10] = ["yellow", "lawngreen", "aquamarine", "magenta", "palegreen", "coral", "wheat", "khaki", "lime", "deepskyblue"];

#[derive(Debug, Clone)]
pub(crate) struct HighlightPlan {
    pub field: String,
    pub fragment_length: usize,
    pub fragment_count: usize,
    /// Fragments are keyed by this field's value instead of the document id.
    pub group_key: Option<String>,
    pub pre_tags: Vec<String>,
    pub post_tags: Vec<String>,
    /// Lower-cased words (a trailing `*` matches as a prefix) searched in the field.
    pub terms: Vec<String>,
}

impl HighlightPlan {
    fn tags(&self, term: usize) -> (String, String) {
        let pre = if self.pre_tags.is_empty() {
            format!("<b style=\"background:{}\">", COLOURS[term % COLOURS.len()])
        } else {
            self.pre_tags[term % self.pre_tags.len()].clone()
        };
        let post = if self.post_tags.is_empty() { "</b>".to_owned() } else { self.post_tags[term % self.post_tags.len()].clone() };
        (pre, post)
    }

    /// Which searched term a word matches.
    fn term_of(&self, word: &str) -> Option<usize> {
        let word = word.to_lowercase();
        self.terms.iter().position(|t| match t.strip_suffix('*') {
            Some(prefix) => word.starts_with(prefix),
            None => *t == word,
        })
    }

    /// Fragments of `text` around matched words, at most `fragment_count`.
    pub fn fragments(&self, text: &str) -> Vec<String> {
        // (start, end, term) of every matched word, in byte offsets.
        let mut matches = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
            if c.is_alphanumeric() {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                if let Some(term) = self.term_of(&text[s..i]) {
                    matches.push((s, i, term));
                }
            }
        }
        let mut out = Vec::new();
        let mut next = 0;
        while next < matches.len() && out.len() < self.fragment_count {
            let (first_start, first_end, _) = matches[next];
            let slack = self.fragment_length.saturating_sub(first_end - first_start) / 2;
            let mut from = first_start.saturating_sub(slack);
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            // Start at a word boundary.
            if from > 0 {
                if let Some(space) = text[from..first_start].find(char::is_whitespace) {
                    from += space + 1;
                }
            }
            let mut to = (from + self.fragment_length).max(first_end).min(text.len());
            while !text.is_char_boundary(to) {
                to += 1;
            }
            let mut fragment = String::new();
            let mut at = from;
            while next < matches.len() && matches[next].1 <= to {
                let (s, e, term) = matches[next];
                let (pre, post) = self.tags(term);
                fragment.push_str(&text[at..s]);
                fragment.push_str(&pre);
                fragment.push_str(&text[s..e]);
                fragment.push_str(&post);
                at = e;
                next += 1;
            }
            fragment.push_str(&text[at..to]);
            out.push(fragment.trim().to_owned());
        }
        out
    }
}

/// The text values of a field (strings, and strings inside arrays).
pub(crate) fn texts(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(texts).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(terms: &[&str], length: usize, count: usize) -> HighlightPlan {
        HighlightPlan {
            field: "Body".into(),
            fragment_length: length,
            fragment_count: count,
            group_key: None,
            pre_tags: vec!["[".into()],
            post_tags: vec!["]".into()],
            terms: terms.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn wraps_matches_in_fragments() {
        let text = "The quick brown fox jumps over the lazy dog. Later the fox sleeps.";
        let one = plan(&["fox"], 20, 1).fragments(text);
        assert_eq!(one.len(), 1);
        assert!(one[0].contains("[fox]") && one[0].len() <= 20 + 2, "{one:?}");
        let two = plan(&["fox", "dog"], 30, 5).fragments(text);
        assert_eq!(two.len(), 2, "{two:?}");
        assert!(two[0].contains("[fox]") && two[0].contains("[dog]") || two[1].contains("[dog]"));
        assert_eq!(plan(&["sleep*"], 18, 1).fragments(text), vec!["fox [sleeps]."]);
        assert!(plan(&["cat"], 20, 1).fragments(text).is_empty());
    }

    #[test]
    fn default_tags_colour_each_term() {
        let mut p = plan(&["a", "b"], 10, 1);
        p.pre_tags.clear();
        p.post_tags.clear();
        assert_eq!(p.tags(1).0, "<b style=\"background:lawngreen\">");
    }
}
