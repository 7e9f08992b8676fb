//! Protocol 4 writer for the record dict, byte-identical to CPython 3.11's `pickle.dumps`
//! (the C pickler), framing and memo indices included.
//!
//! CPython's framing, reproduced by [`Framer`]: `PROTO` stands outside any frame; a frame is
//! opened by the first write after it is closed; it is closed (committed) when it holds at
//! least 64 KiB as the saving of any object begins, before a bytes/str payload of 64 KiB or
//! more (whose opcode, length and data then go outside any frame) and at the end; a frame of
//! fewer than 4 bytes gets no `FRAME` header. (Checked against `pickle.dumps` for frame
//! boundaries falling at every kind of object: see the live test in `tests/pickle_golden.rs`.)
//!
//! Memo: like CPython, every str, bytes and tuple is memoized (`MEMOIZE`), and an object seen
//! before is written as `BINGET`. Besides the `numpy` module name, the only objects a record
//! can repeat are CPython's singletons: the empty bytes/str and 1-byte bytes / 1-character
//! latin-1 str, which [`Writer`] tracks by value.

use super::opcodes as op;
use crate::episode::{ActionArray, ActionDtype, EpisodeRecord};
use crate::error::{DataError, Result};
use std::collections::HashMap;

/// CPython's `FRAME_SIZE_TARGET`.
const FRAME_SIZE_TARGET: usize = 64 * 1024;
/// CPython's `FRAME_SIZE_MIN`.
const FRAME_SIZE_MIN: usize = 4;
/// `FRAME` opcode plus its u64 length.
const FRAME_HEADER: usize = 9;

/// Which module path names NumPy's `_reconstruct` in written pickles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NumpyModule {
    /// `numpy.core.multiarray`: what NumPy 1.x writes. Every NumPy 1.x loads it, and NumPy 2.x
    /// keeps `numpy.core.multiarray._reconstruct` importable without a warning precisely to
    /// load old pickles. The default, since it reads everywhere.
    #[default]
    Core,
    /// `numpy._core.multiarray`: what NumPy 2.x writes (byte-identical to `pickle.dumps` with
    /// NumPy 2); NumPy older than 1.26 cannot load it.
    UnderscoreCore,
}

impl NumpyModule {
    fn path(self) -> &'static str {
        match self {
            NumpyModule::Core => "numpy.core.multiarray",
            NumpyModule::UnderscoreCore => "numpy._core.multiarray",
        }
    }
}

/// Encode a record as CPython 3.11's `pickle.dumps(dict)` (protocol 4) would, with keys in
/// Jasmine's order (`raw_video`, `sequence_length`, `actions`, `video_file_name`) and NumPy
/// arrays spelled with [`NumpyModule::Core`] (loads on NumPy 1.x and 2.x).
///
/// # Panics
/// If the actions are inconsistent (values not matching the shape, a value outside the
/// dtype's range, a shape other than `[T]`/`[T, k]`); use [`try_encode_episode`] for records
/// not built by this crate.
pub fn encode_episode(record: &EpisodeRecord) -> Vec<u8> {
    match try_encode_episode(record) {
        Ok(bytes) => bytes,
        Err(e) => panic!("encode_episode: {e}"),
    }
}

/// [`encode_episode`], returning an error instead of panicking on inconsistent actions.
pub fn try_encode_episode(record: &EpisodeRecord) -> Result<Vec<u8>> {
    encode_episode_with(record, NumpyModule::default())
}

/// Encode a record (protocol 4) naming NumPy's reconstructor with `numpy_module`.
pub fn encode_episode_with(record: &EpisodeRecord, numpy_module: NumpyModule) -> Result<Vec<u8>> {
    let action_bytes = record.actions.as_ref().map(action_data).transpose()?;
    let mut w = Writer {
        f: Framer::with_capacity(record.raw_video.len() + 512),
        memo: 0,
        singletons: HashMap::new(),
    };
    w.f.out.extend_from_slice(&[op::PROTO, 4]);
    // save(dict)
    w.f.write(&[op::EMPTY_DICT, op::MEMOIZE]);
    w.memo += 1;
    w.f.write(&[op::MARK]);
    w.str("raw_video");
    w.bytes(&record.raw_video);
    w.str("sequence_length");
    w.int(record.sequence_length as i128);
    if let (Some(actions), Some(data)) = (&record.actions, &action_bytes) {
        w.str("actions");
        w.array(actions, data, numpy_module);
    }
    if let Some(name) = &record.video_file_name {
        w.str("video_file_name");
        w.str(name);
    }
    w.f.write(&[op::SETITEMS, op::STOP]);
    w.f.commit();
    Ok(w.f.out)
}

