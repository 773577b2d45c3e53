//! The `.pt2` archive: a zip whose entries are stored uncompressed, so weights are memory-mapped
//! in place instead of copied.

use super::ImportError;
use memmap2::Mmap;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// One archive entry: a byte range of the mapped file, or an owned copy when it was compressed.
#[derive(Clone)]
enum Bytes {
    Mapped { map: Arc<Mmap>, start: usize, len: usize },
    Owned(Arc<Vec<u8>>),
}

#[derive(Clone)]
pub struct Blob(Bytes);

impl Blob {
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Bytes::Mapped { map, start, len } => &map[*start..*start + *len],
            Bytes::Owned(v) => v,
        }
    }
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Bytes::Mapped { .. })
    }

    /// The dense row-major bytes of a tensor stored in this blob as torch lays out storage:
    /// element `offset`, element `strides` (non-negative; the caller has checked that a
    /// non-empty tensor stays inside the blob). A dense layout stays a view of the map; others
    /// are gathered into a copy.
    pub fn dense(&self, shape: &[usize], strides: &[usize], offset: usize, elem: usize) -> Blob {
        // Size-1 dims move nowhere; dropping them bounds the recursion below by log2(numel).
        let dims: Vec<(usize, usize)> =
            shape.iter().copied().zip(strides.iter().copied()).filter(|&(d, _)| d != 1).collect();
        let numel: usize = dims.iter().map(|d| d.0).product();
        let row_major = dims.iter().rev().try_fold(1usize, |want, &(d, s)| (s == want).then(|| want * d)).is_some();
        if numel == 0 {
            // An empty tensor's offset need not lie inside its storage.
            return Blob(Bytes::Owned(Arc::new(Vec::new())));
        }
        if row_major {
            let (start, len) = (offset * elem, numel * elem);
            return match &self.0 {
                Bytes::Mapped { map, start: s, .. } => Blob(Bytes::Mapped { map: map.clone(), start: s + start, len }),
                Bytes::Owned(v) => Blob(Bytes::Owned(Arc::new(v[start..start + len].to_vec()))),
            };
        }
        fn gather(src: &[u8], dims: &[(usize, usize)], at: usize, elem: usize, out: &mut Vec<u8>) {
            match dims {
                [] => out.extend_from_slice(&src[at * elem..(at + 1) * elem]),
                [(n, 1)] => out.extend_from_slice(&src[at * elem..(at + n) * elem]),
                [(n, s), rest @ ..] => (0..*n).for_each(|i| gather(src, rest, at + i * s, elem, out)),
            }
        }
        let mut out = Vec::with_capacity(numel * elem);
        gather(self.bytes(), &dims, offset, elem, &mut out);
        Blob(Bytes::Owned(Arc::new(out)))
    }
}

pub struct Archive {
    /// The top folder every entry sits under (the archive's file stem when torch wrote it).
    pub prefix: String,
    entries: BTreeMap<String, Blob>,
}

impl Archive {
    pub fn open(path: &Path) -> Result<Archive, ImportError> {
        let shown = path.display();
        let file = File::open(path).map_err(|e| ImportError::new(format!("cannot open `{shown}`: {e}")))?;
        // SAFETY: the map is read-only; a concurrent writer truncating the file is outside our control,
        // as for every mmap-based loader.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| ImportError::new(format!("cannot map `{shown}`: {e}")))?;
        let map = Arc::new(map);
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&map[..])).map_err(|e| {
            ImportError::new(format!(
                "`{shown}` is not a readable .pt2 archive (a zip written by torch.export.save): {e}. \
                 If the file was copied, check that the copy is complete."
            ))
        })?;
        crate::zip_entry::check_unique_names(std::io::Cursor::new(&map[..]), zip.len())
            .map_err(|e| ImportError::new(format!("`{shown}` {e}")))?;
        let mut entries = BTreeMap::new();
        let mut prefix: Option<String> = None;
        for i in 0..zip.len() {
            let mut f =
                zip.by_index(i).map_err(|e| ImportError::new(format!("`{shown}`: entry {i} is damaged: {e}")))?;
            let name = f.name().to_string();
            if f.enclosed_name().is_none() || name.split('/').any(|c| c == "..") || name.starts_with('/') {
                return Err(ImportError::new(format!(
                    "`{shown}` contains the entry `{name}`, which points outside the archive; refusing to read it"
                )));
            }
            if f.is_dir() {
                continue;
            }
            let top = name.split('/').next().unwrap_or("").to_string();
            if !name.contains('/') {
                return Err(ImportError::new(format!(
                    "`{shown}`: entry `{name}` is not inside a top folder, as torch.export.save writes"
                )));
            }
            match &prefix {
                None => prefix = Some(top.clone()),
                Some(p) if *p != top => {
                    return Err(ImportError::new(format!(
                        "`{shown}` has entries under two top folders (`{p}` and `{top}`)"
                    )));
                }
                _ => {}
            }
            let blob = if f.compression() == zip::CompressionMethod::Stored {
                let start = f.data_start() as usize;
                let len = f.size() as usize;
                if start.checked_add(len).is_none_or(|end| end > map.len()) {
                    return Err(ImportError::new(format!(
                        "`{shown}` is truncated: entry `{name}` runs past the end of the file"
                    )));
                }
                Blob(Bytes::Mapped { map: map.clone(), start, len })
            } else {
                let v = crate::zip_entry::read_entry(&mut f, map.len() as u64)
                    .map_err(|e| ImportError::new(format!("`{shown}`: entry `{name}` {e}")))?;
                Blob(Bytes::Owned(Arc::new(v)))
            };
            let rel = name[top.len() + 1..].to_string();
            entries.insert(rel, blob);
        }
        let prefix = prefix.ok_or_else(|| ImportError::new(format!("`{shown}` is an empty archive")))?;
        Ok(Archive { prefix, entries })
    }

    /// An entry by its path below the top folder (`models/model.json`).
    pub fn get(&self, rel: &str) -> Option<&Blob> {
        self.entries.get(rel)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(|s| s.as_str())
    }
}
