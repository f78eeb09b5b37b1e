//! Compiling a facet request against the index schema: the facet column, the search field of an analyzed
//! field, the aggregated columns, and each range as column intervals where it can be.

use tantivy::schema::Field;

use crate::facets::ranges::{intervals, RangeTest};
use crate::facets::request::FacetRequest;
use crate::schema::{Column, FieldHandles, IndexSchema};
use crate::{Filter, IndexError};

/// A facet request resolved against the schema: the columns or search field it reads.
#[derive(Debug, Clone)]
pub(super) enum CompiledFacet {
    /// Terms of a field's facet column.
    Terms { column: String, aggregate_columns: Vec<Option<String>>, fields: Vec<String> },
    /// Terms of an analyzed field: the tokens of its search field.
    Tokens { field: Field, aggregate_columns: Vec<Option<String>>, fields: Vec<String> },
    /// Ranges, each decided from columns or by a query of its own.
    Ranges { tests: Vec<RangeTest>, aggregate_columns: Vec<Option<String>>, fields: Vec<String> },
}

impl CompiledFacet {
    /// The fields aggregated per term.
    pub(super) fn aggregated_fields(&self) -> &[String] {
        match self {
            CompiledFacet::Terms { fields, .. } | CompiledFacet::Tokens { fields, .. } | CompiledFacet::Ranges { fields, .. } => fields,
        }
    }
}

/// The name of the column `pick` chooses among the field's columns.
fn column_name(schema: &IndexSchema, path: &str, pick: impl Fn(&FieldHandles) -> &Column) -> Result<String, IndexError> {
    let (_, handles) = schema.field(path).ok_or_else(|| IndexError::InvalidQuery(format!("field '{path}' is not in the index")))?;
    Ok(pick(handles).name.clone())
}

/// The search field of an `Indexing: Search` field, whose tokens are its facet values.
fn analyzed_search_field(schema: &IndexSchema, path: &str) -> Option<Field> {
    let (_, handles) = schema.field(path)?;
    handles.search.filter(|_| handles.analyzed_only)
}

/// Numeric columns of aggregated fields; a field the index does not have aggregates nothing (as in
/// RavenDB, where it has no values).
pub(super) fn aggregate_column_names(schema: &IndexSchema, fields: &[String]) -> Vec<Option<String>> {
    fields.iter().map(|f| column_name(schema, f, |h| &h.double).ok()).collect()
}

/// Resolves one request against the schema; a term facet of a field the index lacks is an error.
pub(super) fn compile(schema: &IndexSchema, request: &FacetRequest<'_>) -> Result<CompiledFacet, IndexError> {
    Ok(match *request {
        FacetRequest::Terms { field, aggregate_fields } if analyzed_search_field(schema, field).is_some() => CompiledFacet::Tokens {
            field: analyzed_search_field(schema, field).expect("checked"),
            aggregate_columns: aggregate_column_names(schema, aggregate_fields),
            fields: aggregate_fields.to_vec(),
        },
        FacetRequest::Terms { field, aggregate_fields } => CompiledFacet::Terms {
            column: column_name(schema, field, |h| &h.facet)?,
            aggregate_columns: aggregate_column_names(schema, aggregate_fields),
            fields: aggregate_fields.to_vec(),
        },
        FacetRequest::Ranges { ranges, aggregate_fields } => CompiledFacet::Ranges {
            tests: ranges
                .iter()
                .map(|range| match range {
                    Filter::All => RangeTest::Everything,
                    other => intervals(schema, other).map_or(RangeTest::Query, RangeTest::Intervals),
                })
                .collect(),
            aggregate_columns: aggregate_column_names(schema, aggregate_fields),
            fields: aggregate_fields.to_vec(),
        },
    })
}
