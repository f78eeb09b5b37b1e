//! Corvid's JavaScript sandbox on QuickJS (rquickjs): compile once, run with a CPU-time limit per call and a
//! memory limit per sandbox; a call can also be cancelled from another thread (its client went away). A
//! script that loops forever or allocates without bound fails with a clear error and leaves the sandbox
//! usable. Values cross the boundary as JSON text.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rquickjs::function::{Rest, This};
use rquickjs::{CatchResultExt, CaughtError, Context, Function, Runtime, Value};

mod allocator;
mod host;
use allocator::LimitedAllocator;
pub use host::Host;

/// Defined in every sandbox: `__host(op, [args])` calls the current `Host` and throws its errors.
const HOST_PRELUDE: &str = "function __host(op, args) {\n\
  const r = JSON.parse(__corvid_host(op, JSON.stringify(args === undefined ? [] : args)));\n\
  if (r.error !== undefined) { throw new Error(r.error); }\n\
  return r.ok;\n\
}";

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most CPU time a single call may use on its thread. CPU time, not wall-clock time: a server short of
    /// CPU runs scripts slower, and that must not make them fail.
    pub time: Duration,
    /// Most memory the sandbox may allocate.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { time: Duration::from_secs(1), memory_bytes: 64 << 20 }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsError {
    #[error("JavaScript does not compile: {0}")]
    Compile(String),
    #[error("JavaScript failed: {0}")]
    Runtime(String),
    #[error("JavaScript ran longer than the limit of {0} ms")]
    Timeout(u128),
    #[error("JavaScript used more memory than the limit of {0} bytes")]
    OutOfMemory(usize),
    #[error("JavaScript was stopped: the request was cancelled")]
    Cancelled,
    #[error("JavaScript ran more than the limit of {0} steps")]
    StepLimit(u64),
}

/// QuickJS polls its interrupt handler once every this many function calls and backward jumps (its
/// `JS_INTERRUPT_COUNTER_INIT`): a step limit is kept to that granularity.
pub const STEPS_PER_POLL: u64 = 10_000;

/// CPU time the calling thread has used, in nanoseconds.
fn thread_cpu_nanos() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

pub struct Sandbox {
    _runtime: Runtime,
    context: Context,
    limits: Limits,
    /// Deadline of the running call in CPU nanoseconds of the thread running it (0: none).
    deadline: Arc<AtomicU64>,
    /// Set from any thread to stop the running call and every later one.
    cancel: Arc<AtomicBool>,
    /// Set by the allocator when it refuses memory; cleared when a call starts.
    memory_refused: Arc<AtomicBool>,
    /// Most steps a call may run (0: no limit), counted in interrupt polls (see [`Sandbox::set_step_limit`]).
    step_limit: Arc<AtomicU64>,
    /// Interrupt polls seen since the running call started.
    polls: Arc<AtomicU64>,
}

impl Sandbox {
    pub fn new(limits: Limits) -> Result<Sandbox, JsError> {
        Sandbox::cancellable(limits, Arc::new(AtomicBool::new(false)))
    }

