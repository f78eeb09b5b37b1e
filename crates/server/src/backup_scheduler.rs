//! The periodic backup scheduler: one `backup-scheduler` thread that, every second, reads the tasks of every
//! database record (the landlord's in-memory mirror of the catalog), keeps each enabled task's next full run
//! from its `FullBackupFrequency`, and runs the backups that are due, one at a time, on this thread (never on
//! the async runtime). What it does is reported at `GET /admin/debug/periodic-backup/timers`.
//!
//! A task's `IncrementalBackupFrequency` runs incremental dump backups between its full ones (a full run
//! wins when both are due; an incremental run with no full backup to continue from runs full).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use corvid_engine::backup::CronSchedule;
use parking_lot::Mutex;
use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::backup_runs::{apply_retention, plan_of, run_backup, RunOrigin};
use crate::landlord::{database_key, Landlord};

const TICK: Duration = Duration::from_secs(1);

/// One task's timer.
#[derive(Debug, Clone)]
struct Timer {
    database: String,
    task_id: u64,
    name: String,
    /// The configuration the timer was computed from (a changed one starts over).
    config: Value,
    next_full: Option<OffsetDateTime>,
    next_incremental: Option<OffsetDateTime>,
    /// Why the task cannot run (a bad schedule or destination), if so.
    problem: Option<String>,
    runs: u64,
    /// Runs that were incremental.
    incremental_runs: u64,
    failures: u64,
}

/// What the scheduler has done, for the stats endpoint.
#[derive(Default)]
pub struct BackupScheduler {
    timers: Mutex<HashMap<(String, u64), Timer>>,
    /// The task whose backup runs now (`database/task id`).
    running: Mutex<Option<String>>,
    ticks: std::sync::atomic::AtomicU64,
    stop: AtomicBool,
}

fn rfc3339(at: Option<OffsetDateTime>) -> Value {
    at.and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()).map_or(Value::Null, Value::from)
}

impl BackupScheduler {
    /// Starts the scheduler's thread.
    pub fn start(self: &Arc<Self>, landlord: Arc<Landlord>, runtime: tokio::runtime::Handle) -> std::io::Result<()> {
        let scheduler = self.clone();
        std::thread::Builder::new().name("backup-scheduler".into()).spawn(move || {
            while !scheduler.stop.load(Ordering::Relaxed) {
                scheduler.tick(&landlord, &runtime, OffsetDateTime::now_utc());
                std::thread::sleep(TICK);
            }
        })?;
        Ok(())
    }

