//! Planning `group by` queries: the reduce key, the result fields and every aggregation the query uses,
//! which the automatic map-reduce index answering it must compute.

use std::fmt;

use corvid_rql::{Arg, Expr, FieldPath, Operand, OrderingType, Projection, Query, SelectExpr};

use super::error::{invalid, unsupported};
use super::source::Source;
use crate::indexing::{array_content_path, group_by_array_content, Aggregation};
use crate::query::reduce::aggregation_of;
use crate::EngineError;

/// What one field of a `group by` result holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    /// A group by key (its path; `array(path)` for array content).
    Key(String),
    Aggregation(Aggregation),
}

/// How the reduce rows of a `group by` query become results.
#[derive(Clone)]
pub(crate) struct GroupByPlan {
    /// The result fields in order, each with its name.
    pub outputs: Vec<(String, Output)>,
    /// `where` on the rows (keys and aggregations named as in the select).
    pub filter: Option<Expr>,
    /// `order by` on the rows: (operand, ordering, descending).
    pub sort: Vec<(Operand, Option<OrderingType>, bool)>,
}

impl fmt::Debug for GroupByPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sort: Vec<String> = self
            .sort
            .iter()
            .map(|(operand, ordering, descending)| {
                let ordering = ordering.map(|o| format!(" as {o:?}")).unwrap_or_default();
                format!("{operand}{ordering}{}", if *descending { " desc" } else { "" })
            })
            .collect();
        f.debug_struct("GroupByPlan")
            .field("outputs", &self.outputs)
            .field("filter", &self.filter.as_ref().map(|e| e.to_string()))
            .field("sort", &sort)
            .finish()
    }
}

/// `from Coll group by a, b select a, count() as n, sum(x) [where ...] [order by ...]`: rows of the automatic
/// map-reduce index of `collection` with that reduce key and every aggregation used (outputs, `where`,
/// `order by`), and how they become results.
pub(super) fn plan_group_by(query: &Query, text: &str, collection: &str) -> Result<(Source, GroupByPlan), EngineError> {
    let alias = query.from.alias.as_ref().map(|a| a.name.clone());
    let strip = |path: &FieldPath| alias.as_deref().and_then(|a| path.strip_alias(a)).unwrap_or_else(|| path.clone()).dotted();
    let mut group_by = Vec::new();
    for item in &query.group_by {
        match &item.expr {
            Operand::Field(path) => group_by.push(strip(path)),
            // `array(Lines[].Product)`: the whole array is one key value (RavenDB's ByContent).
            Operand::Call(call) if call.is("array") => match call.args.as_slice() {
                [Arg::Field(path)] => group_by.push(group_by_array_content(&strip(path))),
                _ => return Err(invalid(format!("array() in group by takes one field path (at position {})", call.span.start))),
            },
            _ => return Err(unsupported("This group by key", text, item.span)),
        }
    }
    // Selected outputs, in order; aggregations named in where/order by are needed too.
    let mut selected: Vec<(String, Output)> = Vec::new();
    match query.select.as_ref().map(|s| &s.projection) {
        None | Some(Projection::All) => {
            for g in &group_by {
                selected.push((output_name(g), Output::Key(g.clone())));
            }
            selected.push(("Count".into(), Output::Aggregation(Aggregation::Count)));
        }
        Some(Projection::Js(js)) => return Err(unsupported("A JavaScript projection", text, js.span)),
        Some(Projection::Fields(fields)) => {
            for field in fields {
                let alias = field.alias.as_ref().map(|a| a.name.clone());
                match &field.expr {
                    SelectExpr::Field(path) => {
                        let path = strip(path);
                        selected.push((alias.unwrap_or_else(|| path.clone()), Output::Key(path)));
                    }
                    SelectExpr::Call(call) if call.is("key") && call.args.is_empty() => {
                        for g in &group_by {
                            selected.push((alias.clone().unwrap_or_else(|| output_name(g)), Output::Key(g.clone())));
                        }
                    }
                    SelectExpr::Call(call) => {
                        let aggregation = aggregation_of(call)?;
                        let default = match &aggregation {
                            Aggregation::Count => "Count".to_owned(),
                            Aggregation::Sum(path) => path.clone(),
                        };
                        selected.push((alias.unwrap_or(default), Output::Aggregation(aggregation)));
                    }
                    _ => return Err(unsupported("This projection", text, field.span)),
                }
            }
        }
    }
    let mut aggregations: Vec<Aggregation> = selected
        .iter()
        .filter_map(|(_, output)| match output {
            Output::Aggregation(a) => Some(a.clone()),
            Output::Key(_) => None,
        })
        .collect();
    let mut note_calls = |operand: &Operand| {
        if let Operand::Call(call) = operand {
            if let Ok(a) = aggregation_of(call) {
                aggregations.push(a);
            }
        }
    };
    for order in &query.order_by {
        note_calls(&order.expr);
    }
    if let Some(w) = &query.where_clause {
        visit_operands(w, &mut note_calls);
    }
    let sort = query.order_by.iter().map(|o| (o.expr.clone(), o.ordering, o.descending)).collect();
    let source = Source::AutoReduce { collection: collection.to_owned(), group_by, aggregations };
    Ok((source, GroupByPlan { outputs: selected, filter: query.where_clause.clone(), sort }))
}

/// The default name of a group by key in results: its path (the path inside `array(...)`).
fn output_name(group_by: &str) -> String {
    array_content_path(group_by).unwrap_or(group_by).to_owned()
}

fn visit_operands(expr: &Expr, visit: &mut impl FnMut(&Operand)) {
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            visit_operands(a, visit);
            visit_operands(b, visit);
        }
        Expr::Not { expr, .. } => visit_operands(expr, visit),
        Expr::Compare { left, right, .. } => {
            visit(left);
            visit(right);
        }
        Expr::Between { operand, .. } | Expr::In { operand, .. } => visit(operand),
        Expr::True(_) | Expr::Method(_) => {}
    }
}
