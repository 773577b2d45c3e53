//! `.npz` input and output files (numpy's zip of `.npy` arrays) as host tensors.

use ember_ir::types::DType;
use ember_targets::cpu::HostTensor;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

fn descr(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
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
    let s = s.replace('=', "<");
    DType::ALL.into_iter().find(|&d| descr(d) == Some(s.as_str()))
}

pub fn read_npz(path: &Path) -> Result<BTreeMap<String, HostTensor>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    let mut z = zip::ZipArchive::new(f).map_err(|e| format!("`{}` is not an .npz file: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut entry = z.by_index(i).map_err(|e| format!("`{}`: {e}", path.display()))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(|e| format!("`{}`: cannot read `{name}`: {e}", path.display()))?;
        let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| format!("`{}`: `{name}` is not a .npy array: {e}", path.display()))?;
        if npy.order() != npyz::Order::C {
            return Err(format!("`{}`: `{name}` is Fortran-ordered; save it C-contiguous (np.ascontiguousarray)", path.display()));
        }
        let d = npy.dtype().descr().trim_matches('\'').to_string();
        let dtype = from_descr(&d).ok_or_else(|| format!("`{}`: `{name}` has dtype `{d}`, which Ember does not read", path.display()))?;
        let shape: Vec<usize> = npy.shape().iter().map(|&s| s as usize).collect();
        let n: usize = shape.iter().product();
        let nbytes = n * dtype.byte_size();
        if bytes.len() < nbytes {
            return Err(format!("`{}`: `{name}` is truncated", path.display()));
        }
        // The data is the tail of the .npy entry, after its header.
        let data = bytes[bytes.len() - nbytes..].to_vec();
        out.insert(name, HostTensor { dtype, shape, data });
    }
    Ok(out)
}

fn npy_bytes(t: &HostTensor) -> Result<Vec<u8>, String> {
    let d = descr(t.dtype).ok_or_else(|| format!("cannot write {} to .npy", t.dtype.torch_name()))?;
    let shape = match t.shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", t.shape[0]),
        _ => format!("({})", t.shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
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

/// Writes arrays in the given order, atomically.
pub fn write_npz(path: &Path, arrays: &[(String, HostTensor)]) -> Result<(), String> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(zip::DateTime::default());
        for (name, t) in arrays {
            w.start_file(format!("{name}.npy"), opts).map_err(|e| e.to_string())?;
            w.write_all(&npy_bytes(t)?).map_err(|e| e.to_string())?;
        }
        w.finish().map_err(|e| e.to_string())?;
    }
    crate::write_atomic(path, buf.get_ref()).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}
