//! What a CUDA array looks like from Rust: the parts of its `__cuda_array_interface__` (version
//! 2 or 3, as PyTorch and CuPy give it) a launch needs, checked.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

/// The element types the kernels take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F32,
    /// A 32-bit word the kernels treat as unsigned (a counter): torch's int32 or uint32.
    U32,
    /// A byte: torch's uint8.
    U8,
    /// A 64-bit signed integer: torch's int64 (class indices).
    I64,
    /// bfloat16, as its 16 bits (torch tensors only: the array interface has no type string
    /// for it).
    Bf16,
    /// float8_e4m3fn, as its 8 bits (torch tensors only, as bfloat16).
    E4m3,
}

impl Dtype {
    /// The interface's type string (little-endian).
    fn typestrs(self) -> &'static [&'static str] {
        match self {
            Dtype::F32 => &["<f4"],
            Dtype::U32 => &["<i4", "<u4"],
            Dtype::U8 => &["|u1", "<u1"],
            Dtype::I64 => &["<i8"],
            Dtype::Bf16 | Dtype::E4m3 => &[],
        }
    }

    fn bytes(self) -> usize {
        match self {
            Dtype::I64 => 8,
            Dtype::F32 | Dtype::U32 => 4,
            Dtype::Bf16 => 2,
            Dtype::U8 | Dtype::E4m3 => 1,
        }
    }

    /// PyTorch's name of the type.
    fn torch_names(self) -> &'static [&'static str] {
        match self {
            Dtype::F32 => &["torch.float32"],
            Dtype::U32 => &["torch.int32", "torch.uint32"],
            Dtype::U8 => &["torch.uint8"],
            Dtype::I64 => &["torch.int64"],
            Dtype::Bf16 => &["torch.bfloat16"],
            Dtype::E4m3 => &["torch.float8_e4m3fn"],
        }
    }
}

/// A checked CUDA array: its device address, its shape, whether it may be written.
#[derive(Debug)]
pub struct Tensor {
    pub name: &'static str,
    pub address: u64,
    pub shape: Vec<usize>,
    readonly: bool,
    /// The device index of a `torch.Tensor` proper (not a subclass, not another framework's
    /// array): torch's own metadata, which the launch trusts for where the memory is and how long.
    pub torch_device: Option<usize>,
}

impl Tensor {
    /// Elements `at..at + len` of this 1-D tensor of `element`-byte elements, as a tensor of their
    /// own (the same memory, device and writability).
    pub fn part(&self, at: usize, len: usize, element: usize) -> PyResult<Tensor> {
        if at + len > self.len() {
            return Err(PyValueError::new_err(format!(
                "{}: elements {at}..{} asked of {}",
                self.name,
                at + len,
                self.len()
            )));
        }
        Ok(Tensor {
            name: self.name,
            address: self.address + (at * element) as u64,
            shape: vec![len],
            readonly: self.readonly,
            torch_device: self.torch_device,
        })
    }