/// The array's element bytes (`[T]` or `[T, k]`, C order, little-endian), checked.
fn action_data(a: &ActionArray) -> Result<Vec<u8>> {
    let bad = |reason: String| DataError::invalid("actions", reason);
    if !(1..=2).contains(&a.shape.len()) {
        return Err(bad(format!("shape {:?} is not [T] or [T, k]", a.shape)));
    }
    let count = a.shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
    if count != Some(a.values.len()) {
        return Err(bad(format!("shape {:?} does not match {} values", a.shape, a.values.len())));
    }
    let (lo, hi) = a.dtype.range();
    if let Some(v) = a.values.iter().find(|&&v| v < lo || v > hi) {
        return Err(bad(format!("value {v} does not fit dtype {}", a.dtype.numpy_name())));
    }
    let size = a.dtype.size();
    Ok(a.values.iter().flat_map(|v| v.to_le_bytes().into_iter().take(size)).collect())
}

/// Output buffer with CPython's protocol 4 framing.
struct Framer {
    out: Vec<u8>,
    /// Offset of the open frame's (reserved) header.
    frame_start: Option<usize>,
}

impl Framer {
    fn with_capacity(n: usize) -> Self {
        Framer { out: Vec::with_capacity(n), frame_start: None }
    }

    /// `_Pickler_Write`: append, opening a frame if none is open.
    fn write(&mut self, bytes: &[u8]) {
        if self.frame_start.is_none() {
            self.frame_start = Some(self.out.len());
            self.out.extend_from_slice(&[0; FRAME_HEADER]);
        }
        self.out.extend_from_slice(bytes);
    }

    /// `_Pickler_CommitFrame`.
    fn commit(&mut self) {
        if let Some(start) = self.frame_start.take() {
            let len = self.out.len() - start - FRAME_HEADER;
            if len >= FRAME_SIZE_MIN {
                self.out[start] = op::FRAME;
                self.out[start + 1..start + FRAME_HEADER].copy_from_slice(&(len as u64).to_le_bytes());
            } else {
                self.out.drain(start..start + FRAME_HEADER);
            }
        }
    }

    /// `_Pickler_OpcodeBoundary`, called as the saving of every object begins.
    fn boundary(&mut self) {
        if let Some(start) = self.frame_start {
            if self.out.len() - start - FRAME_HEADER >= FRAME_SIZE_TARGET {
                self.commit();
            }
        }
    }

    /// `_Pickler_write_bytes`: opcode + length, then payload; large payloads go unframed.
    fn write_payload(&mut self, header: &[u8], data: &[u8]) {
        if data.len() >= FRAME_SIZE_TARGET {
            self.commit();
            self.out.extend_from_slice(header);
            self.out.extend_from_slice(data);
        } else {
            self.write(header);
            self.write(data);
        }
    }
}

/// The `save_*` functions of the C pickler for the types a record holds.
struct Writer {
    f: Framer,
    /// Next memo index.
    memo: u32,
    /// Memo indices of CPython's singleton objects, by (is_str, content).
    singletons: HashMap<(bool, Vec<u8>), u32>,
}

impl Writer {
    /// Memoize the object just written (`MEMOIZE`) and return its index.
    fn memoize(&mut self) -> u32 {
        self.f.write(&[op::MEMOIZE]);
        self.memo += 1;
        self.memo - 1
    }

    /// save(str): SHORT_BINUNICODE / BINUNICODE / BINUNICODE8, memoized.
    fn str(&mut self, s: &str) -> u32 {
        let mut chars = s.chars();
        let singleton = match (chars.next(), chars.next()) {
            (None, _) => true,
            (Some(c), None) => u32::from(c) < 256,
            _ => false,
        };
        self.sized(s.as_bytes(), singleton, (op::SHORT_BINUNICODE, op::BINUNICODE, op::BINUNICODE8))
    }

    /// save(bytes): SHORT_BINBYTES / BINBYTES / BINBYTES8, memoized.
    fn bytes(&mut self, b: &[u8]) -> u32 {
        self.sized(b, b.len() <= 1, (op::SHORT_BINBYTES, op::BINBYTES, op::BINBYTES8))
    }

    /// A str or bytes `data` with the (short, 4-byte, 8-byte length) opcodes of its type.
    fn sized(&mut self, data: &[u8], singleton: bool, (short, long, huge): (u8, u8, u8)) -> u32 {
        let key = singleton.then(|| (short == op::SHORT_BINUNICODE, data.to_vec()));
        if let Some(&idx) = key.as_ref().and_then(|k| self.singletons.get(k)) {
            self.get(idx);
            return idx;
        }
        self.f.boundary();
        let mut header = [0u8; 9];
        let header = if data.len() < 256 {
            header[..2].copy_from_slice(&[short, data.len() as u8]);
            &header[..2]
        } else if let Ok(n) = u32::try_from(data.len()) {
            header[0] = long;
            header[1..5].copy_from_slice(&n.to_le_bytes());
            &header[..5]
        } else {
            header[0] = huge;
            header[1..9].copy_from_slice(&(data.len() as u64).to_le_bytes());
            &header[..9]
        };
        self.f.write_payload(header, data);
        let idx = self.memoize();
        if let Some(k) = key {
            self.singletons.insert(k, idx);
        }
        idx
    }

