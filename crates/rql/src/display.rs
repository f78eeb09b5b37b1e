//! `Display` of the syntax tree: canonical RQL that parses to the same tree (names quoted where they would
//! be misread, strings with escapes).

use std::fmt::{self, Display, Formatter, Write};

use crate::ast::*;
use crate::keywords::is_reserved_word;

fn write_quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\'")?,
            '\\' => f.write_str("\\\\")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

fn is_plain_ident(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_alphabetic() || first == '_' || (first == '@' && !s[1..].starts_with('@') && s.len() > 1))
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && !(first == '_' && s.contains('@'))
}

fn write_name(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    if is_plain_ident(s) && !is_reserved_word(s) {
        f.write_str(s)
    } else {
        write_quoted(f, s)
    }
}

fn write_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        item.fmt(f)?;
    }
    Ok(())
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_name(f, &self.name)
    }
}

impl Display for FieldPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segments.iter().enumerate() {
            match seg {
                PathSegment::Field { name, quoted } => {
                    if i > 0 {
                        f.write_char('.')?;
                    }
                    // A bare keyword in first position would be read as the keyword.
                    if *quoted || !is_plain_ident(name) || (i == 0 && is_reserved_word(name)) {
                        write_quoted(f, name)?;
                    } else {
                        f.write_str(name)?;
                    }
                }
                PathSegment::AllElements => f.write_str("[]")?,
                PathSegment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl Display for Value {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ValueKind::String(s) => write_quoted(f, s),
            ValueKind::Long(n) => write!(f, "{n}"),
            ValueKind::Double(d) => {
                let s = d.to_string();
                if s.contains('.') {
                    f.write_str(&s)
                } else {
                    write!(f, "{s}.0")
                }
            }
            ValueKind::Bool(b) => write!(f, "{b}"),
            ValueKind::Null => f.write_str("null"),
            ValueKind::Parameter(p) => write!(f, "${p}"),
        }
    }
}

impl Display for Call {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        write_list(f, &self.args)?;
        f.write_char(')')
    }
}

impl Display for Arg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Value(v) => v.fmt(f),
            Arg::Field(p) => p.fmt(f),
            Arg::Call(c) => c.fmt(f),
            Arg::Expr(e) => e.fmt(f),
            Arg::Aliased { arg, alias } => write!(f, "{arg} as {alias}"),
        }
    }
}

impl Display for Operand {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Field(p) => p.fmt(f),
            Operand::Call(c) => c.fmt(f),
            Operand::Value(v) => v.fmt(f),
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // Parenthesize a child whose operator binds more loosely than its parent.
        fn child(f: &mut Formatter<'_>, e: &Expr, parent_and: bool) -> fmt::Result {
            match e {
                Expr::Or(..) if parent_and => write!(f, "({e})"),
                _ => e.fmt(f),
            }
        }
        match self {
            Expr::True(_) => f.write_str("true"),
            Expr::And(a, b) => {
                child(f, a, true)?;
                f.write_str(" and ")?;
                // The parser folds `a and b and c` to the left; a right-hand `and` needs parentheses.
                match **b {
                    Expr::And(..) | Expr::Or(..) => write!(f, "({b})"),
                    _ => b.fmt(f),
                }
            }
            Expr::Or(a, b) => {
                a.fmt(f)?;
                f.write_str(" or ")?;
                match **b {
                    Expr::Or(..) => write!(f, "({b})"),
                    _ => b.fmt(f),
                }
            }
            Expr::Not { expr, .. } => match **expr {
                Expr::And(..) | Expr::Or(..) => write!(f, "not ({expr})"),
                _ => write!(f, "not {expr}"),
            },
            Expr::Compare { left, op, right, .. } => write!(f, "{left} {} {right}", op.as_str()),
            Expr::Between { operand, low, high, .. } => write!(f, "{operand} between {low} and {high}"),
            Expr::In { operand, values, all, .. } => {
                write!(f, "{operand} {}in (", if *all { "all " } else { "" })?;
                write_list(f, values)?;
                f.write_char(')')
            }
            Expr::Method(c) => c.fmt(f),
        }
    }
}

