//! `.npz` input and output files (numpy's zip of `.npy` arrays) as host tensors.

use ember_ir::types::DType;
use ember_targets::cpu::HostTensor;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

/// numpy has no bfloat16: `ml_dtypes.bfloat16` (jax's, the ecosystem's convention) saves as a
/// 2-byte void, `<V2`, holding the bf16 bit pattern, and Ember reads and writes it so.
fn descr(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::BF16 => "<V2",
        DType::I64 => "<i8",
        DType::I32 => "<i4",
        DType::I16 => "<i2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        _ => return None,
    })
}

fn from_descr(s: &str) -> Option<DType> {
    // Byte order: `=` is native (little-endian here), `|` not applicable (one-byte types, voids).
    let norm = |x: &str| x.replacen(['=', '|'], "<", 1);
    DType::ALL.into_iter().find(|&d| descr(d).map(norm) == Some(norm(s)))
}

/// The complex dtypes numpy writes, by the dtype of their parts.
fn complex_descr(part: DType) -> Option<&'static str> {
    match part {
        DType::F32 => Some("<c8"),
        DType::F64 => Some("<c16"),
        _ => None,
    }
}

/// The arrays of an `.npz` file, by name. A complex64/complex128 array is its real view: f32/f64
/// (real, imaginary) pairs in a trailing dim of 2, the bytes numpy stores (and how Ember's
/// artifacts take complex inputs and return complex outputs); `complex` names those arrays.
#[derive(Debug, Default)]
pub struct Npz {
    pub arrays: BTreeMap<String, HostTensor>,
    pub complex: BTreeSet<String>,
}

impl std::ops::Deref for Npz {
    type Target = BTreeMap<String, HostTensor>;
    fn deref(&self) -> &Self::Target {
        &self.arrays
    }
}

impl std::ops::DerefMut for Npz {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.arrays
    }
}

pub fn read_npz(path: &Path) -> Result<Npz, String> {
    let shown = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open `{shown}`: {e}"))?;
    let file_len = f.metadata().map_err(|e| format!("cannot read `{shown}`: {e}"))?.len();
    let mut z = zip::ZipArchive::new(&f).map_err(|e| format!("`{shown}` is not an .npz file: {e}"))?;
    crate::zip_entry::check_unique_names(&f, z.len()).map_err(|e| format!("`{shown}` {e}"))?;
    let mut out = Npz::default();
    for i in 0..z.len() {
        let mut entry = z.by_index(i).map_err(|e| format!("`{shown}`: {e}"))?;
        let name = entry.name().strip_suffix(".npy").unwrap_or(entry.name()).to_string();
        if out.contains_key(&name) {
            return Err(format!("`{shown}` holds two arrays named `{name}`"));
        }
        let bytes =
            crate::zip_entry::read_entry(&mut entry, file_len).map_err(|e| format!("`{shown}`: `{name}` {e}"))?;
        let h = NpyHeader::parse(&bytes).map_err(|e| format!("`{shown}`: `{name}` is not a .npy array: {e}"))?;
        if h.fortran_order {
            return Err(format!("`{shown}`: `{name}` is Fortran-ordered; save it C-contiguous (np.ascontiguousarray)"));
        }
        let part = [DType::F32, DType::F64].into_iter().find(|&d| complex_descr(d) == Some(h.descr.as_str()));
        let dtype = part
            .or_else(|| from_descr(&h.descr))
            .ok_or_else(|| format!("`{shown}`: `{name}` has dtype `{}`, which Ember does not read", h.descr))?;
        let mut shape = h.shape;
        if part.is_some() {
            shape.push(2);
            out.complex.insert(name.clone());
        }
        let nbytes = shape.iter().try_fold(dtype.byte_size(), |n, &d| n.checked_mul(d));
        let data = &bytes[h.data_start..];
        if nbytes != Some(data.len()) {
            let need =
                nbytes.map(|n| format!("{n} bytes")).unwrap_or_else(|| "more bytes than memory can address".into());
            return Err(format!(
                "`{shown}`: `{name}` holds {} bytes of data, but a {} array of shape {:?} needs {need}",
                data.len(),
                match part {
                    Some(DType::F32) => "complex64",
                    Some(_) => "complex128",
                    None => dtype.torch_name(),
                },
                &shape[..shape.len() - part.is_some() as usize]
            ));
        }
        out.insert(name, HostTensor { dtype, shape, data: data.to_vec() });
    }
    Ok(out)
}

/// A `.npy` header (format versions 1 to 3). Parsed here, strictly, rather than by npyz, which
/// multiplies a shape from the file unchecked.
struct NpyHeader {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
    data_start: usize,
}

