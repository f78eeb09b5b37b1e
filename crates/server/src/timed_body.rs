//! A request body that fails when it arrives slower than the configured minimum rate, so a client that
//! sends headers and then trickles (or stops sending) its body cannot hold a request slot forever.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::config::BodyRate;

/// The error a too slow body ends with.
#[derive(Debug, thiserror::Error)]
#[error("the request body arrived slower than {min_bytes} bytes per {window:?} of waiting")]
pub struct BodyTooSlow {
    min_bytes: u64,
    window: Duration,
}

/// Tells the request's edge that its body was cut off for being too slow (whatever the handler made of the
/// error), so the answer is a 408 that closes the connection.
#[derive(Clone, Default)]
pub struct SlowBodyFlag(Arc<AtomicBool>);

impl SlowBodyFlag {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

pub struct TimedBody {
    inner: Body,
    rate: BodyRate,
    /// Waiting time already spent in the current window, before the wait in progress.
    waited: Duration,
    /// Set while the body has nothing to give.
    waiting_since: Option<Instant>,
    received_in_window: u64,
    deadline: Pin<Box<Sleep>>,
    flag: SlowBodyFlag,
}

impl TimedBody {
    /// Wraps `body`; the flag is set if it times out.
    pub fn wrap(body: Body, rate: BodyRate) -> (Body, SlowBodyFlag) {
        let flag = SlowBodyFlag::default();
        let timed = TimedBody {
            inner: body,
            rate,
            waited: Duration::ZERO,
            waiting_since: None,
            received_in_window: 0,
            deadline: Box::pin(tokio::time::sleep(rate.window)),
            flag: flag.clone(),
        };
        (Body::new(timed), flag)
    }

    fn too_slow(&self) -> BodyTooSlow {
        BodyTooSlow { min_bytes: self.rate.min_bytes_per_window(), window: self.rate.window }
    }
}

impl hyper::body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if this.flag.is_set() {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some(since) = this.waiting_since.take() {
                    this.waited += since.elapsed();
                }
                if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()).and_then(Frame::data_ref) {
                    this.received_in_window += data.len() as u64;
                    if this.received_in_window >= this.rate.min_bytes_per_window() {
                        this.received_in_window = 0;
                        this.waited = Duration::ZERO;
                    }
                }
                Poll::Ready(frame)
            }
            Poll::Pending => {
                if this.waiting_since.is_none() {
                    let now = Instant::now();
                    this.waiting_since = Some(now);
                    this.deadline.as_mut().reset(now + this.rate.window.saturating_sub(this.waited));
                }
                if this.deadline.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.flag.0.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err(axum::Error::new(this.too_slow()))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.flag.is_set() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    fn rate(window_ms: u64, per_second: u64) -> BodyRate {
        BodyRate { window: Duration::from_millis(window_ms), min_bytes_per_second: per_second }
    }

    /// A body fed by hand: each item is sent after its delay.
    fn trickle(pieces: Vec<(u64, &'static str)>) -> Body {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
        tokio::spawn(async move {
            for (delay_ms, text) in pieces {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                if tx.send(Ok(Frame::data(Bytes::from_static(text.as_bytes())))).await.is_err() {
                    return;
                }
            }
        });
        Body::new(http_body_util::StreamBody::new(tokio_stream_from(rx)))
    }

    fn tokio_stream_from(
        mut rx: tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>,
    ) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    #[tokio::test]
    async fn a_body_that_stops_is_cut_off_after_the_window() {
        let (body, flag) = TimedBody::wrap(trickle(vec![(0, "abc"), (10_000, "never")]), rate(100, 0));
        let error = axum::body::to_bytes(body, usize::MAX).await.unwrap_err();
        assert!(error.to_string().contains("slower than 1 bytes per 100ms"), "{error}");
        assert!(flag.is_set());
    }

    #[tokio::test]
    async fn a_slow_but_steady_body_is_read_to_the_end() {
        // 2 bytes per 40 ms against a minimum of 20 bytes per second, checked over 200 ms windows.
        let pieces = (0..10).map(|_| (40, "xx")).collect();
        let (body, flag) = TimedBody::wrap(trickle(pieces), rate(200, 20));
        assert_eq!(axum::body::to_bytes(body, usize::MAX).await.unwrap().len(), 20);
        assert!(!flag.is_set());
    }

    #[tokio::test]
    async fn a_trickle_below_the_rate_is_cut_off() {
        // 1 byte per 30 ms against a minimum of 100 bytes per second, checked over 200 ms windows.
        let pieces = (0..50).map(|_| (30, "x")).collect();
        let (body, flag) = TimedBody::wrap(trickle(pieces), rate(200, 100));
        assert!(axum::body::to_bytes(body, usize::MAX).await.is_err());
        assert!(flag.is_set());
    }

    #[tokio::test]
    async fn time_the_server_is_not_reading_does_not_count() {
        let (body, flag) = TimedBody::wrap(trickle(vec![(0, "a"), (0, "b"), (0, "c")]), rate(100, 1000));
        let mut body = body;
        let mut read = 0;
        while let Some(frame) = body.frame().await {
            read += frame.unwrap().into_data().unwrap().len();
            // The consumer is busy for longer than the window between reads.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert_eq!(read, 3);
        assert!(!flag.is_set());
    }
}
