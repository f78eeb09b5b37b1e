//! Zero-filling of preallocated file space, one page per write.
//!
//! Linux (6.x, large folios on ext4) keeps what a write brings into the page cache as folios as large as the
//! write. A small write that later lands in a large folio makes ext4 walk every block of that folio, twice
//! per write: with zeros written 256 KiB at a time ahead of LMDB's pages, that walk was 25-35% of the merger
//! thread's time under revision-heavy writes. Page-sized writes keep the folios page-sized.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The page size every Corvid file is written in (LMDB's page size on the platforms Corvid runs on).
const PAGE: usize = 4096;

/// Writes zeros over `start..end` of `file`, a page per write.
pub(crate) fn write_zeros(file: &File, start: u64, end: u64) -> std::io::Result<()> {
    let zeros = [0u8; PAGE];
    let mut offset = start;
    while offset < end {
        // The first write ends on a page boundary, so the later ones are page-aligned.
        let n = (PAGE as u64 - offset % PAGE as u64).min(end - offset) as usize;
        file.write_all_at(&zeros[..n], offset)?;
        offset += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn writes_zeros_over_exactly_the_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.write_all_at(&[7u8; 3 * PAGE], 0).unwrap();
        write_zeros(&file, 100, 2 * PAGE as u64 + 5).unwrap();
        let mut bytes = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut bytes).unwrap();
        assert!(bytes[..100].iter().all(|b| *b == 7));
        assert!(bytes[100..2 * PAGE + 5].iter().all(|b| *b == 0));
        assert!(bytes[2 * PAGE + 5..].iter().all(|b| *b == 7));
        write_zeros(&file, 3 * PAGE as u64, 5 * PAGE as u64).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 5 * PAGE as u64);
    }
}
