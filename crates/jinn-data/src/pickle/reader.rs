//! The pickle virtual machine: runs the opcodes of a protocol 2–5 pickle over a byte slice and
//! returns the resulting value.
//!
//! Hand-written because no maintained Rust crate restricts unpickling to a whitelist of
//! symbolic constructors while borrowing bytes from the input. Nothing is executed: the only
//! callables are the [`Global`]s of `value.rs`, which `numpy.rs` applies symbolically.
//!
//! Safety limits: every length field is checked against the bytes left before anything is
//! sliced or allocated; the stack, mark stack and memo grow by at most one entry per input
//! byte; tuples nest at most [`MAX_DEPTH`] deep; no recursion over input structure.

use super::numpy;
use super::opcodes as op;
use super::value::{Bytes, Global, Value, MAX_DEPTH};
use crate::error::{DataError, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Result of running a pickle: the value `STOP` returned and the offset of that `STOP`.
pub struct Loaded<'a> {
    /// The unpickled value.
    pub value: Value<'a>,
    /// Offset of the `STOP` opcode.
    pub stop_offset: usize,
}

/// Run the pickle in `input` and return its value. Fails on anything outside the supported
/// subset, on malformed data and on bytes after `STOP`.
pub fn load(input: &[u8]) -> Result<Loaded<'_>> {
    let mut vm =
        Vm { input, pos: 0, op_start: 0, op: 0, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new() };
    let value = vm.run()?;
    let stop_offset = vm.op_start;
    if vm.pos != input.len() {
        return Err(
            vm.err(format!("{} bytes after STOP; expected the pickle to end there", input.len() - vm.pos))
        );
    }
    Ok(Loaded { value, stop_offset })
}

struct Vm<'a> {
    input: &'a [u8],
    /// Next byte to read.
    pos: usize,
    /// Offset of the opcode being executed (for errors).
    op_start: usize,
    /// Opcode being executed.
    op: u8,
    /// Each value with the offset of the opcode that pushed it.
    stack: Vec<(Value<'a>, usize)>,
    /// Stack lengths at each MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, Value<'a>>,
}

impl<'a> Vm<'a> {
    fn err(&self, reason: impl Into<String>) -> DataError {
        DataError::Pickle { offset: self.op_start, reason: reason.into() }
    }

