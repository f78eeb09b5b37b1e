//! Per-second rates of monotonic counters, computed when monitoring asks (nothing runs on the hot paths).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Samples closer together than this keep the previous rate, so two scrapes in a row do not divide by
/// almost nothing.
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// A counter not asked about for this long (its database closed) is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

struct Sample {
    at: Instant,
    value: f64,
    rate: f64,
}

/// The last sample of each counter, by name: a rate is the change since the previous sample divided by the
/// time between them (0 the first time a counter is seen). Prometheus users get the raw counters as well and
/// may prefer `rate()` over them.
#[derive(Default)]
pub struct RateSampler {
    samples: Mutex<HashMap<String, Sample>>,
}

impl RateSampler {
    /// The per-second rate of counter `key`, whose value is now `value`.
    pub fn rate(&self, key: &str, value: f64) -> f64 {
        let now = Instant::now();
        let mut samples = self.samples.lock();
        match samples.get_mut(key) {
            Some(sample) if now.duration_since(sample.at) < MIN_INTERVAL => sample.rate,
            Some(sample) => {
                let seconds = now.duration_since(sample.at).as_secs_f64();
                // A counter that went back (its database reopened) starts over.
                sample.rate = if value >= sample.value { (value - sample.value) / seconds } else { 0.0 };
                sample.at = now;
                sample.value = value;
                sample.rate
            }
            None => {
                if samples.len() > 1024 {
                    samples.retain(|_, s| now.duration_since(s.at) < FORGET_AFTER);
                }
                samples.insert(key.to_owned(), Sample { at: now, value, rate: 0.0 });
                0.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_is_zero_and_close_samples_keep_the_rate() {
        let sampler = RateSampler::default();
        assert_eq!(sampler.rate("a", 10.0), 0.0);
        assert_eq!(sampler.rate("a", 50.0), 0.0, "within a second: the previous rate");
        sampler.samples.lock().get_mut("a").unwrap().at -= Duration::from_secs(2);
        let rate = sampler.rate("a", 30.0);
        assert!((rate - 10.0).abs() < 0.5, "{rate}");
        sampler.samples.lock().get_mut("a").unwrap().at -= Duration::from_secs(2);
        assert_eq!(sampler.rate("a", 5.0), 0.0, "a counter that went back starts over");
    }
}
