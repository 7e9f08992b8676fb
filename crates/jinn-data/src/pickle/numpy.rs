//! Symbolic application of the whitelisted globals (REDUCE, BUILD), and conversion of a
//! rebuilt ndarray into an [`ActionArray`].
//!
//! NumPy pickles an array as `_reconstruct(ndarray, (0,), b'b')` followed by `BUILD` with
//! `(version, shape, dtype, fortran, data)`, the dtype as `dtype(descr, False, True)` followed
//! by `BUILD` with `(3, byteorder, None, None, None, -1, -1, 0)`; protocol 5 uses
//! `_frombuffer(buffer, dtype, shape, order)` instead. A NumPy scalar is
//! `scalar(dtype, bytes)`.

use super::value::{ArrayData, ByteOrder, Bytes, DtypeObj, Global, Value};
use crate::episode::{ActionArray, ActionDtype};
use std::cell::RefCell;
use std::rc::Rc;

/// Apply `global(*args)`; the error string is wrapped with the offset by the caller.
pub fn reduce<'a>(global: Global, args: &[Value<'a>]) -> Result<Value<'a>, String> {
    match global {
        Global::Reconstruct => match args {
            [Value::Global(Global::Ndarray), Value::Tuple(..), Value::Bytes(_)] => {
                Ok(Value::Array(Rc::new(RefCell::new(None))))
            }
            _ => Err(format!("_reconstruct expects (numpy.ndarray, tuple, bytes), got {}", type_list(args))),
        },
        Global::Dtype => match args {
            [Value::Str(descr), rest @ ..] if rest.len() <= 2 => {
                Ok(Value::Dtype(Rc::new(RefCell::new(DtypeObj { descr: descr.to_string(), order: None }))))
            }
            _ => Err(format!("numpy.dtype expects (str, bool, bool), got {}", type_list(args))),
        },
        Global::FromBuffer => match args {
            [Value::Bytes(buf), Value::Dtype(dtype), Value::Tuple(shape, _), Value::Str(order)] => {
                let fortran = match *order {
                    "C" => false,
                    "F" => true,
                    other => return Err(format!("_frombuffer order must be 'C' or 'F', got {other:?}")),
                };
                let array = ArrayData {
                    shape: parse_shape(shape)?,
                    dtype: dtype.borrow().clone(),
                    fortran,
                    data: buf.clone(),
                };
                Ok(Value::Array(Rc::new(RefCell::new(Some(array)))))
            }
            _ => {
                Err(format!("_frombuffer expects (bytes, numpy.dtype, tuple, str), got {}", type_list(args)))
            }
        },
        Global::CodecsEncode => match args {
            [Value::Str(text), Value::Str("latin1" | "latin-1")] => {
                // Protocol 2 stores bytes as the str with the same code points (U+0000..U+00FF).
                let mut out = Vec::with_capacity(text.len());
                for c in text.chars() {
                    let b = u8::try_from(u32::from(c)).map_err(|_| {
                        format!("_codecs.encode: character U+{:04X} is not latin-1", u32::from(c))
                    })?;
                    out.push(b);
                }
                Ok(Value::Bytes(Bytes::Shared(Rc::new(out))))
            }
            _ => Err(format!("_codecs.encode expects (str, 'latin1'), got {}", type_list(args))),
        },
        Global::BytesType => match args {
            [] => Ok(Value::Bytes(Bytes::Borrowed(&[]))),
            _ => Err(format!("bytes() is only supported without arguments, got {}", type_list(args))),
        },
        Global::Scalar => match args {
            [Value::Dtype(dtype), Value::Bytes(data)] => scalar(&dtype.borrow(), data.as_slice()),
            _ => Err(format!("scalar expects (numpy.dtype, bytes), got {}", type_list(args))),
        },
        Global::Ndarray => Err("numpy.ndarray cannot be called directly".into()),
    }
}

/// Apply `BUILD` (`obj.__setstate__(state)`) to the dtype or array `obj`.
pub fn build<'a>(obj: &Value<'a>, state: &Value<'a>) -> Result<(), String> {
    let Value::Tuple(items, _) = state else {
        return Err(format!("state must be a tuple, found {}", state.type_name()));
    };
    match obj {
        Value::Dtype(d) => {
            // (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata])
            let [_, Value::Str(order), rest @ ..] = &items[..] else {
                return Err(format!(
                    "dtype state must start with (version, byteorder), got {}",
                    type_list(items)
                ));
            };
            if rest.iter().take(3).any(|v| !matches!(v, Value::None)) {
                return Err("structured or subarray dtypes are not supported".into());
            }
            let order = match *order {
                "<" => ByteOrder::Little,
                ">" => ByteOrder::Big,
                "|" => ByteOrder::NotApplicable,
                other => {
                    return Err(format!(
                        "dtype byte order {other:?} is not supported (expected '<', '>' or '|')"
                    ))
                }
            };
            d.borrow_mut().order = Some(order);
            Ok(())
        }
        Value::Array(a) => {
            // (version, shape, dtype, is_fortran, data), or the same without version.
            let fields = match &items[..] {
                [Value::Int(_), rest @ ..] if rest.len() == 4 => rest,
                all if all.len() == 4 => all,
                _ => {
                    return Err(format!(
                        "ndarray state must be (version, shape, dtype, fortran, data), got {}",
                        type_list(items)
                    ))
                }
            };
            let [Value::Tuple(shape, _), Value::Dtype(dtype), fortran, data] = fields else {
                return Err(format!(
                    "ndarray state must be (version, shape, dtype, fortran, data), got {}",
                    type_list(items)
                ));
            };
            let fortran = match fortran {
                Value::Bool(b) => *b,
                Value::Int(i @ (0 | 1)) => *i == 1,
                other => {
                    return Err(format!("ndarray fortran flag must be a bool, found {}", other.type_name()))
                }
            };
            let Value::Bytes(data) = data else {
                return Err(format!(
                    "ndarray data must be bytes (object arrays are not supported), found {}",
                    data.type_name()
                ));
            };
            let array = ArrayData {
                shape: parse_shape(shape)?,
                dtype: dtype.borrow().clone(),
                fortran,
                data: data.clone(),
            };
            // A `BUILD` state cannot contain the array itself (no cycles), so this borrow is free.
            *a.borrow_mut() = Some(array);
            Ok(())
        }
        other => Err(format!("BUILD on a {} is not supported", other.type_name())),
    }
}

