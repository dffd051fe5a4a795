//! sprig's `b64dec` and `b32dec` over Go's `encoding/base64` and `encoding/base32` decoders.
//!
//! sprig returns the decoder's error text as the function's value, so the byte Go names in
//! `illegal base64 data at input byte N` is output, and it is where Go's quantum-by-quantum
//! decoder stops (the start of an unfinished quantum, a stray padding character), which the
//! base64 crate words differently. Hence the decoders here follow Go's, error offsets included;
//! encoding is the same in both and comes from the crate (base32 is written here: it is short
//! and no crate in the tree has it).

use base64::Engine;

const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `b64enc`: Go's `base64.StdEncoding`.
pub fn b64enc(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `b64dec`: the decoded bytes, or the byte offset Go's decoder reports. Newlines are skipped.
pub fn b64dec(text: &str) -> Result<Vec<u8>, usize> {
    let src = text.as_bytes();
    let mut out = Vec::new();
    let mut si = 0;
    loop {
        let (next, bytes) = b64_quantum(src, si)?;
        out.extend_from_slice(&bytes);
        if next >= src.len() || bytes.len() < 3 {
            return Ok(out);
        }
        si = next;
    }
}

/// Go's `decodeQuantum`: up to four characters from `si`, into up to three bytes.
fn b64_quantum(src: &[u8], mut si: usize) -> Result<(usize, Vec<u8>), usize> {
    let skip_newlines = |si: &mut usize| {
        while *si < src.len() && matches!(src[*si], b'\n' | b'\r') {
            *si += 1;
        }
    };
    let mut buf = [0u32; 4];
    let mut len = 4;
    let mut j = 0;
    while j < 4 {
        if si == src.len() {
            if j == 0 {
                return Ok((si, Vec::new()));
            }
            return Err(si - j);
        }
        let c = src[si];
        si += 1;
        if let Some(v) = B64.iter().position(|x| *x == c) {
            buf[j] = v as u32;
            j += 1;
            continue;
        }
        if matches!(c, b'\n' | b'\r') {
            continue;
        }
        if c != b'=' || j < 2 {
            return Err(si - 1);
        }
        if j == 2 {
            // "==" is expected; the first is read.
            skip_newlines(&mut si);
            if si == src.len() {
                return Err(src.len());
            }
            if src[si] != b'=' {
                return Err(si - 1);
            }
            si += 1;
        }
        skip_newlines(&mut si);
        if si < src.len() {
            return Err(si); // trailing garbage
        }
        len = j;
        break;
    }
    let val = buf[0] << 18 | buf[1] << 12 | buf[2] << 6 | buf[3];
    let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
    Ok((si, bytes[..len - 1].to_vec()))
}

/// `b32enc`: RFC 4648 base32 with padding, as Go's `base32.StdEncoding`.
pub fn b32enc(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(B32[((bits >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `b32dec`: the decoded bytes, or the byte offset Go's decoder reports (newlines removed
/// first, as Go's `DecodeString` does).
pub fn b32dec(text: &str) -> Result<Vec<u8>, usize> {
    let src: Vec<u8> = text
        .bytes()
        .filter(|c| !matches!(c, b'\n' | b'\r'))
        .collect();
    let olen = src.len();
    let mut rest = &src[..];
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut buf = [0u64; 8];
        let mut len = 8;
        let mut j = 0;
        while j < 8 {
            let Some((&c, tail)) = rest.split_first() else {
                return Err(olen - j); // missing padding
            };
            rest = tail;
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 7 {
                    return Err(olen); // not enough padding
                }
                for k in 0..7 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(olen - rest.len() + k - 1);
                    }
                }
                (len, end) = (j, true);
                // One, three or six characters do not make a byte (RFC 4648 section 6).
                if matches!(len, 1 | 3 | 6) {
                    return Err(olen - rest.len() - 1);
                }
                break;
            }
            buf[j] = B32
                .iter()
                .position(|x| *x == c)
                .ok_or(olen - rest.len() - 1)? as u64;
            j += 1;
        }
        let bits = buf.iter().fold(0u64, |acc, v| acc << 5 | v);
        let bytes = bits.to_be_bytes();
        let n = match len {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            _ => 1,
        };
        out.extend_from_slice(&bytes[3..3 + n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders_fail_where_go_fails() {
        assert_eq!(b64dec("aGVsbG8=").as_deref(), Ok(&b"hello"[..]));
        assert_eq!(b64dec("aGVs\nbG8=").as_deref(), Ok(&b"hello"[..]));
        assert_eq!(b64dec("lit"), Err(0));
        assert_eq!(b64dec("!!"), Err(0));
        assert_eq!(b64dec("aGVsbG8=x"), Err(8));
        assert_eq!(b32enc(b"hi"), "NBUQ====");
        assert_eq!(b32dec("NBUQ====").as_deref(), Ok(&b"hi"[..]));
        assert_eq!(b32dec("hello"), Err(0));
        assert_eq!(b32dec("NBUQ"), Err(0));
    }
}
