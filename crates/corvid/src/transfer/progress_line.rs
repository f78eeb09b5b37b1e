//! Progress on stderr: one line rewritten in place on a terminal, a plain line every few seconds otherwise
//! (logs and scripts).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Plain progress lines are written at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(5);
/// A terminal line is redrawn at most this often.
const TERMINAL_EVERY: Duration = Duration::from_millis(200);

pub struct ProgressLine {
    terminal: bool,
    started: Instant,
    last: Option<Instant>,
}

impl ProgressLine {
    /// Starts the clock of the rate shown.
    pub fn start() -> ProgressLine {
        ProgressLine { terminal: std::io::stderr().is_terminal(), started: Instant::now(), last: None }
    }

    /// Shows `items` items and `bytes` bytes moved so far, with the rate.
    pub fn show(&mut self, what: &str, items: u64, bytes: u64) {
        let every = if self.terminal { TERMINAL_EVERY } else { PLAIN_EVERY };
        if self.last.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        self.last = Some(Instant::now());
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        let mb = bytes as f64 / 1_048_576.0;
        let line = format!("{what}: {items} items, {mb:.1} MiB, {:.1} MiB/s, {:.0} s", mb / seconds, seconds);
        let mut err = std::io::stderr();
        if self.terminal {
            let _ = write!(err, "\r{line:<79}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Ends the rewritten line.
    pub fn done(&self) {
        if self.terminal && self.last.is_some() {
            eprintln!();
        }
    }
}