impl Display for OrderField {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(t) = self.ordering {
            f.write_str(match t {
                OrderingType::String => " as string",
                OrderingType::Long => " as long",
                OrderingType::Double => " as double",
                OrderingType::AlphaNumeric => " as alphaNumeric",
            })?;
        }
        if self.descending {
            f.write_str(" desc")?;
        }
        match self.nulls {
            Some(NullsOrder::First) => f.write_str(" nulls first"),
            Some(NullsOrder::Last) => f.write_str(" nulls last"),
            None => Ok(()),
        }
    }
}

impl Display for GroupByItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        match &self.alias {
            Some(a) => write!(f, " as {a}"),
            None => Ok(()),
        }
    }
}

impl Display for LoadItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} as {}", self.path, self.alias)
    }
}

impl Display for SelectField {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.expr {
            SelectExpr::Field(p) => p.fmt(f)?,
            SelectExpr::Call(c) => c.fmt(f)?,
            SelectExpr::Value(v) => v.fmt(f)?,
            SelectExpr::TimeSeries(raw) => write!(f, "timeseries{}", raw.source)?,
        }
        match &self.alias {
            Some(a) => {
                f.write_str(" as ")?;
                write_quoted(f, &a.name)
            }
            None => Ok(()),
        }
    }
}

impl Display for IncludeItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            IncludeItem::Path(p) => p.fmt(f),
            IncludeItem::Call(c) => c.fmt(f),
        }
    }
}

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for d in &self.declared_functions {
            let kind = match d.kind {
                DeclarationKind::Function => "function",
                DeclarationKind::TimeSeries => "timeseries",
            };
            write!(f, "declare {kind} {}(", d.name.name)?;
            let params: Vec<&str> = d.params.iter().map(|p| p.name.as_str()).collect();
            f.write_str(&params.join(", "))?;
            writeln!(f, ") {}", d.body.source)?;
        }
        f.write_str("from ")?;
        match &self.from.source {
            FromSource::Collection { name, .. } => write_quoted(f, name)?,
            FromSource::AllDocs { .. } => f.write_str("@all_docs")?,
            FromSource::Index { name, .. } => {
                f.write_str("index ")?;
                write_quoted(f, name)?;
            }
        }
        if self.from.revisions {
            f.write_str(" (Revisions = true)")?;
        }
        if let Some(a) = &self.from.alias {
            write!(f, " as {a}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" group by ")?;
            write_list(f, &self.group_by)?;
        }
        if let Some(w) = &self.where_clause {
            write!(f, " where {w}")?;
        }
        if !self.order_by.is_empty() {
            f.write_str(" order by ")?;
            write_list(f, &self.order_by)?;
        }
        if !self.load.is_empty() {
            f.write_str(" load ")?;
            write_list(f, &self.load)?;
        }
        if let Some(w) = &self.filter {
            write!(f, " filter {w}")?;
        }
        if let Some(s) = &self.select {
            f.write_str(" select ")?;
            if s.distinct {
                f.write_str("distinct ")?;
            }
            match &s.projection {
                Projection::All => f.write_char('*')?,
                Projection::Js(js) => f.write_str(&js.source)?,
                Projection::Fields(fields) => write_list(f, fields)?,
            }
        }
        if let Some(u) = &self.update {
            write!(f, " update {}", u.source)?;
        }
        if !self.include.is_empty() {
            f.write_str(" include ")?;
            write_list(f, &self.include)?;
        }
        if let Some(l) = &self.limit {
            write!(f, " limit {l}")?;
        }
        if let Some(o) = &self.offset {
            write!(f, " offset {o}")?;
        }
        if let Some(l) = &self.filter_limit {
            write!(f, " filter_limit {l}")?;
        }
        Ok(())
    }
}
