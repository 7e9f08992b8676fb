//! The three small protobuf messages of ArrayRecord's `layout.proto`: the per-chunk
//! `ArrayRecordFooter`, the `RiegeliFooterMetadata` that heads the footer chunk, and the
//! `RiegeliPostscript` in the last block. Encoded with the `riegeli` crate's public wire
//! helpers; parsing keeps the last value of each known field and skips unknown fields, as
//! protobuf does.

use riegeli::proto::{encode_tag, encode_varint64, FieldValue, ProtoFieldIter, WireType};

/// `RiegeliPostscript.magic` of every ArrayRecord file.
pub(crate) const MAGIC: u64 = 0x7193_0e70_4fda_e05e;
/// `ArrayRecordMetadata.version` this module reads and writes.
pub(crate) const VERSION: u64 = 1;

/// One `ArrayRecordFooter`: where a chunk starts and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FooterEntry {
    /// File offset of the chunk.
    pub chunk_offset: u64,
    /// Sum of the chunk's record sizes.
    pub decoded_data_size: u64,
    /// Records in the chunk.
    pub num_records: u64,
}

/// `RiegeliFooterMetadata.array_record_metadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FooterMetadata {
    /// Format version (1).
    pub version: u64,
    /// Number of [`FooterEntry`] records after the metadata.
    pub num_chunks: u64,
    /// Records in the file.
    pub num_records: u64,
    /// The writer's options string.
    pub writer_options: Option<String>,
}

/// `RiegeliPostscript`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Postscript {
    /// File offset of the footer chunk.
    pub footer_offset: u64,
    /// Must be [`MAGIC`].
    pub magic: u64,
}

fn put_varint(out: &mut Vec<u8>, field: u32, value: u64) {
    encode_tag(out, field, WireType::Varint);
    encode_varint64(out, value);
}

fn put_bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    encode_tag(out, field, WireType::LengthDelimited);
    encode_varint64(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// Visit each field of `message`; `what` names the message in errors.
fn for_each_field<'a>(
    message: &'a [u8],
    what: &str,
    mut visit: impl FnMut(u32, FieldValue<'a>),
) -> Result<(), String> {
    for field in ProtoFieldIter::new(message) {
        let field = field.map_err(|e| format!("malformed {what} protobuf: {e}"))?;
        visit(field.field_number, field.value);
    }
    Ok(())
}

impl FooterEntry {
    /// Serialized message.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        put_varint(&mut out, 1, self.chunk_offset);
        put_varint(&mut out, 2, self.decoded_data_size);
        put_varint(&mut out, 3, self.num_records);
        out
    }

    /// Parse; `chunk_offset` and `num_records` are required.
    pub fn decode(message: &[u8]) -> Result<Self, String> {
        let (mut offset, mut size, mut records) = (None, 0, None);
        for_each_field(message, "ArrayRecordFooter", |n, v| match (n, v) {
            (1, FieldValue::Varint(x)) => offset = Some(x),
            (2, FieldValue::Varint(x)) => size = x,
            (3, FieldValue::Varint(x)) => records = Some(x),
            _ => {}
        })?;
        match (offset, records) {
            (Some(chunk_offset), Some(num_records)) => {
                Ok(FooterEntry { chunk_offset, decoded_data_size: size, num_records })
            }
            _ => Err("ArrayRecordFooter lacks chunk_offset or num_records".into()),
        }
    }
}

impl FooterMetadata {
    /// Serialized `RiegeliFooterMetadata` holding this as `array_record_metadata`.
    pub fn encode(&self) -> Vec<u8> {
        let mut inner = Vec::new();
        put_varint(&mut inner, 1, self.version);
        put_varint(&mut inner, 2, self.num_chunks);
        put_varint(&mut inner, 3, self.num_records);
        if let Some(options) = &self.writer_options {
            put_bytes(&mut inner, 4, options.as_bytes());
        }
        let mut out = Vec::with_capacity(inner.len() + 4);
        put_bytes(&mut out, 1, &inner);
        out
    }

    /// Parse a `RiegeliFooterMetadata`; `array_record_metadata` must be present.
    pub fn decode(message: &[u8]) -> Result<Self, String> {
        let mut inner = None;
        for_each_field(message, "RiegeliFooterMetadata", |n, v| {
            if let (1, FieldValue::LengthDelimited(bytes)) = (n, v) {
                inner = Some(bytes);
            }
        })?;
        let inner = inner.ok_or("RiegeliFooterMetadata lacks array_record_metadata")?;
        let mut meta = FooterMetadata { version: 0, num_chunks: 0, num_records: 0, writer_options: None };
        let mut bad_utf8 = false;
        for_each_field(inner, "ArrayRecordMetadata", |n, v| match (n, v) {
            (1, FieldValue::Varint(x)) => meta.version = x,
            (2, FieldValue::Varint(x)) => meta.num_chunks = x,
            (3, FieldValue::Varint(x)) => meta.num_records = x,
            (4, FieldValue::LengthDelimited(s)) => match std::str::from_utf8(s) {
                Ok(s) => meta.writer_options = Some(s.to_string()),
                Err(_) => bad_utf8 = true,
            },
            _ => {}
        })?;
        if bad_utf8 {
            return Err("ArrayRecordMetadata.writer_options is not UTF-8".into());
        }
        Ok(meta)
    }
}

impl Postscript {
    /// Serialized message.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        put_varint(&mut out, 1, self.footer_offset);
        put_varint(&mut out, 2, self.magic);
        out
    }

    /// Parse; both fields are required.
    pub fn decode(message: &[u8]) -> Result<Self, String> {
        let (mut footer_offset, mut magic) = (None, None);
        for_each_field(message, "RiegeliPostscript", |n, v| match (n, v) {
            (1, FieldValue::Varint(x)) => footer_offset = Some(x),
            (2, FieldValue::Varint(x)) => magic = Some(x),
            _ => {}
        })?;
        match (footer_offset, magic) {
            (Some(footer_offset), Some(magic)) => Ok(Postscript { footer_offset, magic }),
            _ => Err("RiegeliPostscript lacks footer_offset or magic".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let e = FooterEntry { chunk_offset: 1 << 40, decoded_data_size: 5, num_records: 8 };
        assert_eq!(FooterEntry::decode(&e.encode()).unwrap(), e);
        let m = FooterMetadata {
            version: 1,
            num_chunks: 3,
            num_records: 17,
            writer_options: Some("group_size:8".into()),
        };
        assert_eq!(FooterMetadata::decode(&m.encode()).unwrap(), m);
        let p = Postscript { footer_offset: 295654, magic: MAGIC };
        // Bytes as in the postscript records of tests/fixtures (written by Python).
        let encoded = p.encode();
        assert_eq!(encoded.len(), 14);
        assert_eq!(Postscript::decode(&encoded).unwrap(), p);
        assert!(Postscript::decode(&encoded[..5]).is_err());
        assert!(FooterEntry::decode(&[0x08, 0x01]).is_err());
    }
}
