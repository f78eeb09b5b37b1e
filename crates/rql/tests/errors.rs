//! Bad queries: each error points at the offending text and says what was wrong.

use corvid_rql::{parse, ParseError, MAX_NESTING};

#[track_caller]
fn err(text: &str) -> ParseError {
    match parse(text) {
        Ok(q) => panic!("{text} parsed as {q}"),
        Err(e) => e,
    }
}

/// The error is at the first occurrence of `at` in `text` and its message contains `needle`.
#[track_caller]
fn assert_err(text: &str, at: &str, needle: &str) -> ParseError {
    let e = err(text);
    let pos = if at.is_empty() { text.len() } else { text.find(at).unwrap_or_else(|| panic!("{at} not in {text}")) };
    assert_eq!(e.position, pos, "{text}: {e}");
    assert!(e.message.contains(needle), "{text}: message {:?} lacks {needle:?}", e.message);
    assert!(e.to_string().ends_with(&format!("at line {}, column {}", e.line, e.column)));
    e
}

#[test]
fn missing_from() {
    let e = assert_err("select Name", "select", "but got 'select'");
    assert_eq!(e.expected, ["'declare'", "'from'"]);
    assert_eq!((e.line, e.column), (1, 1));
    assert_err("", "", "but got end of query");
    assert_err("where Name = 'x'", "where", "'from'");
}

#[test]
fn missing_collection() {
    let e = assert_err("from", "", "collection name");
    assert!(e.expected.contains(&"collection name".to_string()));
    assert_err("from 5", "5", "collection name");
}

#[test]
fn unexpected_word_lists_the_clauses() {
    let e = assert_err("from Users as u foo", "foo", "Expected 'group', 'where', 'order'");
    assert_eq!(e.to_string(), format!("{} at line 1, column 17", e.message));
    assert!(e.message.ends_with("but got 'foo'"));
    assert!(e.expected.contains(&"'select'".to_string()));
    assert!(e.expected.contains(&"end of query".to_string()));
}

#[test]
fn clause_order() {
    assert_err("from Users select Name where Age > 3", "where", "the 'where' clause must come before 'select'");
    assert_err("from Users select Name order by Name", "order", "the 'order' clause must come before 'select'");
    assert_err("from Users order by Name where Age > 3", "where", "the 'where' clause must come before 'order'");
    assert_err("from Users where Age > 3 group by Name", "group", "the 'group' clause must come before 'where'");
    assert_err("from Users limit 5 select Name", "select", "the 'select' clause must come before 'limit'");
    assert_err("from Users select Name load x as y", "load", "the 'load' clause must come before 'select'");
    assert_err("from Users select Name update { }", "update", "but got 'update'");
    assert_err("from Users update { } select Name", "select", "but got 'select'");
    assert_eq!(err("from Users where A = 1 from Users").position, 23);
}

#[test]
fn duplicate_clauses() {
    assert_err("from Users where A = 1 where B = 2", "where B", "only one 'where' clause");
    assert_err("from Users select A select B", "select B", "only one 'select' clause");
    assert_err("from Users include A limit 1 include B", "include B", "only one 'include' clause");
    assert_err("from Users limit 1 limit 2", "limit 2", "only one 'limit' clause");
    let e = assert_err(
        "declare function f(x) { return x; }\ndeclare function f(y) { return y; }\nfrom Users",
        "f(y)",
        "Function 'f' is declared more than once",
    );
    assert_eq!((e.line, e.column), (2, 18));
}

#[test]
fn unterminated_string() {
    let e = assert_err("from Users where Name = 'abc", "'abc", "Unterminated string");
    assert_eq!(e.column, 25);
    assert_err("from \"Users", "\"Users", "Unterminated string");
    assert_err("from Users where Name = 'a''", "'a''", "Unterminated string");
    assert_err("from Users where Name = 'a\\", "'a\\", "Unterminated string");
}

#[test]
fn bad_escape() {
    assert_err(r"from Users where Name = 'a\qb'", r"\q", r"Invalid escape sequence '\q'");
}