    /// save(int): BININT1 / BININT2 / BININT / LONG1 (not memoized).
    fn int(&mut self, v: i128) {
        self.f.boundary();
        if (0..=0xff).contains(&v) {
            self.f.write(&[op::BININT1, v as u8]);
        } else if (0..=0xffff).contains(&v) {
            self.f.write(&[op::BININT2]);
            self.f.write(&(v as u16).to_le_bytes());
        } else if let Ok(v) = i32::try_from(v) {
            self.f.write(&[op::BININT]);
            self.f.write(&v.to_le_bytes());
        } else {
            // Minimal little-endian two's complement, as pickle.encode_long.
            let bytes = v.to_le_bytes();
            let mut n = 16;
            let fill = if v < 0 { 0xff } else { 0 };
            while n > 1 && bytes[n - 1] == fill && (bytes[n - 2] & 0x80 != 0) == (v < 0) {
                n -= 1;
            }
            self.f.write(&[op::LONG1, n as u8]);
            self.f.write(&bytes[..n]);
        }
    }

    /// save(None), save(bool): not memoized.
    fn atom(&mut self, opcode: u8) {
        self.f.boundary();
        self.f.write(&[opcode]);
    }

    /// save_global with protocol 4: module and name as (memoized) str, STACK_GLOBAL, memoized.
    /// `module_memo` is the memo index of an already written module str, if any.
    fn global(&mut self, module: &str, module_memo: Option<u32>, name: &str) -> u32 {
        self.f.boundary();
        let module_idx = match module_memo {
            Some(idx) => {
                self.get(idx);
                idx
            }
            None => self.str(module),
        };
        self.str(name);
        self.f.write(&[op::STACK_GLOBAL]);
        self.memoize();
        module_idx
    }

    /// A memo hit: BINGET / LONG_BINGET.
    fn get(&mut self, idx: u32) {
        self.f.boundary();
        if let Ok(i) = u8::try_from(idx) {
            self.f.write(&[op::BINGET, i]);
        } else {
            self.f.write(&[op::LONG_BINGET]);
            self.f.write(&idx.to_le_bytes());
        }
    }

    /// Start of a tuple of `n` items (MARK for more than 3).
    fn begin_tuple(&mut self, n: usize) {
        self.f.boundary();
        if n > 3 {
            self.f.write(&[op::MARK]);
        }
    }

    /// End of a tuple of `n` written items (TUPLE1..3 or TUPLE), memoized.
    fn end_tuple(&mut self, n: usize) {
        let opcode = match n {
            1 => op::TUPLE1,
            2 => op::TUPLE2,
            3 => op::TUPLE3,
            _ => op::TUPLE,
        };
        self.f.write(&[opcode]);
        self.memoize();
    }

    /// An ndarray as NumPy's `__reduce__` gives it:
    /// `_reconstruct(ndarray, (0,), b'b')` then BUILD `(1, shape, dtype, False, data)`.
    fn array(&mut self, a: &ActionArray, data: &[u8], numpy_module: NumpyModule) {
        self.f.boundary(); // save(array)
                           // save_reduce: callable, args, REDUCE, state, BUILD
        self.global(numpy_module.path(), None, "_reconstruct");
        self.begin_tuple(3);
        let numpy_memo = self.global("numpy", None, "ndarray");
        self.begin_tuple(1);
        self.int(0);
        self.end_tuple(1);
        self.bytes(b"b");
        self.end_tuple(3);
        self.f.write(&[op::REDUCE]);
        self.memoize();
        self.begin_tuple(5);
        self.int(1);
        self.begin_tuple(a.shape.len());
        for &d in &a.shape {
            self.int(d as i128);
        }
        self.end_tuple(a.shape.len());
        self.dtype(a.dtype, numpy_memo);
        self.atom(op::NEWFALSE);
        self.bytes(data);
        self.end_tuple(5);
        self.f.write(&[op::BUILD]);
    }

    /// `numpy.dtype(descr, False, True)` then BUILD `(3, order, None, None, None, -1, -1, 0)`.
    fn dtype(&mut self, dtype: ActionDtype, numpy_memo: u32) {
        let (descr, order) = (dtype.descr(), if dtype.size() == 1 { "|" } else { "<" });
        self.f.boundary(); // save(dtype)
        self.global("numpy", Some(numpy_memo), "dtype");
        self.begin_tuple(3);
        self.str(descr);
        self.atom(op::NEWFALSE);
        self.atom(op::NEWTRUE);
        self.end_tuple(3);
        self.f.write(&[op::REDUCE]);
        self.memoize();
        self.begin_tuple(8);
        self.int(3);
        self.str(order);
        for _ in 0..3 {
            self.atom(op::NONE);
        }
        self.int(-1);
        self.int(-1);
        self.int(0);
        self.end_tuple(8);
        self.f.write(&[op::BUILD]);
    }
}
