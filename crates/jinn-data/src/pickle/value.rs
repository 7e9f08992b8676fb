//! The values the pickle VM can build: plain Python scalars, str/bytes borrowed from the input
//! where possible, tuples, the one top-level dict, and symbolic NumPy objects.

use std::cell::RefCell;
use std::rc::Rc;

/// Deepest tuple nesting accepted; deeper input is rejected so dropping or printing a value
/// can never overflow the native stack.
pub const MAX_DEPTH: usize = 32;

/// A byte string: borrowed from the pickle, or built by the VM (protocol 2 `_codecs.encode`).
#[derive(Debug, Clone)]
pub enum Bytes<'a> {
    /// Bytes lying in the input.
    Borrowed(&'a [u8]),
    /// Bytes the VM had to build; shared so memo copies cost nothing.
    Shared(Rc<Vec<u8>>),
}

impl Bytes<'_> {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Shared(b) => b,
        }
    }
}

/// A whitelisted global. Nothing is ever imported or called: REDUCE and BUILD apply these
/// symbolically (see `numpy.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    /// `numpy.core.multiarray._reconstruct` / `numpy._core.multiarray._reconstruct`.
    Reconstruct,
    /// `numpy.core.multiarray.scalar` / `numpy._core.multiarray.scalar` (a NumPy scalar such
    /// as `np.int64(160)`).
    Scalar,
    /// `numpy.ndarray`.
    Ndarray,
    /// `numpy.dtype`.
    Dtype,
    /// `numpy.core.numeric._frombuffer` / `numpy._core.numeric._frombuffer` (protocol 5).
    FromBuffer,
    /// `_codecs.encode` (how protocols 2 spells bytes).
    CodecsEncode,
    /// `__builtin__.bytes` / `builtins.bytes` (protocol 2's empty bytes).
    BytesType,
}

impl Global {
    /// Resolve `module.name`, or `None` when it is not on the whitelist.
    pub fn lookup(module: &str, name: &str) -> Option<Global> {
        match (module, name) {
            ("numpy.core.multiarray" | "numpy._core.multiarray", "_reconstruct") => Some(Global::Reconstruct),
            ("numpy.core.multiarray" | "numpy._core.multiarray", "scalar") => Some(Global::Scalar),
            ("numpy", "ndarray") => Some(Global::Ndarray),
            ("numpy", "dtype") => Some(Global::Dtype),
            ("numpy.core.numeric" | "numpy._core.numeric", "_frombuffer") => Some(Global::FromBuffer),
            ("_codecs", "encode") => Some(Global::CodecsEncode),
            ("__builtin__" | "builtins", "bytes") => Some(Global::BytesType),
            _ => None,
        }
    }
}

/// Byte order of a NumPy dtype as its `BUILD` state spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// `<`.
    Little,
    /// `>`.
    Big,
    /// `|` (single-byte types).
    NotApplicable,
}

/// A `numpy.dtype(descr, False, True)` object, updated in place by `BUILD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DtypeObj {
    /// Type code such as `i8`, `u1`.
    pub descr: String,
    /// Byte order; `None` until `BUILD` sets it.
    pub order: Option<ByteOrder>,
}

/// The data of an ndarray once built.
#[derive(Debug, Clone)]
pub struct ArrayData<'a> {
    /// Shape.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DtypeObj,
    /// True when `data` is in Fortran (column-major) order.
    pub fortran: bool,
    /// Raw element bytes.
    pub data: Bytes<'a>,
}

/// An ndarray: empty after `_reconstruct`, filled by `BUILD` (or at once by `_frombuffer`).
pub type ArrayObj<'a> = Option<ArrayData<'a>>;

/// One key/value pair of the dict and the byte offset where its value was pushed.
pub type DictItem<'a> = (Value<'a>, Value<'a>, usize);

/// A value on the VM stack or in the memo.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An int that fits in `i64`.
    Int(i64),
    /// An int too large for `i64` (kept only to be ignored or reported).
    BigInt,
    /// A float.
    Float,
    /// A str borrowed from the input.
    Str(&'a str),
    /// A bytes (or in-band bytearray) object.
    Bytes(Bytes<'a>),
    /// A tuple and its nesting depth (1 for a tuple of scalars).
    Tuple(Rc<[Value<'a>]>, usize),
    /// The record dict (shared so a memoized reference sees later `SETITEMS`).
    Dict(Rc<RefCell<Vec<DictItem<'a>>>>),
    /// A whitelisted global.
    Global(Global),
    /// A dtype object.
    Dtype(Rc<RefCell<DtypeObj>>),
    /// An ndarray object.
    Array(Rc<RefCell<ArrayObj<'a>>>),
}

impl Value<'_> {
    /// Python-ish type name for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt => "int",
            Value::Float => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Tuple(..) => "tuple",
            Value::Dict(_) => "dict",
            Value::Global(_) => "global",
            Value::Dtype(_) => "numpy.dtype",
            Value::Array(_) => "numpy.ndarray",
        }
    }

    /// Nesting depth (0 for anything that holds no other value).
    pub fn depth(&self) -> usize {
        match self {
            Value::Tuple(_, d) => *d,
            _ => 0,
        }
    }
}