    /// A sandbox whose calls stop with `JsError::Cancelled` once `cancel` is set (from any thread).
    pub fn cancellable(limits: Limits, cancel: Arc<AtomicBool>) -> Result<Sandbox, JsError> {
        let memory_refused = Arc::new(AtomicBool::new(false));
        let allocator = LimitedAllocator::new(limits.memory_bytes, memory_refused.clone());
        let runtime = Runtime::new_with_alloc(allocator).map_err(|e| JsError::Runtime(e.to_string()))?;
        runtime.set_max_stack_size(1 << 20);
        let deadline = Arc::new(AtomicU64::new(0));
        let (step_limit, polls) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (watched, cancelled, limit, counted) = (deadline.clone(), cancel.clone(), step_limit.clone(), polls.clone());
        // QuickJS calls this every few thousand operations on the thread running the script.
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let d = watched.load(Ordering::Relaxed);
            let seen = counted.fetch_add(1, Ordering::Relaxed) + 1;
            cancelled.load(Ordering::Relaxed) || (d != 0 && thread_cpu_nanos() > d) || over_steps(limit.load(Ordering::Relaxed), seen)
        })));
        let context = Context::full(&runtime).map_err(|e| JsError::Runtime(e.to_string()))?;
        context
            .with(|ctx| {
                let native = Function::new(ctx.clone(), |op: String, arguments: String| -> String {
                    let answer = match host::dispatch(&op, &arguments) {
                        Ok(json) => format!("{{\"ok\":{json}}}"),
                        Err(message) => serde_json::json!({ "error": message }).to_string(),
                    };
                    answer
                })?;
                ctx.globals().set("__corvid_host", native)?;
                ctx.eval::<(), _>(HOST_PRELUDE)
            })
            .map_err(|e| JsError::Runtime(e.to_string()))?;
        Ok(Sandbox { _runtime: runtime, context, limits, deadline, cancel, memory_refused, step_limit, polls })
    }

    /// Stops every later call that runs more than `steps` steps (function calls and loop iterations) with
    /// `JsError::StepLimit`; `None` removes the limit. QuickJS counts steps in polls of
    /// [`STEPS_PER_POLL`], and its counter carries over from call to call, so a call fails once it has
    /// surely run `max(steps, STEPS_PER_POLL)` steps: a limit below one poll acts as one poll.
    pub fn set_step_limit(&self, steps: Option<u64>) {
        self.step_limit.store(steps.unwrap_or(0), Ordering::Relaxed);
    }

    /// Like `call_with_documents`, with `host` answering the script's `__host(...)` calls.
    pub fn call_with_host(&self, name: &str, arguments_json: &[&str], host: &mut dyn Host) -> Result<String, JsError> {
        host::with_host(host, || self.call_with_documents(name, arguments_json))
    }

    fn arm(&self) {
        self.memory_refused.store(false, Ordering::Relaxed);
        self.polls.store(0, Ordering::Relaxed);
        let at = thread_cpu_nanos() + self.limits.time.as_nanos() as u64;
        self.deadline.store(at, Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.deadline.store(0, Ordering::Relaxed);
    }

    fn classify(&self, message: String, compile: bool) -> JsError {
        if self.cancel.load(Ordering::Relaxed) {
            return JsError::Cancelled;
        }
        let deadline = self.deadline.load(Ordering::Relaxed);
        if deadline != 0 && thread_cpu_nanos() > deadline {
            return JsError::Timeout(self.limits.time.as_millis());
        }
        if self.memory_refused.load(Ordering::Relaxed) {
            return JsError::OutOfMemory(self.limits.memory_bytes);
        }
        let steps = self.step_limit.load(Ordering::Relaxed);
        if over_steps(steps, self.polls.load(Ordering::Relaxed)) {
            return JsError::StepLimit(steps);
        }
        if compile {
            JsError::Compile(message)
        } else {
            JsError::Runtime(message)
        }
    }

    /// Runs `source` at the top level (function declarations, helpers).
    pub fn run(&self, source: &str) -> Result<(), JsError> {
        self.arm();
        let result = self.context.with(|ctx| ctx.eval::<(), _>(source).catch(&ctx).map_err(|e| with_position(&e)));
        let out = result.map_err(|m| self.classify(m, true));
        self.disarm();
        out
    }

    /// Compiles `source`, an expression that evaluates to a function, and keeps it as the global `name`.
    pub fn define(&self, name: &str, source: &str) -> Result<(), JsError> {
        self.arm();
        let result = self.context.with(|ctx| {
            let value: Value = ctx.eval(source).catch(&ctx).map_err(|e| caught_message(&e))?;
            if !value.is_function() {
                return Err("the script does not evaluate to a function".to_owned());
            }
            ctx.globals().set(name, value).map_err(|e| e.to_string())
        });
        let out = result.map_err(|m| self.classify(m, true));
        self.disarm();
        out
    }

    /// Calls the global function `name` with `this` and one argument both set to the JSON document; returns
    /// the result as JSON text (`null` for undefined).
    pub fn call_with_document(&self, name: &str, document_json: &str) -> Result<String, JsError> {
        self.call_with_documents(name, &[document_json])
    }

    /// Calls the global function `name` with the JSON arguments (`this` is the first); returns the result as
    /// JSON text (`null` for undefined).
    pub fn call_with_documents(&self, name: &str, arguments_json: &[&str]) -> Result<String, JsError> {
        self.arm();
        let result = self.context.with(|ctx| {
            let function: Function = ctx.globals().get(name).map_err(|e| e.to_string())?;
            let mut arguments = Vec::with_capacity(arguments_json.len());
            for json in arguments_json {
                arguments.push(ctx.json_parse(*json).map_err(|e| e.to_string())?);
            }
            let this = arguments.first().cloned().unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            let value: Value = function.call((This(this), Rest(arguments))).catch(&ctx).map_err(|e| caught_message(&e))?;
            let text = ctx.json_stringify(value).catch(&ctx).map_err(|e| caught_message(&e))?;
            Ok(match text {
                Some(s) => s.to_string().map_err(|e| e.to_string())?,
                None => "null".to_owned(),
            })
        });
        let out = result.map_err(|m: String| self.classify(m, false));
        self.disarm();
        out
    }
}