#[test]
fn unbalanced_parentheses() {
    let e = assert_err("from Users where (Name = 'a' or Age = 3", "", "but got end of query");
    assert!(e.expected.contains(&"')'".to_string()));
    assert_err("from Users where Name = 'a')", ")", "but got ')'");
    assert_err("from Users where search(Name, 'x'", "", "')'");
    assert_err("from Users where Tags in ('a', 'b'", "", "')'");
    assert_err("from Users where Tags in 'a'", "'a'", "'('");
    assert_err("from Users where ((A = 1)", "", "')'");
    assert_err("from Users where )", ")", "but got ')'");
}

#[test]
fn unterminated_blocks() {
    assert_err("from Users select { Name: u.Name", "{", "Unterminated object literal");
    assert_err("from Users update { this.x = '}'", "{", "Unterminated update script");
    assert_err("declare function f() { return 1; from Users", "{", "Unterminated function body");
    assert_err("from Users update this.x = 1", "this", "Expected '{'");
    assert_err("declare function f() return 1; from Users", "return", "Expected '{'");
    assert_err("from Users where /* open", "/*", "Unterminated comment");
}

#[test]
fn limit_needs_a_number() {
    let e = assert_err("from Users limit 'x'", "'x'", "non-negative integer or a parameter after 'limit' but got string 'x'");
    assert_eq!(e.expected, ["number", "parameter"]);
    assert_err("from Users limit -5", "-5", "non-negative integer");
    assert_err("from Users limit 2.5", "2.5", "non-negative integer");
    assert_err("from Users limit", "", "but got end of query");
    assert_err("from Users limit ten", "ten", "non-negative integer");
    assert_err("from Users offset x", "x", "after 'offset'");
    assert_err("from Users limit 5,", "", "after 'limit'");
    assert_err("from Users filter A = 1 filter_limit $", "$", "parameter name");
    assert_err("from Users limit 5, 10 offset 3", "offset", "'offset' cannot follow 'limit skip, take'");
}

#[test]
fn bad_where() {
    assert_err("from Users where", "", "Expected 'not', '(', 'true', field, method call");
    assert_err("from Users where Name", "", "'='");
    assert_err("from Users where Name = ", "", "Expected value, field");
    assert_err("from Users where Name = 'a' and", "", "field");
    let e = err("from Users where Name = 'a' or or");
    assert_eq!(e.position, 31);
    assert!(e.message.ends_with("but got 'or'"));
    assert_err("from Users where and = 1 and", "", "field");
    assert_err("from Users where Name = 'a' and and B = 1", "and B", "but got 'and'");
    assert_err("from Users where Age between 1", "", "Expected 'and'");
    assert_err("from Users where Age between 1 and", "", "value");
    assert_err("from Users where Age between A and 3", "A and", "value");
    assert_err("from Users where Tags all ('a')", "('a')", "'in'");
    assert_err("from Users where Tags in (A)", "A)", "value");
    assert_err("from Users where = 5", "=", "field");
    assert_err("from Users where 5 = Age", "5", "field");
    assert_err("from Users where Name = = 5", "= 5", "value");
}

#[test]
fn bad_paths() {
    assert_err("from Users where Lines[x].Name = 1", "x]", "non-negative integer index");
    assert_err("from Users where Lines[1.5].Name = 1", "1.5", "non-negative integer index");
    assert_err("from Users where Lines[-1].Name = 1", "-1", "non-negative integer index");
    assert_err("from Users where Lines[0.Name = 1", ".Name", "']'");
    assert_err("from Users where Address. = 1", "= 1", "field name");
    assert_err("from Users where 'a'.'b'(1)", "'a'", "not a valid method name");
    assert_err("from Users where Lines[](1)", "Lines", "not a valid method name");
}

#[test]
fn bad_order_by() {
    assert_err("from Users order by Name as int", "int", "Expected 'string', 'long', 'double', 'alphaNumeric' but got 'int'");
    assert_err("from Users order Name", "Name", "Expected 'by'");
    assert_err("from Users order by", "", "field");
    assert_err("from Users order by Name nulls middle", "middle", "'first', 'last'");
    assert_err("from Users order by Name,", "", "field");
}

