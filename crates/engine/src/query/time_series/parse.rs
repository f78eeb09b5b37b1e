//! Parsing a time-series sub-query into a [`TimeSeriesQuery`], with the query's parameters resolved:
//! `from <series> [between A and B] [where ...] [group by <span>] [select <aggregations>] [scale x]`.
//! The series is a name, a quoted name, or either after the alias of the queried document or a parameter
//! of the declaring function (`p.HeartRate`, `u."gas m3 usage"`).

use serde_json::Value as Json;

use super::bucket::Bucket;
use super::error::invalid;
use super::lexer::{tokenize, Token};
use crate::EngineError;

/// Aggregations of `select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aggregation {
    Min,
    Max,
    Average,
    Sum,
    First,
    Last,
    Count,
}

impl Aggregation {
    fn named(name: &str) -> Option<Aggregation> {
        Some(match name.to_ascii_lowercase().as_str() {
            "min" => Aggregation::Min,
            "max" => Aggregation::Max,
            "avg" | "average" | "mean" => Aggregation::Average,
            "sum" => Aggregation::Sum,
            "first" => Aggregation::First,
            "last" => Aggregation::Last,
            "count" => Aggregation::Count,
            _ => return None,
        })
    }

    /// The field of `TimeSeriesRangeAggregation` it fills.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Aggregation::Min => "Min",
            Aggregation::Max => "Max",
            Aggregation::Average => "Average",
            Aggregation::Sum => "Sum",
            Aggregation::First => "First",
            Aggregation::Last => "Last",
            Aggregation::Count => "Count",
        }
    }
}

/// What a `where` compares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Tag,
    /// `Value` (the first) or `Values[i]`.
    Value(usize),
    Timestamp,
    Literal(Json),
    /// `alias.Path` after `load Tag as alias`: a field of the document whose id is the entry's tag.
    Loaded(Vec<String>),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// A `where` condition on entries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    Compare(Operand, Comparison, Operand),
    In(Operand, Vec<Json>),
}

/// A parsed time-series sub-query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeSeriesQuery {
    /// The series of the queried document.
    pub series: String,
    /// First timestamp (unix milliseconds), or from the beginning.
    pub from: Option<i64>,
    /// Last timestamp, or to the end.
    pub to: Option<i64>,
    pub filter: Option<Filter>,
    pub group_by: Option<Bucket>,
    /// Empty: raw entries (unless grouped, then every aggregation).
    pub aggregations: Vec<Aggregation>,
    pub scale: Option<f64>,
    /// `load Tag as alias`: the alias naming each entry's tag document in `where`.
    pub tag_document: Option<String>,
    /// `offset '02:00'`: milliseconds added to every timestamp of the results (local time), buckets included.
    pub offset_ms: i64,
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    text: &'a str,
    /// Names that stand for the queried document before a series name.
    document_aliases: &'a [String],
    parameters: &'a dyn Fn(&str) -> Option<Json>,
    /// The alias of `load Tag as alias`, once read.
    tag_document: Option<String>,
}

fn is_keyword(token: Option<&Token>, keyword: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.eq_ignore_ascii_case(keyword))
}

const CLAUSES: [&str; 8] = ["between", "where", "group", "select", "scale", "offset", "load", "with"];