/// Whether a call that has seen `polls` interrupt polls ran past a limit of `limit` steps (0: none). The
/// first poll of a call comes after an unknown part of a period (the counter carries over), so only the
/// periods after it are surely the call's own.
fn over_steps(limit: u64, polls: u64) -> bool {
    limit != 0 && polls >= 2 && (polls - 1) * STEPS_PER_POLL >= limit
}

/// The message of a script that did not compile, with the line and column QuickJS's stack names
/// (`at <eval>:3:14`), so an editor can point at the mistake.
fn with_position(error: &CaughtError<'_>) -> String {
    let message = caught_message(error);
    let CaughtError::Exception(e) = error else { return message };
    let position = e.stack().and_then(|stack| {
        let at = stack.lines().next()?.trim().strip_prefix("at ")?;
        let mut parts = at.rsplitn(3, ':');
        let column: u32 = parts.next()?.trim_end_matches(')').parse().ok()?;
        let line: u32 = parts.next()?.parse().ok()?;
        Some((line, column))
    });
    match position {
        Some((line, column)) if !message.contains(" line ") => format!("{message} (line {line}, column {column})"),
        _ => message,
    }
}

fn caught_message(error: &CaughtError<'_>) -> String {
    match error {
        CaughtError::Exception(e) => match (e.message(), e.stack()) {
            (Some(m), _) if !m.is_empty() => m,
            (_, Some(s)) => s,
            _ => "uncaught exception".to_owned(),
        },
        CaughtError::Value(v) => format!("uncaught value {v:?}"),
        CaughtError::Error(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sandbox() -> Sandbox {
        Sandbox::new(Limits { time: Duration::from_millis(200), memory_bytes: 16 << 20 }).unwrap()
    }

    #[test]
    fn calls_a_function_with_a_document() {
        let js = sandbox();
        js.run("function upper(s) { return s.toUpperCase(); }").unwrap();
        js.define("project", "(function(u) { return { Name: upper(u.Name), Twice: this.Age * 2 }; })").unwrap();
        assert_eq!(js.call_with_document("project", r#"{"Name":"jo","Age":21}"#).unwrap(), r#"{"Name":"JO","Twice":42}"#);
    }

    #[test]
    fn passes_several_documents() {
        let js = sandbox();
        js.define("f", "(function(o, c) { return { Total: o.Total, Company: c === null ? null : c.Name }; })").unwrap();
        assert_eq!(js.call_with_documents("f", &[r#"{"Total":5}"#, r#"{"Name":"Acme"}"#]).unwrap(), r#"{"Total":5,"Company":"Acme"}"#);
        assert_eq!(js.call_with_documents("f", &[r#"{"Total":5}"#, "null"]).unwrap(), r#"{"Total":5,"Company":null}"#);
    }

    #[test]
    fn syntax_errors_are_compile_errors() {
        let js = sandbox();
        assert!(matches!(js.define("f", "(function( {"), Err(JsError::Compile(_))));
        assert!(matches!(js.define("f", "42"), Err(JsError::Compile(_))));
    }

    #[test]
    fn compile_errors_of_top_level_scripts_name_their_line() {
        let js = sandbox();
        let Err(JsError::Compile(message)) = js.run("map('Users', function (u) {\nreturn { Name: u.Name \n})") else {
            panic!("a syntax error is a compile error")
        };
        assert!(message.contains("(line 3, column"), "{message}");
    }

    #[test]
    fn infinite_loops_hit_the_time_limit_and_the_sandbox_survives() {
        let js = sandbox();
        js.define("spin", "(function() { while (true) {} })").unwrap();
        let started = Instant::now();
        assert!(matches!(js.call_with_document("spin", "{}"), Err(JsError::Timeout(200))));
        assert!(started.elapsed() < Duration::from_secs(2));
        js.define("ok", "(function(d) { return d.a; })").unwrap();
        assert_eq!(js.call_with_document("ok", r#"{"a":1}"#).unwrap(), "1");
    }

    #[test]
    fn the_limit_counts_cpu_time_not_time_spent_waiting_for_a_cpu() {
        // A host call that sleeps 300 ms (as a thread waiting for a CPU would) does not count against the
        // 200 ms limit; only the script's own CPU does.
        struct Sleeper;
        impl Host for Sleeper {
            fn call(&mut self, _op: &str, _arguments_json: &str) -> Result<String, String> {
                std::thread::sleep(Duration::from_millis(300));
                Ok("1".into())
            }
        }
        let js = sandbox();
        // After the wait the script computes a little, so the limit is checked past the 300 ms.
        js.define("slow", "(function() { let r = __host('sleep', []); for (let i = 0; i < 200000; i++) { r = (r * 7) % 13 + 1; } return r > 0 ? 1 : 0; })")
            .unwrap();
        let started = Instant::now();
        assert_eq!(js.call_with_host("slow", &["{}"], &mut Sleeper).unwrap(), "1");
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[test]
    fn a_cancelled_call_stops_at_once_and_later_calls_are_refused() {
        let cancel = Arc::new(AtomicBool::new(false));
        let js = Sandbox::cancellable(Limits { time: Duration::from_secs(30), memory_bytes: 16 << 20 }, cancel.clone()).unwrap();
        js.define("spin", "(function() { while (true) {} })").unwrap();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            cancel.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        assert_eq!(js.call_with_document("spin", "{}"), Err(JsError::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(5));
        setter.join().unwrap();
    }

    #[test]
    fn unbounded_allocation_hits_the_memory_limit_and_the_sandbox_survives() {
        let js = sandbox();
        js.define("grow", "(function() { let a = []; while (true) { a.push(new Array(10000).fill(1)); } })").unwrap();
        let err = js.call_with_document("grow", "{}").unwrap_err();
        assert_eq!(err, JsError::OutOfMemory(16 << 20));
        js.define("ok", "(function(d) { return d.a + 1; })").unwrap();
        assert_eq!(js.call_with_document("ok", r#"{"a":1}"#).unwrap(), "2");
    }

    #[test]
    fn a_script_throwing_null_is_not_out_of_memory() {
        let js = sandbox();
        js.define("grow", "(function() { try { let a = []; while (true) { a.push(new Array(10000).fill(1)); } } catch (e) {} })").unwrap();
        assert_eq!(js.call_with_document("grow", "{}").unwrap(), "null", "a script may recover from running out of memory");
        js.define("raise", "(function() { throw null; })").unwrap();
        assert!(matches!(js.call_with_document("raise", "{}"), Err(JsError::Runtime(_))));
    }

    struct Echo(Vec<String>);

    impl Host for Echo {
        fn call(&mut self, op: &str, arguments_json: &str) -> Result<String, String> {
            self.0.push(format!("{op}{arguments_json}"));
            match op {
                "twice" => {
                    let n: Vec<f64> = serde_json::from_str(arguments_json).map_err(|e| e.to_string())?;
                    Ok((n[0] * 2.0).to_string())
                }
                _ => Err(format!("no such op {op}")),
            }
        }
    }

    #[test]
    fn scripts_call_the_host_and_see_its_errors() {
        let js = sandbox();
        js.define("f", "(function(d) { return { a: __host('twice', [d.n]) }; })").unwrap();
        let mut host = Echo(Vec::new());
        assert_eq!(js.call_with_host("f", &[r#"{"n":21}"#], &mut host).unwrap(), r#"{"a":42}"#);
        assert_eq!(host.0, vec!["twice[21]".to_owned()]);
        js.define("g", "(function() { try { __host('nope'); } catch (e) { return e.message; } })").unwrap();
        assert_eq!(js.call_with_host("g", &["{}"], &mut host).unwrap(), r#""no such op nope""#);
        // Without a host the call fails inside the script, not in Rust.
        assert!(matches!(js.call_with_document("f", r#"{"n":1}"#), Err(JsError::Runtime(m)) if m.contains("not available")));
    }

    #[test]
    fn a_step_limit_stops_long_loops_and_lets_short_scripts_run() {
        let js = Sandbox::new(Limits { time: Duration::from_secs(30), memory_bytes: 16 << 20 }).unwrap();
        js.set_step_limit(Some(10_000));
        js.define("spin", "(function() { let n = 0; for (let i = 0; i < 1e6; i++) { n += i; } return n; })").unwrap();
        assert_eq!(js.call_with_document("spin", "{}"), Err(JsError::StepLimit(10_000)));
        js.define("short", "(function(d) { let n = 0; for (let i = 0; i < 100; i++) { n += i; } return n + d.a; })").unwrap();
        // Many short calls never add up: the count starts again with each call.
        for _ in 0..1000 {
            assert_eq!(js.call_with_document("short", r#"{"a":1}"#).unwrap(), "4951");
        }
        js.set_step_limit(None);
        assert_eq!(js.call_with_document("spin", "{}").unwrap(), "499999500000");
    }

    #[test]
    fn thrown_errors_are_runtime_errors() {
        let js = sandbox();
        js.define("bad", "(function() { throw new Error('nope'); })").unwrap();
        assert_eq!(js.call_with_document("bad", "{}"), Err(JsError::Runtime("nope".into())));
    }
}
