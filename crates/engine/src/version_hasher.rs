//! The one hash whose values leave the process (HTTP `ETag`s, index directory names, random-order seeds),
//! so it must not change between builds or platforms.

/// FNV-1a, stable across builds and platforms (unlike std's hasher).
pub(crate) struct VersionHasher(u64);

impl VersionHasher {
    /// The hash of one string.
    pub fn of(text: &str) -> u64 {
        let mut hasher = VersionHasher::new();
        hasher.add(text.as_bytes());
        hasher.finish()
    }

    /// A hasher that has seen nothing yet.
    pub fn new() -> Self {
        VersionHasher(0xcbf2_9ce4_8422_2325)
    }

    /// Adds one value and a separator, so that ("ab", "c") and ("a", "bc") hash differently.
    pub fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }

    /// The hash of everything added so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}