impl NpyHeader {
    fn parse(b: &[u8]) -> Result<NpyHeader, String> {
        let rest = b.strip_prefix(b"\x93NUMPY").ok_or("it does not start with the .npy magic")?;
        let (len, start) = match (rest.first(), rest.get(2..4), rest.get(2..6)) {
            (Some(1), Some(l), _) => (u16::from_le_bytes([l[0], l[1]]) as usize, 10usize),
            (Some(2 | 3), _, Some(l)) => (u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize, 12),
            (Some(v), ..) => return Err(format!("format version {v} is not one numpy writes (1 to 3)")),
            (None, ..) => return Err("it ends inside its header".into()),
        };
        let end =
            start.checked_add(len).filter(|&e| e <= b.len()).ok_or("its header runs past the end of the entry")?;
        let text = std::str::from_utf8(&b[start..end]).map_err(|_| "its header is not UTF-8")?;
        let toks = py_tokens(text)?;
        let mut t = toks.iter().copied().peekable();
        let mut next = |what: &str| t.next().ok_or_else(|| format!("its header ends where {what} belongs"));
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        if next("`{`")? != "{" {
            return Err("its header is not a dict".into());
        }
        loop {
            let key = next("a key")?;
            if key == "}" {
                break;
            }
            if next("`:`")? != ":" {
                return Err(format!("expected `:` after {key}"));
            }
            match key {
                "'descr'" | "\"descr\"" => {
                    descr = Some(
                        py_str(next("a dtype")?).ok_or("`descr` is not a string (structured dtypes are not read)")?,
                    )
                }
                "'fortran_order'" | "\"fortran_order\"" => {
                    fortran_order = Some(match next("a bool")? {
                        "True" => true,
                        "False" => false,
                        v => return Err(format!("`fortran_order` is `{v}`, not True or False")),
                    })
                }
                "'shape'" | "\"shape\"" => {
                    if next("`(`")? != "(" {
                        return Err("`shape` is not a tuple".into());
                    }
                    let mut dims = Vec::new();
                    loop {
                        match next("`)`")? {
                            ")" => break,
                            d => dims.push(d.parse::<usize>().map_err(|_| format!("shape entry `{d}` is not a size"))?),
                        }
                        match next("`)`")? {
                            ")" => break,
                            "," => {}
                            x => return Err(format!("expected `,` or `)` in `shape`, found `{x}`")),
                        }
                    }
                    shape = Some(dims);
                }
                k => return Err(format!("unknown header key {k}")),
            }
            match next("`}`")? {
                "}" => break,
                "," => {}
                x => return Err(format!("expected `,` or `}}` in the header, found `{x}`")),
            }
        }
        let missing = |k: &str| format!("its header has no `{k}`");
        Ok(NpyHeader {
            descr: descr.ok_or_else(|| missing("descr"))?,
            fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
            shape: shape.ok_or_else(|| missing("shape"))?,
            data_start: end,
        })
    }
}

/// Python literal tokens: punctuation, quoted strings (with their quotes) and bare words.
fn py_tokens(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while let Some(c) = rest.chars().next() {
        let len = match c {
            '{' | '}' | '(' | ')' | ':' | ',' => 1,
            '\'' | '"' => rest[1..].find(c).map(|i| i + 2).ok_or("its header has an unterminated string")?,
            _ => rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len()).max(c.len_utf8()),
        };
        out.push(&rest[..len]);
        rest = rest[len..].trim_start();
    }
    Ok(out)
}

fn py_str(tok: &str) -> Option<String> {
    let q = tok.chars().next().filter(|&q| q == '\'' || q == '"')?;
    tok.strip_prefix(q)?.strip_suffix(q).map(str::to_string)
}

fn npy_bytes(t: &HostTensor, complex: bool) -> Result<Vec<u8>, String> {
    let (d, dims) = if complex {
        let d = complex_descr(t.dtype).filter(|_| t.shape.last() == Some(&2)).ok_or_else(|| {
            format!("cannot write {} {:?} as complex: not (real, imaginary) pairs", t.dtype.torch_name(), t.shape)
        })?;
        (d, &t.shape[..t.shape.len() - 1])
    } else {
        (descr(t.dtype).ok_or_else(|| format!("cannot write {} to .npy", t.dtype.torch_name()))?, &t.shape[..])
    };
    let shape = match dims.len() {
        0 => "()".to_string(),
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(header.len() as u16).to_le_bytes());
    v.extend_from_slice(header.as_bytes());
    v.extend_from_slice(&t.data);
    Ok(v)
}

/// Writes arrays in the given order, atomically; those named in `complex` (real views, as
/// `read_npz` gives them) as complex64/complex128.
pub fn write_npz(path: &Path, arrays: &[(String, HostTensor)], complex: &BTreeSet<String>) -> Result<(), String> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(zip::DateTime::default());
        for (name, t) in arrays {
            w.start_file(format!("{name}.npy"), opts).map_err(|e| e.to_string())?;
            w.write_all(&npy_bytes(t, complex.contains(name))?).map_err(|e| e.to_string())?;
        }
        w.finish().map_err(|e| e.to_string())?;
    }
    crate::write_atomic(path, buf.get_ref()).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}
