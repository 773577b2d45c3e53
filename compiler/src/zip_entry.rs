//! Reading zip entries (`.pt2` archives, `.npz` files) whole, with their declared sizes checked
//! against the file before anything is allocated or inflated.

use std::io::{Read, Seek, SeekFrom};

/// Deflate expands at most 1032:1 (one 258-byte match per 2 bits); the slack covers the few
/// bytes a tiny stream needs for its headers.
const MAX_DEFLATE_RATIO: u64 = 1032;
const SLACK: u64 = 64;

/// The bytes of `entry` (stored or deflated) from a zip file of `file_len` bytes. A size the
/// entry declares that the file cannot hold, or that inflating does not reproduce, is an error.
pub fn read_entry<R: Read>(entry: &mut zip::read::ZipFile<'_, R>, file_len: u64) -> Result<Vec<u8>, String> {
    let (size, packed) = (entry.size(), entry.compressed_size());
    let ratio = if entry.compression() == zip::CompressionMethod::Stored { 1 } else { MAX_DEFLATE_RATIO };
    if packed > file_len || size > packed.saturating_mul(ratio).saturating_add(SLACK) {
        return Err(format!(
            "declares {size} bytes ({packed} compressed) in a file of {file_len} bytes, more than {} can hold",
            if ratio == 1 { "the file" } else { "deflate" }
        ));
    }
    let mut v = Vec::with_capacity(size as usize);
    // One byte past the declared size: an entry that inflates to more is caught, not read on.
    entry.take(size + 1).read_to_end(&mut v).map_err(|e| format!("cannot be read: {e}"))?;
    if v.len() as u64 != size {
        return Err(format!("declares {size} bytes but holds {}", v.len()));
    }
    Ok(v)
}

/// An error if the zip's end record declares more entries than it has distinct names: the zip
/// reader keeps only the last entry of a name, so a duplicate would silently replace another.
pub fn check_unique_names<R: Read + Seek>(mut r: R, distinct: usize) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let len = r.seek(SeekFrom::End(0)).map_err(io)?;
    // The end record (22 bytes) is followed by a comment of at most 65535 bytes.
    let tail = len.min(22 + 65535);
    r.seek(SeekFrom::Start(len - tail)).map_err(io)?;
    let mut buf = vec![0; tail as usize];
    r.read_exact(&mut buf).map_err(io)?;
    let declared = buf
        .windows(4)
        .rposition(|w| w == b"PK\x05\x06")
        .and_then(|at| buf.get(at + 10..at + 12))
        .map(|n| u16::from_le_bytes([n[0], n[1]]));
    match declared {
        // 0xFFFF: a zip64 count, which the zip reader has checked against its own.
        Some(n) if n != 0xFFFF && n as usize != distinct => {
            Err(format!("has {n} entries but only {distinct} distinct names: two entries share a name"))
        }
        _ => Ok(()),
    }
}
