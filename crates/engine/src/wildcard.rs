//! `matches` / `exclude` patterns of document listing: `|`-separated, `*` any run, `?` any one character,
//! compared case-insensitively.

pub fn matches_any(patterns: &str, text: &str) -> bool {
    let text: Vec<char> = text.to_lowercase().chars().collect();
    patterns.split('|').filter(|p| !p.is_empty()).any(|p| {
        let pattern: Vec<char> = p.to_lowercase().chars().collect();
        glob(&pattern, &text)
    })
}

fn glob(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(matches_any("1*", "12"));
        assert!(matches_any("a?c|x", "ABC"));
        assert!(!matches_any("a?c", "abbc"));
        assert!(matches_any("*", ""));
        assert!(!matches_any("", "x"));
        assert!(matches_any("*0", "users/10"));
    }
}
