//! When an index has failed too often to be trusted, it becomes errored: it stops indexing and its queries
//! fail until it is reset, enabled again or redefined. The rule is RavenDB's (`IndexFailureInformation`):
//! more than 15% of the map and reduce attempts failed, judged once there were more than 100 attempts, or,
//! once the index has caught up, after 6 attempts, or after any number if every attempt failed.

/// The share of failed attempts above which an index is errored.
const FAILURE_THRESHOLD: f64 = 0.15;
/// Attempts after which the failure rate is judged even while the index is still catching up.
const SUFFICIENT_ATTEMPTS: u64 = 100;
/// Attempts after which a caught-up index's failure rate is judged.
const MINIMAL_ATTEMPTS: u64 = 6;

/// Map and reduce attempts of an index and how many of them failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Documents given to the maps.
    pub map_attempts: u64,
    /// Documents whose map failed.
    pub map_errors: u64,
    /// Reduce keys given to the reduce.
    pub reduce_attempts: u64,
    /// Reduce keys whose reduce failed.
    pub reduce_errors: u64,
}

impl Attempts {
    fn total(&self) -> (u64, u64) {
        (self.map_attempts + self.reduce_attempts, self.map_errors + self.reduce_errors)
    }

    /// Whether the failures make the index errored; `caught_up` is false while documents wait to be indexed.
    pub fn make_index_errored(&self, caught_up: bool) -> bool {
        let (attempts, errors) = self.total();
        if attempts == 0 || errors == 0 {
            return false;
        }
        let too_many = errors as f64 / attempts as f64 > FAILURE_THRESHOLD;
        if attempts > SUFFICIENT_ATTEMPTS {
            return too_many;
        }
        if !caught_up {
            return false;
        }
        if attempts >= MINIMAL_ATTEMPTS {
            return too_many;
        }
        attempts == errors
    }

    /// RavenDB's explanation of an errored index (its clients' tests look for "is invalid, out of").
    pub fn explain(&self, index: &str) -> String {
        let (attempts, errors) = self.total();
        let rate = 100.0 * errors as f64 / attempts.max(1) as f64;
        if self.reduce_attempts == 0 {
            format!(
                "Index {index} is invalid, out of {} map attempts, {} has failed. Error rate of {rate:.2}% exceeds allowed 15% error rate",
                self.map_attempts, self.map_errors
            )
        } else {
            format!(
                "Index {index} is invalid, out of {} map attempts and {} reduce attempts, {} and {} has failed respectively. \
                 Error rate of {rate:.2}% exceeds allowed 15% error rate",
                self.map_attempts, self.reduce_attempts, self.map_errors, self.reduce_errors
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps(attempts: u64, errors: u64) -> Attempts {
        Attempts { map_attempts: attempts, map_errors: errors, reduce_attempts: 0, reduce_errors: 0 }
    }

    #[test]
    fn a_high_failure_rate_errors_the_index_once_judged() {
        assert!(!maps(0, 0).make_index_errored(true));
        assert!(!maps(1000, 150).make_index_errored(false), "15% is allowed");
        assert!(maps(1000, 151).make_index_errored(false));
        assert!(!maps(100, 99).make_index_errored(false), "100 attempts are not enough while catching up");
        assert!(maps(100, 99).make_index_errored(true));
        assert!(!maps(5, 4).make_index_errored(true), "too few attempts, and not all failed");
        assert!(maps(1, 1).make_index_errored(true), "every attempt failed");
        assert!(!maps(11, 1).make_index_errored(true));
        let reduces = Attempts { map_attempts: 50, map_errors: 0, reduce_attempts: 60, reduce_errors: 30 };
        assert!(reduces.make_index_errored(false));
        assert!(reduces.explain("R").contains("out of 50 map attempts and 60 reduce attempts, 0 and 30 has failed"));
        assert!(maps(10, 9).explain("I").starts_with("Index I is invalid, out of 10 map attempts, 9 has failed. Error rate of 90.00%"));
    }
}
