//! What operators set on an index besides its definition: disabled (no indexing until enabled, kept across
//! restarts), paused (stopped until started again or the database reloads, as RavenDB's "stop"), priority
//! and lock mode; for a side-by-side rebuild, whether the index is the replacement of the index of its name and
//! its generation (which of two directories claiming one name is newer); and whether it failed too often
//! (errored: no indexing and no queries until it is enabled, reset or redefined). Persisted next to the
//! definition as `control.json`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::EngineError;

/// The file of the control state in an index's directory.
pub(super) const CONTROL_FILE: &str = "control.json";

/// RavenDB's index priorities, as `set_priority` accepts them (in any case).
pub const PRIORITIES: &[&str] = &["Low", "Normal", "High"];
/// RavenDB's index lock modes, as `set_lock_mode` accepts them (in any case).
pub const LOCK_MODES: &[&str] = &["Unlock", "LockedIgnore", "LockedError"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Persisted {
    disabled: bool,
    priority: String,
    lock_mode: String,
    /// Built side by side to take the place of the index of the same name once it catches up.
    replacement: bool,
    /// Grows with every replacement of an index of this name.
    generation: u64,
    /// Why the index is errored (see `failure.rs`).
    errored: Option<String>,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            disabled: false,
            priority: "Normal".into(),
            lock_mode: "Unlock".into(),
            replacement: false,
            generation: 0,
            errored: None,
        }
    }
}

/// The control state of one index: persisted settings, and flags read on every indexing step.
#[derive(Debug, Default)]
pub struct IndexControl {
    persisted: Mutex<Persisted>,
    disabled: AtomicBool,
    paused: AtomicBool,
    /// Read by every indexing step, so kept outside the mutex.
    errored: AtomicBool,
    /// Read by every lookup by name, so kept outside the mutex.
    replacement: AtomicBool,
}

impl IndexControl {
    /// Loads the control state kept in `dir` (defaults when there is none).
    pub fn load(dir: &Path) -> IndexControl {
        let persisted: Persisted =
            std::fs::read_to_string(dir.join(CONTROL_FILE)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        IndexControl {
            disabled: AtomicBool::new(persisted.disabled),
            paused: AtomicBool::new(false),
            errored: AtomicBool::new(persisted.errored.is_some()),
            replacement: AtomicBool::new(persisted.replacement),
            persisted: Mutex::new(persisted),
        }
    }

    /// Writes the control state of a replacement about to be built in `dir`: it inherits the replaced
    /// index's priority and lock mode.
    pub fn create_replacement(dir: &Path, of: &IndexControl, generation: u64) -> Result<(), EngineError> {
        let mut persisted = of.persisted.lock().clone();
        persisted.disabled = false;
        persisted.errored = None;
        persisted.replacement = true;
        persisted.generation = generation;
        let control = IndexControl::default();
        control.save(dir, &persisted)
    }

    /// The index is being built side by side to replace the index of its name.
    pub fn is_replacement(&self) -> bool {
        self.replacement.load(Ordering::Relaxed)
    }

    /// Which of the indexes that ever held this name the index is (grows with every replacement).
    pub fn generation(&self) -> u64 {
        self.persisted.lock().generation
    }

    /// Records on disk that a replacement is now the index of its name (durable before it returns); the
    /// registry then calls `show_promoted` while it swaps the indexes, so lookups see one or the other.
    pub fn promote(&self, dir: &Path) -> Result<(), EngineError> {
        let mut persisted = self.persisted.lock();
        let mut next = persisted.clone();
        next.replacement = false;
        self.save(dir, &next)?;
        *persisted = next;
        Ok(())
    }

    /// Lookups by name now see the promoted replacement as the index itself.
    pub fn show_promoted(&self) {
        self.replacement.store(false, Ordering::Relaxed);
    }

    fn save(&self, dir: &Path, persisted: &Persisted) -> Result<(), EngineError> {
        let text = serde_json::to_string_pretty(persisted).map_err(|e| EngineError::Internal(e.to_string()))?;
        let temporary = dir.join(format!("{CONTROL_FILE}.tmp"));
        std::fs::write(&temporary, text)
            .and_then(|_| std::fs::File::open(&temporary)?.sync_all())
            .and_then(|_| std::fs::rename(&temporary, dir.join(CONTROL_FILE)))
            .and_then(|_| std::fs::File::open(dir)?.sync_all())
            .map_err(|e| EngineError::Internal(format!("cannot save the index state in {}: {e}", dir.display())))
    }

    /// Writes in `to` the control state of `from` for an index rebuilt from scratch (a reset): everything
    /// but the errored state carries over.
    pub fn carry_over(from: &Path, to: &Path) -> Result<(), EngineError> {
        let mut persisted = IndexControl::load(from).persisted.into_inner();
        persisted.errored = None;
        IndexControl::default().save(to, &persisted)
    }

    /// The worker may index now.
    pub fn may_index(&self) -> bool {
        !self.disabled.load(Ordering::Relaxed) && !self.paused.load(Ordering::Relaxed) && !self.is_errored()
    }

    /// The index failed too often: it neither indexes nor answers queries.
    pub fn is_errored(&self) -> bool {
        self.errored.load(Ordering::Relaxed)
    }

    /// Why the index is errored, if it is.
    pub fn errored_reason(&self) -> Option<String> {
        if !self.is_errored() {
            return None;
        }
        self.persisted.lock().errored.clone()
    }

    /// Marks the index errored (kept across restarts). Indexing stops at once, even if saving fails.
    pub fn set_errored(&self, dir: &Path, reason: String) -> Result<(), EngineError> {
        let mut persisted = self.persisted.lock();
        persisted.errored = Some(reason);
        self.errored.store(true, Ordering::Relaxed);
        let next = persisted.clone();
        self.save(dir, &next)
    }

    /// Disabled by an operator (kept across restarts).
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }

    /// Paused by an operator (until started again or the database reloads).
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Pauses or resumes indexing (not persisted).
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Disables or enables indexing, durably; enabling also clears the errored state.
    pub fn set_disabled(&self, dir: &Path, disabled: bool) -> Result<(), EngineError> {
        let mut persisted = self.persisted.lock();
        let mut next = persisted.clone();
        next.disabled = disabled;
        if !disabled {
            // Enabling an errored index lets it index again, as RavenDB's enable does.
            next.errored = None;
        }
        self.save(dir, &next)?;
        *persisted = next;
        self.disabled.store(disabled, Ordering::Relaxed);
        if !disabled {
            self.errored.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `Low`, `Normal` or `High`.
    pub fn priority(&self) -> String {
        self.persisted.lock().priority.clone()
    }

    /// `Unlock`, `LockedIgnore` or `LockedError`.
    pub fn lock_mode(&self) -> String {
        self.persisted.lock().lock_mode.clone()
    }

    /// Sets the priority (one of [`PRIORITIES`], any case), durably.
    pub fn set_priority(&self, dir: &Path, priority: &str) -> Result<(), EngineError> {
        let Some(canonical) = PRIORITIES.iter().find(|p| p.eq_ignore_ascii_case(priority)) else {
            return Err(EngineError::bad_request(format!(
                "Unknown index priority '{priority}' (expected one of {})",
                PRIORITIES.join(", ")
            )));
        };
        let mut persisted = self.persisted.lock();
        let mut next = persisted.clone();
        next.priority = (*canonical).to_owned();
        self.save(dir, &next)?;
        *persisted = next;
        Ok(())
    }

    /// Sets the lock mode (one of [`LOCK_MODES`], any case), durably.
    pub fn set_lock_mode(&self, dir: &Path, mode: &str) -> Result<(), EngineError> {
        let Some(canonical) = LOCK_MODES.iter().find(|m| m.eq_ignore_ascii_case(mode)) else {
            return Err(EngineError::bad_request(format!("Unknown index lock mode '{mode}' (expected one of {})", LOCK_MODES.join(", "))));
        };
        let mut persisted = self.persisted.lock();
        let mut next = persisted.clone();
        next.lock_mode = (*canonical).to_owned();
        self.save(dir, &next)?;
        *persisted = next;
        Ok(())
    }

    /// RavenDB's index `Status`.
    pub fn status(&self) -> &'static str {
        if self.is_disabled() {
            "Disabled"
        } else if self.is_paused() {
            "Paused"
        } else {
            "Running"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_priority_and_lock_mode_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let control = IndexControl::load(dir.path());
        assert!(control.may_index());
        control.set_disabled(dir.path(), true).unwrap();
        control.set_priority(dir.path(), "high").unwrap();
        control.set_lock_mode(dir.path(), "LockedIgnore").unwrap();
        assert!(control.set_priority(dir.path(), "urgent").is_err());
        control.set_paused(true);
        let reloaded = IndexControl::load(dir.path());
        assert!(reloaded.is_disabled() && !reloaded.is_paused(), "pausing lasts until restart only");
        assert_eq!((reloaded.priority().as_str(), reloaded.lock_mode().as_str()), ("High", "LockedIgnore"));
        assert_eq!(reloaded.status(), "Disabled");
    }

    #[test]
    fn the_errored_state_survives_a_reload_but_not_a_reset_or_an_enable() {
        let dir = tempfile::tempdir().unwrap();
        let control = IndexControl::load(dir.path());
        control.set_errored(dir.path(), "too many failures".into()).unwrap();
        assert!(!control.may_index());
        let reloaded = IndexControl::load(dir.path());
        assert_eq!(reloaded.errored_reason().as_deref(), Some("too many failures"));
        let rebuilt = tempfile::tempdir().unwrap();
        IndexControl::carry_over(dir.path(), rebuilt.path()).unwrap();
        assert!(!IndexControl::load(rebuilt.path()).is_errored());
        reloaded.set_disabled(dir.path(), false).unwrap();
        assert!(reloaded.may_index() && !IndexControl::load(dir.path()).is_errored());
    }
}