    /// An error naming the current opcode.
    fn op_err(&self, reason: impl std::fmt::Display) -> DataError {
        self.err(format!("{}: {reason}", op::name(self.op)))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let left = self.input.len() - self.pos;
        if n > left as u64 {
            return Err(
                self.op_err(format_args!("needs {n} bytes but only {left} are left (truncated pickle?)"))
            );
        }
        let s = &self.input[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N as u64)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take_array::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take_array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take_array()?))
    }

    fn push(&mut self, v: Value<'a>) {
        self.stack.push((v, self.op_start));
    }

    /// Stack length above the innermost mark (0 when there is no mark).
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> Result<(Value<'a>, usize)> {
        if self.stack.len() <= self.floor() {
            return Err(self.op_err("stack underflow"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> Result<&Value<'a>> {
        if self.stack.len() <= self.floor() {
            return Err(self.op_err("stack underflow"));
        }
        Ok(&self.stack[self.stack.len() - 1].0)
    }

    /// Pop everything above the innermost mark, and the mark.
    fn pop_mark(&mut self) -> Result<Vec<(Value<'a>, usize)>> {
        let Some(m) = self.marks.pop() else {
            return Err(self.op_err("no MARK on the stack"));
        };
        Ok(self.stack.split_off(m))
    }

    fn utf8(&self, b: &'a [u8]) -> Result<&'a str> {
        std::str::from_utf8(b).map_err(|e| self.op_err(format_args!("invalid UTF-8 in str: {e}")))
    }

    fn tuple(&self, items: Vec<(Value<'a>, usize)>) -> Result<Value<'a>> {
        let mut depth = 0;
        for (v, _) in &items {
            if matches!(v, Value::Dict(_)) {
                return Err(self.op_err("a dict inside a tuple is not supported"));
            }
            depth = depth.max(v.depth());
        }
        if depth + 1 > MAX_DEPTH {
            return Err(self.op_err(format_args!("tuples nested deeper than {MAX_DEPTH}")));
        }
        let items: Vec<Value<'a>> = items.into_iter().map(|(v, _)| v).collect();
        Ok(Value::Tuple(items.into(), depth + 1))
    }

    fn memo_put(&mut self, idx: u32) -> Result<()> {
        let v = self.top()?.clone();
        self.memo.insert(idx, v);
        Ok(())
    }

    fn memo_get(&mut self, idx: u32) -> Result<()> {
        let Some(v) = self.memo.get(&idx) else {
            return Err(self.op_err(format_args!("memo index {idx} was never stored")));
        };
        let v = v.clone();
        self.push(v);
        Ok(())
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
        match Global::lookup(module, name) {
            Some(g) => {
                self.push(Value::Global(g));
                Ok(())
            }
            None => Err(self.op_err(format_args!(
                "global `{module}.{name}` is not allowed (only NumPy array/dtype/scalar \
                 reconstruction and `_codecs.encode` are)"
            ))),
        }
    }

    /// Read a `\n`-terminated line for GLOBAL.
    fn line(&mut self) -> Result<&'a str> {
        let rest = &self.input[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err(self.op_err("missing newline (truncated pickle?)"));
        };
        let line = self.take(n as u64 + 1)?;
        self.utf8(&line[..n])
    }

    fn set_items(&mut self, items: Vec<(Value<'a>, usize)>) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            return Err(self.op_err("odd number of items for a dict"));
        }
        let (dict, _) = self.pop()?;
        let Value::Dict(d) = &dict else {
            return Err(
                self.op_err(format_args!("expected a dict below the items, found {}", dict.type_name()))
            );
        };
        let mut it = items.into_iter();
        while let (Some((k, _)), Some((v, off))) = (it.next(), it.next()) {
            // Also keeps the shared dict free of reference cycles (a dict holding itself).
            if matches!(k, Value::Dict(_)) || matches!(v, Value::Dict(_)) {
                return Err(self.op_err("a dict as a dict key or value is not supported"));
            }
            d.borrow_mut().push((k, v, off));
        }
        self.stack.push((dict, self.op_start));
        Ok(())
    }

    fn run(&mut self) -> Result<Value<'a>> {
        loop {
            self.op_start = self.pos;
            self.op = 0;
            let code = self.u8().map_err(|_| self.err("pickle ended without STOP (truncated?)"))?;
            self.op = code;
            match code {
                op::PROTO => {
                    let v = self.u8()?;
                    if !(2..=5).contains(&v) {
                        return Err(
                            self.op_err(format_args!("protocol {v} is not supported (expected 2 to 5)"))
                        );
                    }
                }
                op::FRAME => {
                    // A framing hint only: like CPython reading from memory, just check that
                    // the announced bytes are there.
                    let n = self.u64()?;
                    let left = self.input.len() - self.pos;
                    if n > left as u64 {
                        return Err(self.op_err(format_args!("frame of {n} bytes but only {left} are left")));
                    }
                }
                op::STOP => {
                    if !self.marks.is_empty() {
                        return Err(self.op_err("MARK without matching TUPLE/SETITEMS"));
                    }
                    if self.stack.len() != 1 {
                        return Err(self.op_err(format_args!(
                            "expected 1 value on the stack, found {}",
                            self.stack.len()
                        )));
                    }
                    return Ok(self.stack.pop().expect("one value").0);
                }
                op::MARK => self.marks.push(self.stack.len()),
                op::EMPTY_DICT => self.push(Value::Dict(Rc::new(RefCell::new(Vec::new())))),
                op::SETITEM => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(vec![k, v])?;
                }
                op::SETITEMS => {
                    let items = self.pop_mark()?;
                    self.set_items(items)?;
                }
                op::MEMOIZE => {
                    let idx = u32::try_from(self.memo.len()).map_err(|_| self.op_err("memo full"))?;
                    self.memo_put(idx)?;
                }
                op::BINPUT => {
                    let i = self.u8()?;
                    self.memo_put(i.into())?;
                }
                op::LONG_BINPUT => {
                    let i = self.u32()?;
                    self.memo_put(i)?;
                }
                op::BINGET => {
                    let i = self.u8()?;
                    self.memo_get(i.into())?;
                }
                op::LONG_BINGET => {
                    let i = self.u32()?;
                    self.memo_get(i)?;
                }
                op::SHORT_BINUNICODE | op::BINUNICODE | op::BINUNICODE8 => {
                    let n = match code {
                        op::SHORT_BINUNICODE => self.u8()?.into(),
                        op::BINUNICODE => self.u32()?.into(),
                        _ => self.u64()?,
                    };
                    let b = self.take(n)?;
                    let s = self.utf8(b)?;
                    self.push(Value::Str(s));
                }
                op::SHORT_BINBYTES | op::BINBYTES | op::BINBYTES8 | op::BYTEARRAY8 => {
                    let n = match code {
                        op::SHORT_BINBYTES => self.u8()?.into(),
                        op::BINBYTES => self.u32()?.into(),
                        _ => self.u64()?,
                    };
                    let b = self.take(n)?;
                    self.push(Value::Bytes(Bytes::Borrowed(b)));
                }
                op::NEXT_BUFFER | op::READONLY_BUFFER => {
                    return Err(
                        self.op_err("out-of-band buffers are not supported (pickle without buffer_callback)")
                    );
                }
                op::BININT => {
                    let v = i32::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v.into()));
                }
                op::BININT1 => {
                    let v = self.u8()?;
                    self.push(Value::Int(v.into()));
                }
                op::BININT2 => {
                    let v = u16::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v.into()));
                }
                op::LONG1 | op::LONG4 => {
                    let n = if code == op::LONG1 { self.u8()?.into() } else { self.u32()?.into() };
                    let b = self.take(n)?;
                    self.push(decode_long(b));
                }
                op::NEWTRUE => self.push(Value::Bool(true)),
                op::NEWFALSE => self.push(Value::Bool(false)),
                op::NONE => self.push(Value::None),
                op::BINFLOAT => {
                    // Extra keys only; the value itself is never needed.
                    self.take(8)?;
                    self.push(Value::Float);
                }
                op::EMPTY_TUPLE => self.push(Value::Tuple(Rc::from(Vec::new()), 1)),
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = usize::from(code - op::TUPLE1 + 1);
                    if self.stack.len() < self.floor() + n {
                        return Err(self.op_err("stack underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    let t = self.tuple(items)?;
                    self.push(t);
                }
                op::TUPLE => {
                    let items = self.pop_mark()?;
                    let t = self.tuple(items)?;
                    self.push(t);
                }
                op::GLOBAL => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(module, name)?;
                }
                op::STACK_GLOBAL => {
                    let (name, _) = self.pop()?;
                    let (module, _) = self.pop()?;
                    let (Value::Str(module), Value::Str(name)) = (&module, &name) else {
                        return Err(self.op_err("expected two str (module, name) on the stack"));
                    };
                    self.global(module, name)?;
                }
                op::REDUCE => {
                    let (args, _) = self.pop()?;
                    let (callable, _) = self.pop()?;
                    let Value::Tuple(args, _) = args else {
                        return Err(self
                            .op_err(format_args!("arguments must be a tuple, found {}", args.type_name())));
                    };
                    let Value::Global(g) = callable else {
                        return Err(self.op_err(format_args!("cannot call a {}", callable.type_name())));
                    };
                    let v = numpy::reduce(g, &args).map_err(|r| self.op_err(r))?;
                    self.push(v);
                }
                op::BUILD => {
                    let (state, _) = self.pop()?;
                    let obj = self.top()?;
                    numpy::build(obj, &state).map_err(|r| self.op_err(r))?;
                }
                other => {
                    return Err(self.err(format!(
                        "opcode {} (0x{other:02x}) is not supported by this reader",
                        op::name(other)
                    )))
                }
            }
        }
    }
}