impl Parser<'_> {
    fn error(&self, what: &str) -> EngineError {
        invalid(format!("{what} in the time-series query '{}'", self.text.trim()))
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        if is_keyword(self.peek(), keyword) {
            self.at += 1;
            return true;
        }
        false
    }

    fn eat_symbol(&mut self, symbol: &str) -> bool {
        if matches!(self.peek(), Some(Token::Symbol(s)) if *s == symbol) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expect_symbol(&mut self, symbol: &str) -> Result<(), EngineError> {
        if self.eat_symbol(symbol) {
            Ok(())
        } else {
            Err(self.error(&format!("Expected '{symbol}'")))
        }
    }

    fn series(&mut self) -> Result<String, EngineError> {
        let first = match self.next() {
            Some(Token::Word(w)) | Some(Token::Text(w)) => w,
            _ => return Err(self.error("Expected a series name after 'from'")),
        };
        if !self.eat_symbol(".") {
            return Ok(first);
        }
        if !self.document_aliases.iter().any(|a| a == &first) {
            return Err(
                self.error(&format!("'{first}' is not the queried document (time series of other documents are not supported yet)"))
            );
        }
        match self.next() {
            Some(Token::Word(w)) | Some(Token::Text(w)) => Ok(w),
            _ => Err(self.error("Expected a series name after the alias")),
        }
    }

    fn value(&mut self) -> Result<Json, EngineError> {
        match self.next() {
            Some(Token::Text(s)) => Ok(Json::String(s)),
            Some(Token::Number(n)) => {
                n.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Json::Number).ok_or_else(|| self.error("A bad number"))
            }
            Some(Token::Parameter(p)) => {
                (self.parameters)(&p).ok_or_else(|| self.error(&format!("Query parameter '{p}' was not provided")))
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("null") => Ok(Json::Null),
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") => {
                Ok(Json::Bool(w.eq_ignore_ascii_case("true")))
            }
            _ => Err(self.error("Expected a value")),
        }
    }

    fn date(&mut self) -> Result<i64, EngineError> {
        match self.value()? {
            Json::String(text) => corvid_types::parse_date_ms(&text).ok_or_else(|| self.error(&format!("'{text}' is not a date"))),
            other => Err(self.error(&format!("{other} is not a date"))),
        }
    }

    fn operand(&mut self) -> Result<Operand, EngineError> {
        let alias = self.tag_document.clone();
        if let (Some(Token::Word(w)), Some(alias)) = (self.peek(), alias) {
            if *w == alias {
                self.at += 1;
                let mut path = Vec::new();
                while self.eat_symbol(".") {
                    match self.next() {
                        Some(Token::Word(field)) | Some(Token::Text(field)) => path.push(field),
                        _ => return Err(self.error(&format!("Expected a field name after '{alias}.'"))),
                    }
                }
                if path.is_empty() {
                    return Err(self.error(&format!("Expected '{alias}.Field': compare a field of the tag's document")));
                }
                return Ok(Operand::Loaded(path));
            }
        }
        match self.peek() {
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("tag") => {
                self.at += 1;
                Ok(Operand::Tag)
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("timestamp") => {
                self.at += 1;
                Ok(Operand::Timestamp)
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("value") => {
                self.at += 1;
                Ok(Operand::Value(0))
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("values") => {
                self.at += 1;
                self.expect_symbol("[")?;
                let index = match self.next() {
                    Some(Token::Number(n)) => n.parse::<usize>().map_err(|_| self.error("Expected a value index"))?,
                    _ => return Err(self.error("Expected a value index")),
                };
                self.expect_symbol("]")?;
                Ok(Operand::Value(index))
            }
            _ => Ok(Operand::Literal(self.value()?)),
        }
    }

    fn comparison(&mut self) -> Result<Filter, EngineError> {
        if self.eat_keyword("not") {
            return Ok(Filter::Not(Box::new(self.comparison()?)));
        }
        if self.eat_symbol("(") {
            let inner = self.condition()?;
            self.expect_symbol(")")?;
            return Ok(inner);
        }
        let left = self.operand()?;
        if self.eat_keyword("in") {
            self.expect_symbol("(")?;
            let mut values = vec![self.value()?];
            while self.eat_symbol(",") {
                values.push(self.value()?);
            }
            self.expect_symbol(")")?;
            return Ok(Filter::In(left, values));
        }
        let op = match self.next() {
            Some(Token::Symbol("=" | "==")) => Comparison::Equal,
            Some(Token::Symbol("!=")) => Comparison::NotEqual,
            Some(Token::Symbol("<")) => Comparison::Less,
            Some(Token::Symbol("<=")) => Comparison::LessOrEqual,
            Some(Token::Symbol(">")) => Comparison::Greater,
            Some(Token::Symbol(">=")) => Comparison::GreaterOrEqual,
            _ => return Err(self.error("Expected a comparison")),
        };
        let right = self.operand()?;
        Ok(Filter::Compare(left, op, right))
    }

    fn conjunction(&mut self) -> Result<Filter, EngineError> {
        let mut left = self.comparison()?;
        while self.eat_keyword("and") {
            left = Filter::And(Box::new(left), Box::new(self.comparison()?));
        }
        Ok(left)
    }

    fn condition(&mut self) -> Result<Filter, EngineError> {
        let mut left = self.conjunction()?;
        while self.eat_keyword("or") {
            left = Filter::Or(Box::new(left), Box::new(self.conjunction()?));
        }
        Ok(left)
    }

    fn group_by(&mut self) -> Result<Bucket, EngineError> {
        if !self.eat_keyword("by") {
            return Err(self.error("Expected 'by' after 'group'"));
        }
        // `1h`, `'1 hour'`, `1 hour`: everything up to the next clause.
        let mut text = String::new();
        while let Some(token) = self.peek() {
            if CLAUSES.iter().any(|c| is_keyword(Some(token), c)) {
                break;
            }
            match self.next() {
                Some(Token::Text(t)) | Some(Token::Word(t)) | Some(Token::Number(t)) => {
                    text.push_str(&t);
                    text.push(' ');
                }
                _ => return Err(self.error("Only a time span can follow 'group by' (grouping by tag is not supported yet)")),
            }
        }
        Bucket::parse(&text)
    }

    fn select(&mut self) -> Result<Vec<Aggregation>, EngineError> {
        let mut out = Vec::new();
        loop {
            let name = match self.next() {
                Some(Token::Word(w)) => w,
                _ => return Err(self.error("Expected an aggregation after 'select'")),
            };
            let aggregation = Aggregation::named(&name).ok_or_else(|| self.error(&format!("Unknown aggregation '{name}()'")))?;
            self.expect_symbol("(")?;
            self.expect_symbol(")")?;
            if !out.contains(&aggregation) {
                out.push(aggregation);
            }
            if !self.eat_symbol(",") {
                return Ok(out);
            }
        }
    }

    fn query(&mut self) -> Result<TimeSeriesQuery, EngineError> {
        if !self.eat_keyword("from") {
            return Err(self.error("Expected 'from'"));
        }
        let series = self.series()?;
        let mut query = TimeSeriesQuery {
            series,
            from: None,
            to: None,
            filter: None,
            group_by: None,
            aggregations: Vec::new(),
            scale: None,
            tag_document: None,
            offset_ms: 0,
        };
        if self.eat_keyword("between") {
            query.from = Some(self.date()?);
            if !self.eat_keyword("and") {
                return Err(self.error("Expected 'and' in 'between'"));
            }
            query.to = Some(self.date()?);
        }
        if self.eat_keyword("load") {
            let tag = matches!(self.next(), Some(Token::Word(w)) if w.eq_ignore_ascii_case("tag"));
            let alias = match (tag, self.eat_keyword("as"), self.next()) {
                (true, true, Some(Token::Word(alias))) => alias,
                _ => return Err(self.error("Expected 'load Tag as alias'")),
            };
            self.tag_document = Some(alias.clone());
            query.tag_document = Some(alias);
        }
        if self.eat_keyword("where") {
            query.filter = Some(self.condition()?);
        }
        if self.eat_keyword("group") {
            query.group_by = Some(self.group_by()?);
        }
        if self.eat_keyword("select") {
            query.aggregations = self.select()?;
        }
        if self.eat_keyword("scale") {
            query.scale = match self.value()? {
                Json::Number(n) => n.as_f64(),
                _ => return Err(self.error("Expected a number after 'scale'")),
            };
        }
        if self.eat_keyword("offset") {
            query.offset_ms = match self.value()? {
                Json::String(text) => {
                    parse_offset(&text).ok_or_else(|| self.error(&format!("'{text}' is not an offset: write 'HH:mm' or '-HH:mm'")))?
                }
                _ => return Err(self.error("Expected a time span such as '02:00' after 'offset'")),
            };
        }
        match self.peek() {
            None => Ok(query),
            Some(token) => {
                let what = match token {
                    Token::Word(w) => w.clone(),
                    other => format!("{other:?}"),
                };
                Err(self.error(&format!("'{what}' is not supported here yet")))
            }
        }
    }
}

/// A time zone offset, `[+|-]HH:mm[:ss]` (a .NET TimeSpan as the clients write it), in milliseconds.
fn parse_offset(text: &str) -> Option<i64> {
    let (sign, rest) = match text.trim().strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.trim().trim_start_matches('+')),
    };
    // Unsigned parts: the sign is the whole offset's, never a part's.
    let parts: Vec<i64> = rest.split(':').map(|p| p.parse::<u32>().ok().map(i64::from)).collect::<Option<_>>()?;
    let (hours, minutes, seconds) = match parts[..] {
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return None,
    };
    if hours > 14 || minutes >= 60 || seconds >= 60 {
        return None;
    }
    Some(sign * ((hours * 60 + minutes) * 60 + seconds) * 1000)
}

