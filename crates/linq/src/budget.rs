//! The limits of one evaluation (one document's map, one reduce group): steps, bytes built and entries.

use serde_json::Value;

use crate::value::heap_size;

/// Evaluation steps allowed for one document or one reduce group (about a tenth of a second).
pub const DEFAULT_STEP_BUDGET: u64 = 1_000_000;
/// Bytes of values one document's map or one reduce group may build or copy: far above what real maps
/// need, small enough that a few index threads at their limit cannot exhaust a server.
pub const DEFAULT_BYTE_BUDGET: u64 = 64 << 20;
/// Index entries one document's map may produce, like RavenDB's guard on outputs per document.
pub const DEFAULT_MAX_OUTPUTS: usize = 32_768;

/// What one evaluation (one document's map, one reduce group) may spend; see the crate documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Evaluation steps (expressions evaluated, rows produced, comparisons made).
    pub steps: u64,
    /// Bytes of values built or copied.
    pub bytes: u64,
    /// Index entries one document's map may produce.
    pub outputs: usize,
}

impl Budget {
    /// The budget of reducing `group`: the engine reduces every map output of a key at once, and the
    /// outputs are in memory already, so the budget grows with them (each one may be read and copied a few
    /// times); a reduce that runs away from its input still stops.
    pub(crate) fn for_group(self, group: &[Value]) -> Budget {
        let inputs = group.len() as u64;
        let input_bytes: u64 = group.iter().map(heap_size).sum();
        Budget {
            steps: self.steps.saturating_add(inputs.saturating_mul(REDUCE_STEPS_PER_INPUT)),
            bytes: self.bytes.saturating_add(input_bytes.saturating_add(inputs * 256).saturating_mul(REDUCE_COPIES_PER_INPUT)),
            outputs: self.outputs,
        }
    }
}

/// Steps a reduce may spend per map output it reduces, beyond the budget of one evaluation.
const REDUCE_STEPS_PER_INPUT: u64 = 32;
/// Times a reduce may copy each map output it reduces, beyond the budget of one evaluation.
const REDUCE_COPIES_PER_INPUT: u64 = 8;

impl Default for Budget {
    fn default() -> Self {
        Budget { steps: DEFAULT_STEP_BUDGET, bytes: DEFAULT_BYTE_BUDGET, outputs: DEFAULT_MAX_OUTPUTS }
    }
}