/// Decode a little-endian two's-complement LONG1/LONG4 payload.
fn decode_long<'a>(b: &[u8]) -> Value<'a> {
    if b.is_empty() {
        return Value::Int(0);
    }
    let negative = b[b.len() - 1] & 0x80 != 0;
    let fill = if negative { 0xff } else { 0 };
    // Drop redundant sign bytes, then the value fits in i64 when at most 8 bytes remain and
    // the sign survives.
    let mut n = b.len();
    while n > 1 && b[n - 1] == fill && (b[n - 2] & 0x80 != 0) == negative {
        n -= 1;
    }
    if n > 8 {
        return Value::BigInt;
    }
    let mut buf = [fill; 8];
    buf[..n].copy_from_slice(&b[..n]);
    Value::Int(i64::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long1_matches_python_encodings() {
        // Encodings printed by Python's pickle.encode_long.
        let cases: &[(&[u8], i64)] = &[
            (b"", 0),
            (b"\xff\x00", 255),
            (b"\x80", -128),
            (b"\x7f", 127),
            (b"\x00\x80", -32768),
            (b"\x00\x80\xff", -32768),
            (b"\xff\xff\xff\xff\xff\xff\xff\x7f", i64::MAX),
            (b"\x00\x00\x00\x00\x00\x00\x00\x80", i64::MIN),
            (b"\x00\x00\x00\x00\x00\x00\x00\x80\xff", i64::MIN),
        ];
        for (b, v) in cases {
            assert!(matches!(decode_long(b), Value::Int(x) if x == *v), "{b:?}");
        }
        assert!(matches!(decode_long(b"\x00\x00\x00\x00\x00\x00\x00\x80\x00"), Value::BigInt));
        assert!(matches!(decode_long(b"\xff\xff\xff\xff\xff\xff\xff\x7f\xff"), Value::BigInt));
    }
}
