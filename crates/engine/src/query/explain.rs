//! `queries?debug=explain`: which automatic index a dynamic query uses and why. The query is planned as
//! it would be run; the catalog explains its choice for what the plan needs. Nothing is created.

use corvid_rql::FromSource;

use super::catalog::IndexCatalog;
use super::facet_setup::{setup_fields, uses_setup_documents};
use super::plan::{plan, reject_unsupported, Source};
use super::request::QueryRequest;
use crate::indexing::{IndexExplanation, QueryExplanation};
use crate::{Database, EngineError};

/// Explain answers dynamic queries only.
fn names_its_index(name: &str) -> EngineError {
    EngineError::InvalidQuery {
        message: format!("Explain works on dynamic queries ('from <collection>'); this query names its index, '{name}'"),
    }
}

impl Database {
    /// Which automatic index `request` uses (or would create) and why, without running it or creating anything.
    pub fn explain_query(&self, request: &QueryRequest) -> Result<QueryExplanation, EngineError> {
        let query = request.parse()?;
        if let FromSource::Index { name, .. } = &query.from.source {
            reject_unsupported(&query, &request.query, request.for_operation)?;
            return Err(names_its_index(name));
        }
        let catalog: &dyn IndexCatalog = &*self.indexes;
        let plan = plan(&query, request, catalog)?;
        match &plan.source {
            Source::Collection { name } | Source::AllDocs { name } => {
                let name = format!("collection/{name}");
                let reason = "The query neither filters nor sorts: it reads the collection's documents directly, without an index";
                Ok(QueryExplanation {
                    index_name: name.clone(),
                    explanations: vec![IndexExplanation { index: name, reason: reason.to_owned() }],
                })
            }
            Source::AutoIndex { collection, fields } => {
                let mut needed = fields.clone();
                if let Some(facets) = plan.facets.as_deref().filter(|f| uses_setup_documents(f)) {
                    needed.extend(setup_fields(facets, &self.store.read()?, request)?);
                }
                Ok(catalog.explain_map(collection, &needed))
            }
            Source::AutoReduce { collection, group_by, aggregations } => Ok(catalog.explain_reduce(collection, group_by, aggregations)),
            Source::Index { name } => Err(names_its_index(name)),
        }
    }
}
