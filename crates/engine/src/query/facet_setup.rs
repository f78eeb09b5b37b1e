//! Facet setup documents (`facet(id('facets/x'))`): read from a snapshot and expanded into the facets they
//! describe when the query runs (and, for a dynamic query, when its automatic index is chosen).

use corvid_storage::ReadTxn;
use serde_json::Value as Json;

use super::facets::FacetPlan;
use super::plan::{facets_of_setup, PlannedFacet};
use super::request::QueryRequest;
use crate::indexing::AutoIndexField;
use crate::EngineError;

/// Setup document `id` as JSON.
fn setup_document(snapshot: &ReadTxn<'_>, id: &str) -> Result<Json, EngineError> {
    let record = snapshot
        .document(&corvid_types::id_key(id))?
        .ok_or_else(|| EngineError::InvalidQuery { message: format!("facet setup document '{id}' does not exist") })?;
    corvid_types::json::parse(&record.body).map_err(|e| EngineError::Internal(e.to_string()))
}

/// The facets of a plan, each setup document expanded in place.
pub(crate) fn expand_facets(
    planned: &[PlannedFacet],
    snapshot: &ReadTxn<'_>,
    request: &QueryRequest,
) -> Result<Vec<FacetPlan>, EngineError> {
    let mut facets = Vec::new();
    for facet in planned {
        match facet {
            PlannedFacet::Facet(plan) => facets.push(plan.clone()),
            PlannedFacet::Setup { id, alias } => facets.extend(facets_of_setup(&setup_document(snapshot, id)?, request, alias.clone())?.0),
        }
    }
    Ok(facets)
}

/// Whether any of `planned` is a setup document's.
pub(crate) fn uses_setup_documents(planned: &[PlannedFacet]) -> bool {
    planned.iter().any(|facet| matches!(facet, PlannedFacet::Setup { .. }))
}

/// The fields the setup documents among `planned` need in an index.
pub(crate) fn setup_fields(
    planned: &[PlannedFacet],
    snapshot: &ReadTxn<'_>,
    request: &QueryRequest,
) -> Result<Vec<AutoIndexField>, EngineError> {
    let mut fields = Vec::new();
    for facet in planned {
        if let PlannedFacet::Setup { id, alias } = facet {
            fields.extend(facets_of_setup(&setup_document(snapshot, id)?, request, alias.clone())?.1);
        }
    }
    Ok(fields)
}
