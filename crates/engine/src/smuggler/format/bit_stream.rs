//! Bit streams as RavenDB's time-series segments hold them: values written most significant bit first,
//! packed from the high bit of each byte down.

/// Appends values of up to 64 bits.
#[derive(Debug, Clone, Default)]
pub(crate) struct BitWriter {
    bytes: Vec<u8>,
    bits: usize,
}

impl BitWriter {
    /// Bits written so far.
    pub fn len(&self) -> usize {
        self.bits
    }

    /// The written bits, the last byte padded with zero bits.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Writes the low `count` bits of `value`, the highest of them first.
    pub fn write(&mut self, value: u64, count: usize) {
        debug_assert!(count <= 64);
        for i in (0..count).rev() {
            let bit = (value >> i) & 1;
            if self.bits.is_multiple_of(8) {
                self.bytes.push(0);
            }
            if bit == 1 {
                let last = self.bytes.len() - 1;
                self.bytes[last] |= 1 << (7 - (self.bits % 8));
            }
            self.bits += 1;
        }
    }

    /// Drops what was written after the first `bits` bits (an entry that did not fit).
    pub fn truncate(&mut self, bits: usize) {
        if bits >= self.bits {
            return;
        }
        self.bits = bits;
        self.bytes.truncate(bits.div_ceil(8));
        if !bits.is_multiple_of(8) {
            let last = self.bytes.len() - 1;
            self.bytes[last] &= 0xFFu8 << (8 - bits % 8);
        }
    }
}

/// Reads values back from `len` bits of `bytes`; reading past them is an error, not a panic.
pub(crate) struct BitReader<'a> {
    bytes: &'a [u8],
    len: usize,
    position: usize,
}

impl<'a> BitReader<'a> {
    /// A reader of the first `len` bits of `bytes` (`len` is cut to what `bytes` holds).
    pub fn new(bytes: &'a [u8], len: usize) -> BitReader<'a> {
        BitReader { bytes, len: len.min(bytes.len() * 8), position: 0 }
    }

    /// Bits read so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Whether bits are left.
    pub fn has_more(&self) -> bool {
        self.position < self.len
    }

    /// The next `count` bits (at most 64) as a number; None past the end.
    pub fn read(&mut self, count: usize) -> Option<u64> {
        if count > 64 || self.position + count > self.len {
            return None;
        }
        let mut value = 0u64;
        for _ in 0..count {
            let byte = self.bytes[self.position / 8];
            value = (value << 1) | u64::from((byte >> (7 - self.position % 8)) & 1);
            self.position += 1;
        }
        Some(value)
    }

    /// The number of one bits before the first zero bit, reading at most `limit` bits.
    pub fn ones_before_zero(&mut self, limit: usize) -> Option<usize> {
        for ones in 0..limit {
            if self.read(1)? == 0 {
                return Some(ones);
            }
        }
        Some(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_high_bits_first_and_reads_them_back() {
        let mut w = BitWriter::default();
        w.write(0b1, 1);
        w.write(0b011, 3);
        w.write(0xABCD, 16);
        assert_eq!(w.len(), 20);
        assert_eq!(w.bytes(), &[0b1011_1010, 0b1011_1100, 0b1101_0000]);
        let mut r = BitReader::new(w.bytes(), w.len());
        assert_eq!((r.read(1), r.read(3), r.read(16)), (Some(1), Some(3), Some(0xABCD)));
        assert_eq!(r.read(1), None, "past the last bit");
        w.truncate(5);
        assert_eq!((w.len(), w.bytes()), (5, &[0b1011_1000][..]));
        let mut r = BitReader::new(&[0b1110_1111], 8);
        assert_eq!(r.ones_before_zero(4), Some(3));
        assert_eq!(r.ones_before_zero(4), Some(4));
    }
}
