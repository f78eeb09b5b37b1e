//! The request log: `<time>  INFO Request #  12: GET -    31 ms - 200 - /path?query` per request (or per
//! slow request), written without allocating into a shared buffer that a background thread hands to the log
//! sink (stderr, the log files, live watchers: `logs`) every 100 ms. A request never waits for stderr: while it is blocked and the buffer is full, lines are
//! dropped and the number dropped is logged once it drains.

use std::io::Write;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use parking_lot::{Condvar, Mutex};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

/// Lines wait at most this long before they reach stderr.
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// Past this much buffered text the writer is woken at once.
const WAKE_AT_BYTES: usize = 64 << 10;
/// Past this much buffered text (stderr blocked) lines are dropped.
const MAX_BUFFERED_BYTES: usize = 4 << 20;
/// The time format of the other log lines (tracing's), so the log reads as one.
const TIMESTAMP: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

pub struct RequestLog {
    /// Only requests that took at least this long are logged.
    slower_than: Duration,
    shared: Arc<Shared>,
    /// Signalled by the writer thread once it has written everything after `close`.
    finished: Mutex<Option<mpsc::Receiver<()>>>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
}

#[derive(Default)]
struct Pending {
    text: Vec<u8>,
    dropped: u64,
    closed: bool,
}

impl RequestLog {
    /// Starts the writer thread.
    pub fn start(slower_than: Duration) -> std::io::Result<RequestLog> {
        let shared = Arc::new(Shared::default());
        let (done_tx, done_rx) = mpsc::channel();
        let writer = shared.clone();
        std::thread::Builder::new().name("request-log".into()).spawn(move || {
            writer.write_until_closed(&mut crate::logs::SinkWriter);
            let _ = done_tx.send(());
        })?;
        Ok(RequestLog { slower_than, shared, finished: Mutex::new(Some(done_rx)) })
    }

    pub fn record(&self, number: u64, method: &Method, elapsed: Duration, status: u16, url: &str) {
        if elapsed < self.slower_than {
            return;
        }
        let now = time::OffsetDateTime::now_utc();
        let mut pending = self.shared.pending.lock();
        if pending.text.len() >= MAX_BUFFERED_BYTES {
            pending.dropped += 1;
            return;
        }
        let text = &mut pending.text;
        // Writing into a Vec cannot fail; the timestamp only could for a year beyond 9999.
        let _ = now.format_into(text, TIMESTAMP);
        let _ = writeln!(text, "  INFO Request #{number:>4}: {method} - {:>5} ms - {status} - {url}", elapsed.as_millis());
        if text.len() >= WAKE_AT_BYTES {
            self.shared.wake.notify_one();
        }
    }

    /// Writes what is buffered and stops the writer; waits at most `deadline` for a blocked stderr.
    pub fn close(&self, deadline: Duration) {
        self.shared.pending.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(finished) = self.finished.lock().take() {
            let _ = finished.recv_timeout(deadline);
        }
    }
}

impl Shared {
    fn write_until_closed(&self, out: &mut impl Write) {
        // Swapped with the pending buffer, so both keep their capacity and recording never allocates.
        let mut batch = Vec::with_capacity(WAKE_AT_BYTES);
        loop {
            let (dropped, closed) = {
                let mut pending = self.pending.lock();
                if pending.text.len() < WAKE_AT_BYTES && !pending.closed {
                    self.wake.wait_for(&mut pending, FLUSH_EVERY);
                }
                std::mem::swap(&mut pending.text, &mut batch);
                (std::mem::take(&mut pending.dropped), pending.closed)
            };
            if dropped > 0 {
                let _ = writeln!(batch, "request log: {dropped} lines dropped while stderr was blocked");
            }
            if !batch.is_empty() {
                let _ = out.write_all(&batch);
                let _ = out.flush();
                batch.clear();
            }
            if closed {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_the_other_log_lines_and_slow_only_skips_fast_requests() {
        let log = RequestLog { slower_than: Duration::from_millis(10), shared: Arc::default(), finished: Mutex::new(None) };
        log.record(7, &Method::GET, Duration::from_millis(3), 200, "/fast");
        log.record(12, &Method::PUT, Duration::from_millis(31), 201, "/databases/db/docs?id=a");
        log.shared.pending.lock().closed = true;
        let mut out = Vec::new();
        log.shared.write_until_closed(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("Z  INFO Request #  12: PUT -    31 ms - 201 - /databases/db/docs?id=a\n"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn a_full_buffer_drops_lines_and_says_so() {
        let log = RequestLog { slower_than: Duration::ZERO, shared: Arc::default(), finished: Mutex::new(None) };
        let url = "/x".repeat(1000);
        let lines = MAX_BUFFERED_BYTES / 2000 + 100;
        for n in 0..lines as u64 {
            log.record(n, &Method::GET, Duration::ZERO, 200, &url);
        }
        log.shared.pending.lock().closed = true;
        let mut out = Vec::new();
        log.shared.write_until_closed(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().last().unwrap().contains("lines dropped while stderr was blocked"), "{}", &text[text.len() - 200..]);
    }
}