    /// The array `object` describes: `dtype`, C-contiguous, `rank` dimensions (0: any). A torch
    /// tensor is read through its own attributes (its `__cuda_array_interface__` is a dict built
    /// in Python on every access: several µs per tensor); anything else through the interface.
    pub fn read(name: &'static str, object: &Bound<PyAny>, dtype: Dtype, rank: usize) -> PyResult<Tensor> {
        let tensor = match read_torch(name, object, dtype)? {
            Some(tensor) => tensor,
            None => read_interface(name, object, dtype)?,
        };
        if rank != 0 && tensor.shape.len() != rank {
            return Err(PyValueError::new_err(format!(
                "{name}: {} dimensions given ({:?}), {rank} expected",
                tensor.shape.len(),
                tensor.shape
            )));
        }
        if tensor.len() == 0 {
            return Err(PyValueError::new_err(format!(
                "{name}: shape {:?} has no elements",
                tensor.shape
            )));
        }
        Ok(tensor)
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// This array, if it may be written.
    pub fn writable(self) -> PyResult<Tensor> {
        if self.readonly {
            return Err(PyValueError::new_err(format!("{}: the array is read-only", self.name)));
        }
        Ok(self)
    }

    /// An error unless the shape is `expected`.
    pub fn expect_shape(&self, expected: &[usize]) -> PyResult<()> {
        if self.shape != expected {
            return Err(PyValueError::new_err(format!(
                "{}: shape {:?} given, {expected:?} expected",
                self.name, self.shape
            )));
        }
        Ok(())
    }
}

/// A torch tensor's address, shape and layout, from its attributes; `None` for other objects.
/// A `torch.Tensor` proper is read with the fewest calls into Python (five: its device index, which
/// is -1 on the CPU, its dtype, shape, contiguity and address); other objects with torch's
/// attributes (subclasses) by the same attributes, their device from `is_cuda`.
fn read_torch(name: &'static str, object: &Bound<PyAny>, dtype: Dtype) -> PyResult<Option<Tensor>> {
    let py = object.py();
    let exact = torch_tensor_type(py)?.is_some_and(|tensor_type| object.get_type().is(tensor_type));
    let torch_device = if exact {
        let index: i64 = object.call_method0(intern!(py, "get_device"))?.extract()?;
        Some(usize::try_from(index).map_err(|_| not_on_cuda(name))?)
    } else {
        let (Ok(is_cuda), true) = (
            object.getattr(intern!(py, "is_cuda")),
            object.hasattr(intern!(py, "data_ptr"))?,
        ) else {
            return Ok(None);
        };
        if !is_cuda.extract::<bool>()? {
            return Err(not_on_cuda(name));
        }
        None
    };
    let given = object.getattr(intern!(py, "dtype"))?;
    // The usual case by identity with torch's own dtype objects; the name only for the message.
    let known = torch_dtypes(py, dtype)?.iter().any(|d| d.bind(py).is(&given));
    let given = if known { String::new() } else { given.str()?.to_string() };
    if !known && !dtype.torch_names().contains(&given.as_str()) {
        return Err(PyTypeError::new_err(format!(
            "{name}: dtype {given} given, {} expected; convert it first",
            dtype.torch_names().join(" or ")
        )));
    }
    let shape: Vec<usize> = object.getattr(intern!(py, "shape"))?.extract()?;
    if !object.call_method0(intern!(py, "is_contiguous"))?.extract::<bool>()? {
        return Err(PyValueError::new_err(format!(
            "{name}: the tensor of shape {shape:?} is not row-major contiguous; pass .contiguous()"
        )));
    }
    Ok(Some(Tensor {
        name,
        address: object.call_method0(intern!(py, "data_ptr"))?.extract()?,
        shape,
        readonly: false,
        torch_device,
    }))
}

fn not_on_cuda(name: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{name}: the tensor is not on a CUDA device; move it to the GPU first (.cuda())"
    ))
}