/// Parses the body of `timeseries(...)` or of a `declare timeseries` function (its parentheses or braces
/// included), resolving `$parameters` with `parameters`.
pub(crate) fn parse(
    raw: &str,
    document_aliases: &[String],
    parameters: &dyn Fn(&str) -> Option<Json>,
) -> Result<TimeSeriesQuery, EngineError> {
    let trimmed = raw.trim();
    let inner = match (trimmed.chars().next(), trimmed.chars().last()) {
        (Some('('), Some(')')) | (Some('{'), Some('}')) => &trimmed[1..trimmed.len() - 1],
        _ => trimmed,
    };
    let tokens = tokenize(inner)?;
    Parser { tokens, at: 0, text: inner, document_aliases, parameters, tag_document: None }.query()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_parameters(_: &str) -> Option<Json> {
        None
    }

    #[test]
    fn parses_an_aggregation() {
        let start = |name: &str| (name == "start").then(|| Json::String("2023-08-20T21:00:00.0000000".into()));
        let query = parse(
            "{ from p.heartRate between $start and '2023-08-21T21:00:00Z' where Tag = 'watches/fitbit' or Values[1] > 3 group by 1h select min(), max(), avg() }",
            &["p".to_owned()],
            &start,
        )
        .unwrap();
        assert_eq!(query.series, "heartRate");
        assert_eq!(query.from, Some(1_692_565_200_000));
        assert_eq!(query.group_by, Some(Bucket::Fixed(3_600_000)));
        assert_eq!(query.aggregations, vec![Aggregation::Min, Aggregation::Max, Aggregation::Average]);
        assert!(matches!(query.filter, Some(Filter::Or(..))));
    }

    #[test]
    fn parses_quoted_names_and_month_groups() {
        let query = parse("(from \"gas m3 usage\" group by '1 month')", &[], &no_parameters).unwrap();
        assert_eq!(query.series, "gas m3 usage");
        assert_eq!(query.group_by, Some(Bucket::Months(1)));
        assert!(query.aggregations.is_empty());
    }

    #[test]
    fn compares_fields_of_the_tag_document() {
        let query = parse("from HR load Tag as src where src.Accuracy.Level >= 2", &[], &no_parameters).unwrap();
        assert_eq!(query.tag_document.as_deref(), Some("src"));
        let Some(Filter::Compare(Operand::Loaded(path), Comparison::GreaterOrEqual, _)) = query.filter else { panic!() };
        assert_eq!(path, ["Accuracy", "Level"]);
    }

    #[test]
    fn offsets_are_time_spans() {
        let query = parse("from HR group by 1h offset '02:00'", &[], &no_parameters).unwrap();
        assert_eq!(query.offset_ms, 7_200_000);
        assert_eq!(parse_offset("-05:30"), Some(-19_800_000));
        assert_eq!(parse_offset("+01:00:30"), Some(3_630_000));
        assert!(parse("from HR offset 'soon'", &[], &no_parameters).is_err());
        assert!(parse("from HR offset '25:00'", &[], &no_parameters).is_err());
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert!(parse("from HR load Value as t", &[], &no_parameters).is_err());
        assert!(parse("from HR load Tag as t where t > 1", &[], &no_parameters).is_err());
        assert!(parse("from other.HR", &["p".to_owned()], &no_parameters).is_err());
        assert!(parse("from HR between $missing and $missing", &[], &no_parameters).is_err());
        assert!(parse("from HR select median()", &[], &no_parameters).is_err());
    }
}
