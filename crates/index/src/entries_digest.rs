//! A digest of what an index holds, independent of how its entries are laid out in segments: every
//! (entry key, tantivy field, term) of the live entries is hashed (BLAKE2b-128) and the hashes are added
//! modulo 2^128, so the same entries give the same digest whatever the commit points, segment merges or
//! deletes that led to them. Used to check that a replayed indexing trace rebuilds the live index exactly
//! (`corvid replay-trace`). It covers the indexed terms (every inverted field, the key included); the
//! stored-only columns (doubles, sort keys, facet values, spatial columns) are derived from the same values.

use blake2::digest::consts::U16;
use blake2::{Blake2b, Digest};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED};

use crate::{DocumentIndex, IndexError};

/// The digest of a set of entries: how many (key, field, term) triples it holds and their hashes' sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntriesDigest {
    /// Live entries.
    pub entries: u64,
    /// (key, field, term) triples hashed.
    pub terms: u64,
    /// The sum of their hashes, modulo 2^128.
    pub sum: u128,
}

impl EntriesDigest {
    /// Adds one (key, field, term) triple; the order of additions does not matter.
    pub fn add(&mut self, key: &[u8], field: &str, term: &[u8]) {
        let mut hasher = Blake2b::<U16>::new();
        for part in [key, field.as_bytes(), term] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let hash: [u8; 16] = hasher.finalize().into();
        self.sum = self.sum.wrapping_add(u128::from_le_bytes(hash));
        self.terms += 1;
    }

    /// The digest as text: `<entries>:<terms>:<sum in hex>`.
    pub fn text(&self) -> String {
        format!("{}:{}:{:032x}", self.entries, self.terms, self.sum)
    }
}

impl DocumentIndex {
    /// The digest of the committed entries (see the module documentation). Reads every term of every
    /// segment: for tools and tests, not for request paths.
    pub fn entries_digest(&self) -> Result<EntriesDigest, IndexError> {
        let searcher = self.reader.searcher();
        let schema = searcher.schema().clone();
        let mut digest = EntriesDigest { entries: searcher.num_docs(), ..EntriesDigest::default() };
        for segment in searcher.segment_readers() {
            let Some(keys) = segment.fast_fields().str(crate::schema::KEY_FIELD)? else { continue };
            let key_of = |doc: u32| -> Option<String> {
                let ord = keys.ords().first(doc)?;
                let mut key = String::new();
                keys.ord_to_str(ord, &mut key).ok()?.then_some(key)
            };
            let alive = segment.alive_bitset();
            let mut doc_keys: Vec<Option<String>> = Vec::with_capacity(segment.max_doc() as usize);
            for doc in 0..segment.max_doc() {
                let live = alive.is_none_or(|bits| bits.is_alive(doc));
                doc_keys.push(if live { key_of(doc) } else { None });
            }
            for (field, entry) in schema.fields() {
                if !entry.is_indexed() {
                    continue;
                }
                let inverted = segment.inverted_index(field)?;
                let mut terms = inverted.terms().stream()?;
                while terms.advance() {
                    let term = terms.key().to_vec();
                    let mut postings = inverted.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                    let mut doc = postings.doc();
                    while doc != TERMINATED {
                        if let Some(Some(key)) = doc_keys.get(doc as usize) {
                            digest.add(key.as_bytes(), entry.name(), &term);
                        }
                        doc = postings.advance();
                    }
                }
            }
        }
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_of_additions_does_not_matter() {
        let (mut a, mut b) = (EntriesDigest::default(), EntriesDigest::default());
        a.add(b"users/1", "f0", b"ann");
        a.add(b"users/2", "f0", b"bob");
        b.add(b"users/2", "f0", b"bob");
        b.add(b"users/1", "f0", b"ann");
        assert_eq!(a, b);
        let mut c = EntriesDigest::default();
        c.add(b"users/1", "f0", b"bob");
        c.add(b"users/2", "f0", b"ann");
        assert_ne!(a.sum, c.sum);
    }
}