#[test]
fn bad_group_load_select_include() {
    assert_err("from Users group Name", "Name", "Expected 'by'");
    assert_err("from Users load o.Company", "", "alias");
    assert_err("from Users load 5 as x", "5", "path");
    assert_err("from Users select", "", "field");
    assert_err("from Users select Name as", "", "alias");
    assert_err("from Users select Name,", "", "field");
    assert_err("from Users include", "", "field");
    assert_err("from Users include 5", "5", "field");
    assert_err("from Users as", "", "alias");
    assert_err("from Users as where", "where", "alias");
}

#[test]
fn bad_declare() {
    assert_err("declare f() { } from U", "f()", "'function'");
    assert_err("declare function (x) { } from U", "(x)", "function name");
    assert_err("declare function f(x y) { } from U", "y)", "')'");
    assert_err("declare function f(5) { } from U", "5", "parameter name");
}

#[test]
fn bad_from() {
    assert_err("from Users(Age > 5)", "(Age", "filtered 'from Collection(…)' is not supported");
    assert_err("from Users(Revisions = false)", "(Revisions", "only '(Revisions = true)'");
    let revisions = corvid_rql::parse("from Users (Revisions = true) as u where u.Current.Age > 5").unwrap();
    assert!(revisions.from.revisions);
    assert_eq!(revisions.from.alias.as_ref().map(|a| a.name.as_str()), Some("u"));
    assert!(revisions.to_string().starts_with("from 'Users' (Revisions = true) as u"), "{revisions}");
    assert_err("from index 5", "5", "index name");
}

#[test]
fn lexical_errors() {
    assert_err("from Users where # = 1", "#", "Unexpected character '#'");
    assert_err("from Users where Name = @", "@", "Invalid identifier");
    assert_err("from Users where @@x = 1", "@@x", "Invalid identifier");
    assert_err("from Users where Age > 99999999999999999999", "999", "too large");
    assert_err("from Users where Age > 1_000.5", "1_000.5", "'_' is allowed only in integers");
    assert_err("from Users where Age = $", "$", "parameter name");
}

#[test]
fn too_complex() {
    let depth = MAX_NESTING + 1;
    let text = format!("from U where {}A = 1{}", "(".repeat(depth), ")".repeat(depth));
    let e = err(&text);
    assert!(e.message.starts_with("Query is too complex"), "{e}");
    let text = format!("from U where {}x{}", "f(".repeat(depth), ")".repeat(depth));
    assert!(err(&text).message.starts_with("Query is too complex"));
    let text = format!("from U where {}A = 1", "not ".repeat(depth));
    assert!(err(&text).message.starts_with("Query is too complex"));
    // A long and/or chain builds a deep tree, so it counts too.
    let text = format!("from U where A = 0{}", " and A = 1".repeat(MAX_NESTING));
    assert!(err(&text).message.starts_with("Query is too complex"));
    let text = format!("from U where A = 0{}", " or A = 1".repeat(MAX_NESTING));
    assert!(err(&text).message.starts_with("Query is too complex"));
    let text = format!("from U where A = 0{}", " or A = 1".repeat(MAX_NESTING - 2));
    assert!(parse(&text).is_ok());
    // Deep input far beyond the limit fails fast instead of overflowing the stack.
    let text = format!("from U where {}", "(".repeat(100_000));
    assert!(err(&text).message.starts_with("Query is too complex"));
}

#[test]
fn line_and_column_on_multi_line_queries() {
    let e = err("from Users\nwhere Name = 'x'\n  and Age >");
    assert_eq!((e.line, e.column), (3, 12));
    assert_eq!(e.position, 39);
    let e = err("from Users\r\nwhere Näme = 'é' and # = 1");
    assert_eq!((e.line, e.column), (2, 22));
}

#[test]
fn shallow_queries_fit_a_small_stack() {
    // Queries below the deep-nesting threshold are parsed on the caller's stack; 24 levels of the most
    // expensive kind (nested calls, parentheses) must fit in 1 MB even in debug builds.
    for (open, mid, close) in [("f(", "x", ")"), ("(", "A = 1", ")"), ("boost(", "A = 1", ", 2)")] {
        let text = format!("from U where {}{mid}{}", open.repeat(24), close.repeat(24));
        let worker = std::thread::Builder::new().stack_size(1 << 20);
        let parsed = worker.spawn(move || parse(&text).is_ok()).unwrap().join().unwrap();
        assert!(parsed);
    }
}