/// `torch.Tensor`, looked up once per process; `None` without torch.
fn torch_tensor_type(py: Python<'_>) -> PyResult<Option<&Bound<'_, PyAny>>> {
    static TENSOR: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();
    let tensor = TENSOR.get_or_try_init(py, || -> PyResult<Option<Py<PyAny>>> {
        Ok(py
            .import("torch")
            .ok()
            .and_then(|torch| torch.getattr("Tensor").ok())
            .map(Bound::unbind))
    })?;
    Ok(tensor.as_ref().map(|t| t.bind(py)))
}

/// An array from its `__cuda_array_interface__` (version 2 or 3).
/// torch's dtype objects for `dtype` (`torch.float32`, ...), looked up once per process, so that
/// a tensor's dtype is checked by identity rather than by formatting its name (a few hundred ns per
/// tensor per call).
fn torch_dtypes(py: Python<'_>, dtype: Dtype) -> PyResult<&'static [Py<PyAny>]> {
    static OBJECTS: [PyOnceLock<Vec<Py<PyAny>>>; 6] = [const { PyOnceLock::new() }; 6];
    let cell = &OBJECTS[match dtype {
        Dtype::F32 => 0,
        Dtype::U32 => 1,
        Dtype::U8 => 2,
        Dtype::Bf16 => 3,
        Dtype::I64 => 4,
        Dtype::E4m3 => 5,
    }];
    let objects = cell.get_or_try_init(py, || -> PyResult<Vec<Py<PyAny>>> {
        // Without torch (an object that only looks like a tensor) the names decide.
        let Ok(torch) = py.import("torch") else {
            return Ok(Vec::new());
        };
        Ok(dtype
            .torch_names()
            .iter()
            .filter_map(|name| torch.getattr(name.trim_start_matches("torch.")).ok())
            .map(Bound::unbind)
            .collect())
    })?;
    Ok(objects)
}

fn read_interface(name: &'static str, object: &Bound<PyAny>, dtype: Dtype) -> PyResult<Tensor> {
    let interface = object.getattr("__cuda_array_interface__").map_err(|_| {
        let type_name = object
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!(
            "{name}: expected a CUDA tensor (an object with __cuda_array_interface__), got {type_name}; move it to the GPU first (.cuda())"
        ))
    })?;
    let interface = interface
        .downcast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("{name}: __cuda_array_interface__ is not a dict")))?;
    let field = |key: &str| -> PyResult<Bound<PyAny>> {
        interface
            .get_item(key)?
            .ok_or_else(|| PyValueError::new_err(format!("{name}: __cuda_array_interface__ has no '{key}'")))
    };
    let typestr: String = field("typestr")?.extract()?;
    if dtype.typestrs().is_empty() {
        return Err(PyTypeError::new_err(format!(
            "{name}: {} arrays are taken as torch tensors only (the array interface has no type for them)",
            dtype.torch_names().join(" or ")
        )));
    }
    if !dtype.typestrs().contains(&typestr.as_str()) {
        return Err(PyTypeError::new_err(format!(
            "{name}: element type {typestr} given, {} ({}) expected; convert it first",
            dtype.typestrs().join(" or "),
            dtype.torch_names().join(" or ")
        )));
    }
    let shape: Vec<usize> = field("shape")?
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{name}: the shape is not a tuple of non-negative integers")))?;
    let data = field("data")?;
    let data = data
        .downcast::<PyTuple>()
        .map_err(|_| PyValueError::new_err(format!("{name}: 'data' is not an (address, read-only) pair")))?;
    let (address, readonly): (u64, bool) = data.extract()?;
    if let Some(strides) = interface.get_item("strides")?
        && !strides.is_none()
    {
        let strides: Vec<isize> = strides.extract()?;
        if !contiguous(&shape, &strides, dtype.bytes()) {
            return Err(PyValueError::new_err(format!(
                "{name}: strides {strides:?} (bytes) for shape {shape:?} are not row-major contiguous; pass .contiguous()"
            )));
        }
    }
    Ok(Tensor {
        name,
        address,
        shape,
        readonly,
        torch_device: None,
    })
}

/// Whether `strides` (bytes) lay `shape` out row-major without gaps; dimensions of one element
/// may have any stride (they are never stepped over).
pub fn contiguous(shape: &[usize], strides: &[isize], element: usize) -> bool {
    if strides.len() != shape.len() {
        return false;
    }
    let mut expected = element as isize;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent != 1 && stride != expected {
            return false;
        }
        expected *= extent as isize;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::contiguous;

    #[test]
    fn row_major_strides_are_contiguous_and_others_are_not() {
        assert!(contiguous(&[3, 5], &[20, 4], 4));
        assert!(contiguous(&[3, 1], &[4, 999], 4));
        assert!(!contiguous(&[3, 5], &[4, 12], 4), "a transposed view");
        assert!(!contiguous(&[3, 5], &[40, 8], 4), "a strided slice");
        assert!(!contiguous(&[3, 5], &[20], 4));
    }
}