fn parse_shape(shape: &[Value<'_>]) -> Result<Vec<usize>, String> {
    shape
        .iter()
        .map(|v| match v {
            Value::Int(n) => usize::try_from(*n).map_err(|_| format!("negative array dimension {n}")),
            other => Err(format!("array dimension must be an int, found {}", other.type_name())),
        })
        .collect()
}

fn type_list(v: &[Value<'_>]) -> String {
    let names: Vec<&str> = v.iter().map(Value::type_name).collect();
    format!("({})", names.join(", "))
}

/// A NumPy scalar as the plain value it stands for: an int (`Int`, or `BigInt` beyond `i64`),
/// a float or a bool.
fn scalar<'a>(dtype: &DtypeObj, data: &[u8]) -> Result<Value<'a>, String> {
    match dtype.descr.as_str() {
        "f2" | "f4" | "f8" => return Ok(Value::Float),
        "b1" if data.len() == 1 => return Ok(Value::Bool(data[0] != 0)),
        _ => {}
    }
    let (int, big_endian) = int_dtype(dtype)?;
    if data.len() != int.size() {
        return Err(format!("{} scalar needs {} bytes, found {}", int.numpy_name(), int.size(), data.len()));
    }
    let v = int.decode(data, big_endian);
    Ok(i64::try_from(v).map_or(Value::BigInt, Value::Int))
}

/// The integer dtype `d` describes and whether it is big-endian.
fn int_dtype(d: &DtypeObj) -> Result<(ActionDtype, bool), String> {
    let Some(dtype) = ActionDtype::from_descr(&d.descr) else {
        return Err(format!(
            "dtype {:?} is not supported (expected an integer dtype: int8/16/32/64 'i1'…'i8' or \
             uint8/16/32/64 'u1'…'u8')",
            d.descr
        ));
    };
    let Some(order) = d.order else {
        return Err(format!("dtype {:?} was never given its byte order (missing BUILD)", d.descr));
    };
    if dtype.size() > 1 && order == ByteOrder::NotApplicable {
        return Err(format!("dtype {:?} with byte order '|' (expected '<' or '>')", d.descr));
    }
    Ok((dtype, order == ByteOrder::Big))
}

/// Convert a rebuilt ndarray into actions: any integer dtype, shape `[T]` or `[T, k]`, little-
/// or big-endian, C or Fortran order. The result is always C order; a `uint64` value beyond
/// `i64::MAX` is an error naming it.
pub fn to_actions(array: &ArrayData<'_>) -> Result<ActionArray, String> {
    let (dtype, big_endian) = int_dtype(&array.dtype)?;
    let size = dtype.size();
    if !(1..=2).contains(&array.shape.len()) {
        return Err(format!("shape {:?} is not [T] or [T, k]", array.shape));
    }
    let count = array
        .shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| format!("shape {:?} overflows", array.shape))?;
    let data = array.data.as_slice();
    if count.checked_mul(size) != Some(data.len()) {
        return Err(format!(
            "shape {:?} of {} needs {} bytes of data, found {}",
            array.shape,
            dtype.numpy_name(),
            count as u128 * size as u128,
            data.len()
        ));
    }
    let mut values = Vec::with_capacity(count);
    for (i, c) in data.chunks_exact(size).enumerate() {
        let v = dtype.decode(c, big_endian);
        values.push(i64::try_from(v).map_err(|_| {
            format!("value {v} (element {i}) of the {} array does not fit in int64", dtype.numpy_name())
        })?);
    }
    if array.fortran && array.shape.len() == 2 {
        // Column-major [k][T] storage → row-major [T][k].
        let (t, k) = (array.shape[0], array.shape[1]);
        let mut c = vec![0i64; values.len()];
        for (j, col) in values.chunks_exact(t.max(1)).enumerate().take(k) {
            for (i, &v) in col.iter().enumerate() {
                c[i * k + j] = v;
            }
        }
        values = c;
    }
    Ok(ActionArray { dtype, shape: array.shape.clone(), values })
}
