//! Decompression of one LZ4 block (the raw block format, no frame): RavenDB compresses the older bits of a
//! full time-series segment this way. Only reading is needed, as Corvid writes segments uncompressed.

/// Inflates `input` into exactly `output_len` bytes, or says why it cannot.
pub(crate) fn decompress(input: &[u8], output_len: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(output_len);
    let mut i = 0;
    let byte = |i: usize| input.get(i).copied().ok_or_else(|| "the LZ4 block ends early".to_owned());
    while i < input.len() {
        let token = byte(i)?;
        i += 1;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            loop {
                let more = byte(i)?;
                i += 1;
                literals += usize::from(more);
                if more != 255 {
                    break;
                }
            }
        }
        let end = i.checked_add(literals).filter(|&e| e <= input.len()).ok_or("an LZ4 literal run passes the block's end")?;
        out.extend_from_slice(&input[i..end]);
        i = end;
        if i == input.len() {
            break; // the last sequence has literals only
        }
        let offset = usize::from(byte(i)?) | usize::from(byte(i + 1)?) << 8;
        i += 2;
        if offset == 0 || offset > out.len() {
            return Err(format!("an LZ4 match refers {offset} bytes back, before the block's start"));
        }
        let mut length = usize::from(token & 0x0F);
        if length == 15 {
            loop {
                let more = byte(i)?;
                i += 1;
                length += usize::from(more);
                if more != 255 {
                    break;
                }
            }
        }
        length += 4;
        if out.len() + length > output_len {
            return Err("the LZ4 block inflates past its stated size".into());
        }
        // Byte by byte: a match may overlap the bytes it produces.
        let from = out.len() - offset;
        for k in 0..length {
            let b = out[from + k];
            out.push(b);
        }
    }
    if out.len() != output_len {
        return Err(format!("the LZ4 block inflates to {} bytes, not the {output_len} stated", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflates_literals_and_overlapping_matches() {
        // "abc" then a match of 9 bytes 3 back ("abcabcabc"), then the literal "xyz".
        let block = [0x35, b'a', b'b', b'c', 3, 0, 0x30, b'x', b'y', b'z'];
        assert_eq!(decompress(&block, 15).unwrap(), b"abcabcabcabcxyz");
        assert!(decompress(&block, 14).is_err());
        assert!(decompress(&[0x10, b'a', 9, 0], 10).is_err(), "a match before the start");
        assert!(decompress(&[0x50, b'a'], 5).is_err(), "truncated literals");
    }
}
