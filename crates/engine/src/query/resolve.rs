//! Resolving a plan into one that can run: the index it names is looked up, or the automatic index it
//! needs is found or created. The only step of a query that may create an index.

use std::sync::Arc;

use super::facet_setup::{setup_fields, uses_setup_documents};
use super::plan::{plan, GroupByPlan, Output, Plan, Source};
use super::reduce::{OutputField, OutputSource, ReducePlan};
use super::request::QueryRequest;
use crate::indexing::{array_content_path, IndexHandle};
use crate::{Database, EngineError};

/// Where a resolved plan reads its results.
pub(crate) enum Target {
    /// Documents read directly from storage; `name` is the collection's (`AllDocs` for every document).
    Documents { name: String },
    /// An index.
    Index {
        handle: Arc<IndexHandle>,
        /// The query created (or extended into) a new automatic index: like RavenDB, it waits for it.
        created: bool,
        /// `group by` queries: how reduce rows become results, against this index's definition.
        reduce: Option<Box<ReducePlan>>,
    },
}

/// A plan with the index it reads.
pub(crate) struct ResolvedPlan {
    pub plan: Plan,
    pub target: Target,
}

impl ResolvedPlan {
    /// Whether resolving created an index.
    pub fn created_index(&self) -> bool {
        matches!(self.target, Target::Index { created: true, .. })
    }
}

impl Database {
    /// Plans `request` against this database's indexes and resolves the plan (which may create an
    /// automatic index).
    pub(crate) fn plan_query(&self, request: &QueryRequest) -> Result<ResolvedPlan, EngineError> {
        let mut query = request.parse()?;
        // Only a query that names cmpxchg() pays for the snapshot its values are read from.
        if request.query.to_ascii_lowercase().contains("cmpxchg") {
            let mut parameters = request.parameters.clone();
            let snapshot = self.store.read()?;
            let read = |key: &str| Ok(snapshot.compare_exchange(key)?.map(|v| v.value));
            if super::compare_exchange_calls::bind_compare_exchange_calls(&mut query, &mut parameters, &read)? {
                drop(snapshot);
                let request = QueryRequest { parameters, ..request.clone() };
                let plan = plan(&query, &request, &*self.indexes)?;
                return self.resolve(plan, &request);
            }
        }
        let plan = plan(&query, request, &*self.indexes)?;
        self.resolve(plan, request)
    }

    /// Finds (or creates) the index `plan` reads.
    pub(crate) fn resolve(&self, plan: Plan, request: &QueryRequest) -> Result<ResolvedPlan, EngineError> {
        let target = match &plan.source {
            Source::Collection { name } | Source::AllDocs { name } => Target::Documents { name: name.clone() },
            Source::Index { name } => {
                let handle = self.indexes.get(name).ok_or_else(|| EngineError::IndexDoesNotExist(name.clone()))?;
                Target::Index { handle, created: false, reduce: None }
            }
            Source::AutoIndex { collection, fields } => {
                let mut needed = fields.clone();
                if let Some(facets) = plan.facets.as_deref().filter(|f| uses_setup_documents(f)) {
                    // The fields of facet setup documents decide the index too, so they are read now.
                    needed.extend(setup_fields(facets, &self.store.read()?, request)?);
                }
                let (handle, created) = self.indexes.find_or_create(collection, &needed)?;
                Target::Index { handle, created, reduce: None }
            }
            Source::AutoReduce { collection, group_by, aggregations } => {
                let (handle, created) = self.indexes.find_or_create_reduce(collection, group_by, aggregations)?;
                let group_by = plan.group_by.as_ref().ok_or_else(|| EngineError::Internal("a group by plan without its outputs".into()))?;
                let reduce = reduce_plan(group_by, &handle, request)?;
                Target::Index { handle, created, reduce: Some(Box::new(reduce)) }
            }
        };
        Ok(ResolvedPlan { plan, target })
    }
}

/// How the rows of map-reduce index `handle` become the results of `group_by`: each output's position in
/// the index's reduce key or values.
fn reduce_plan(group_by: &GroupByPlan, handle: &Arc<IndexHandle>, request: &QueryRequest) -> Result<ReducePlan, EngineError> {
    let definition = &handle.definition;
    let mut outputs = Vec::new();
    for (name, output) in &group_by.outputs {
        let (source, integer) = match output {
            Output::Key(path) => {
                // A selected path names an `array(path)` key too.
                let position =
                    definition.group_by.iter().position(|g| g == path || array_content_path(g) == Some(path.as_str())).ok_or_else(
                        || EngineError::InvalidQuery {
                            message: format!("'{path}' is selected but is not a group by field; select group by fields or aggregations"),
                        },
                    )?;
                (OutputSource::Group(position), false)
            }
            Output::Aggregation(aggregation) => {
                let position =
                    definition.value_position(aggregation).ok_or_else(|| EngineError::Internal("aggregation missing from index".into()))?;
                (OutputSource::Value(position), position == 0)
            }
        };
        outputs.push(OutputField { name: name.clone(), source, integer });
    }
    Ok(ReducePlan {
        handle: handle.clone(),
        outputs,
        filter: group_by.filter.clone(),
        sort: group_by.sort.clone(),
        parameters: request.parameters.clone(),
    })
}