    /// Stops the thread after its current run.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// One pass: refresh the timers from the records, then run what is due.
    fn tick(&self, landlord: &Landlord, runtime: &tokio::runtime::Handle, now: OffsetDateTime) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
        let mut due = Vec::new();
        {
            let mut timers = self.timers.lock();
            let mut seen = Vec::new();
            for entry in landlord.list().into_iter().filter(|e| !e.disabled) {
                for config in &entry.periodic_backups {
                    let task_id = config.get("TaskId").and_then(Value::as_u64).unwrap_or(0);
                    let key = (database_key(&entry.name), task_id);
                    seen.push(key.clone());
                    let timer = timers.entry(key.clone()).or_insert_with(|| Timer {
                        database: entry.name.clone(),
                        task_id,
                        name: String::new(),
                        config: Value::Null,
                        next_full: None,
                        next_incremental: None,
                        problem: None,
                        runs: 0,
                        incremental_runs: 0,
                        failures: 0,
                    });
                    if timer.config != *config {
                        timer.config = config.clone();
                        timer.name = config.get("Name").and_then(Value::as_str).unwrap_or_default().to_owned();
                        let (full, full_problem) = first_run(config, FULL, now);
                        let (incremental, incremental_problem) = first_run(config, INCREMENTAL, now);
                        // A task with one working schedule runs; the problem shown is why neither does.
                        timer.problem = if full.is_none() && incremental.is_none() { full_problem.or(incremental_problem) } else { None };
                        (timer.next_full, timer.next_incremental) = (full, incremental);
                    }
                    if timer.next_full.is_some_and(|next| next <= now) {
                        due.push((key, false));
                    } else if timer.next_incremental.is_some_and(|next| next <= now) {
                        due.push((key, true));
                    }
                }
            }
            timers.retain(|key, _| seen.contains(key));
        }
        for (key, incremental) in due {
            self.run(landlord, runtime, &key, incremental, now);
        }
    }

    fn run(&self, landlord: &Landlord, runtime: &tokio::runtime::Handle, key: &(String, u64), incremental: bool, now: OffsetDateTime) {
        let Some(timer) = self.timers.lock().get(key).cloned() else { return };
        *self.running.lock() = Some(format!("{}/{}", timer.database, timer.task_id));
        let outcome = plan_of(&timer.config).and_then(|plan| {
            let db =
                runtime.block_on(landlord.database(&timer.database)).map_err(|e| corvid_engine::EngineError::Internal(e.to_string()))?;
            let origin = RunOrigin { task_id: Some(timer.task_id), operation_id: None };
            run_backup(landlord, &db, &plan, origin, incremental, &mut |_, _| {})?;
            apply_retention(&timer.config, &plan, db.name())
        });
        *self.running.lock() = None;
        if let Some(timer) = self.timers.lock().get_mut(key) {
            timer.runs += 1;
            match outcome {
                Ok(removed) if removed > 0 => {
                    tracing::info!(database = %timer.database, removed, "old backups removed by the retention policy")
                }
                Ok(_) => {}
                Err(e) => {
                    timer.failures += 1;
                    tracing::warn!(database = %timer.database, task = timer.task_id, error = %e, "scheduled backup failed");
                }
            }
            let after = now.max(OffsetDateTime::now_utc());
            if incremental {
                timer.incremental_runs += 1;
                timer.next_incremental = schedule_of(&timer.config, INCREMENTAL).ok().and_then(|s| s.next_after(after));
            } else {
                timer.next_full = schedule_of(&timer.config, FULL).ok().and_then(|s| s.next_after(after));
                // The incremental runs due meanwhile are covered by this full one.
                if timer.next_incremental.is_some_and(|next| next <= after) {
                    timer.next_incremental = schedule_of(&timer.config, INCREMENTAL).ok().and_then(|s| s.next_after(after));
                }
            }
        }
    }

    /// The scheduler's state: RavenDB's `/admin/debug/periodic-backup/timers` shape with Corvid's counters.
    pub fn stats_json(&self) -> Value {
        let timers: Vec<Value> = {
            let timers = self.timers.lock();
            let mut list: Vec<&Timer> = timers.values().collect();
            list.sort_by(|a, b| (&a.database, a.task_id).cmp(&(&b.database, b.task_id)));
            list.iter()
                .map(|t| {
                    json!({
                        "DatabaseName": t.database, "TaskId": t.task_id, "TaskName": t.name,
                        "NextBackup": next_backup(t),
                        "NextFullBackup": rfc3339(t.next_full),
                        "NextIncrementalBackup": rfc3339(t.next_incremental),
                        "Problem": t.problem, "Runs": t.runs, "IncrementalRuns": t.incremental_runs, "Failures": t.failures,
                    })
                })
                .collect()
        };
        json!({
            "Count": timers.len(),
            "Timers": timers,
            "Running": self.running.lock().clone(),
            "Ticks": self.ticks.load(Ordering::Relaxed),
        })
    }
}

/// The schedule fields of a task.
const FULL: &str = "FullBackupFrequency";
const INCREMENTAL: &str = "IncrementalBackupFrequency";

/// RavenDB's `NextBackup`: the sooner of the two runs.
fn next_backup(t: &Timer) -> Value {
    let (at, full) = match (t.next_full, t.next_incremental) {
        (Some(full), Some(incremental)) if incremental < full => (Some(incremental), false),
        (None, Some(incremental)) => (Some(incremental), false),
        (full, _) => (full, true),
    };
    json!({"DateTime": rfc3339(at), "IsFull": full})
}

fn schedule_of(config: &Value, field: &str) -> Result<CronSchedule, corvid_engine::EngineError> {
    let frequency = config.get(field).and_then(Value::as_str).unwrap_or_default();
    Ok(CronSchedule::parse(frequency)?)
}

/// The first run of a task's schedule `field` seen now (none when it is disabled or cannot run, with the
/// reason).
fn first_run(config: &Value, field: &str, now: OffsetDateTime) -> (Option<OffsetDateTime>, Option<String>) {
    if config.get("Disabled").and_then(Value::as_bool).unwrap_or(false) {
        return (None, Some("disabled".into()));
    }
    if config.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
        return (None, Some(format!("no {field}")));
    }
    if let Err(e) = plan_of(config) {
        return (None, Some(e.to_string()));
    }
    match schedule_of(config, field) {
        Ok(schedule) => (schedule.next_after(now), None),
        Err(e) => (None, Some(e.to_string())),
    }
}
