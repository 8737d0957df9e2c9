//! The codec traits ([`Decode`], [`Encode`], [`Visit`]) and their implementations for jute's
//! primitive types: `int` (`i32`), `long` (`i64`), `boolean` (`bool`), `ustring` (`String`),
//! `buffer` (`Option<Bytes>`, null being `None`) and `vector<T>` (`Vec<T>`).

use bytes::{BufMut, Bytes, BytesMut};

use crate::{DecodeError, EncodeError, Reader};

/// A value that can be read from jute bytes.
pub trait Decode: Sized {
    /// The fewest bytes an encoded value can take; bounds the capacity given to vectors, so a
    /// hostile element count allocates nothing beyond the bytes actually present.
    const MIN_LEN: usize;

    /// Reads one value. Never panics; see [`DecodeError`].
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes a whole byte string as one value: bytes left over are an error.
    fn decode_exact(bytes: &[u8], record: &'static str) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let value = Self::decode(&mut r)?;
        r.finish(record)?;
        Ok(value)
    }

    /// Decodes one value from the start of `bytes` and ignores whatever follows it, as
    /// Java's jute readers do with a server's frames (see the crate's "Trailing bytes"). A
    /// value cut short, or a length that runs past the end, is still an error.
    ///
    /// ```
    /// use zk_proto::{Decode, ReplyHeader};
    ///
    /// let mut frame = vec![0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0];
    /// frame.extend([1, 2, 3]); // a field of a newer server
    /// assert_eq!(ReplyHeader::decode_prefix(&frame).unwrap().xid, 5);
    /// assert!(ReplyHeader::decode_exact(&frame, "ReplyHeader").is_err());
    /// assert!(ReplyHeader::decode_prefix(&frame[..15]).is_err());
    /// ```
    fn decode_prefix(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(&mut Reader::new(bytes))
    }
}

/// A value that can be written as jute bytes.
pub trait Encode {
    /// The exact number of bytes [`Encode::encode`] writes.
    fn encoded_len(&self) -> usize;

    /// Appends the value to `out`. Fails only for a length over `i32::MAX`.
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError>;

    /// The encoded bytes in a fresh buffer. (Not in the trait's vtable: a `dyn Encode` never
    /// needs it, and each vtable entry is code in every binary.)
    fn to_bytes(&self) -> Result<Bytes, EncodeError>
    where
        Self: Sized,
    {
        let mut out = BytesMut::with_capacity(self.encoded_len());
        self.encode(&mut out)?;
        Ok(out.freeze())
    }
}

/// Receives a record's fields in wire order, with their names in `zookeeper.jute`, the way
/// Java's `org.apache.jute.OutputArchive` does. Used to render records field by field (the
/// conformance check against the Java classes does this) and for diagnostics.
pub trait Visitor {
    /// An `int` field.
    fn int(&mut self, tag: &str, value: i32);
    /// A `long` field.
    fn long(&mut self, tag: &str, value: i64);
    /// A `boolean` field.
    fn bool(&mut self, tag: &str, value: bool);
    /// A `ustring` field.
    fn string(&mut self, tag: &str, value: &str);
    /// A `buffer` field (`None` is null).
    fn buffer(&mut self, tag: &str, value: Option<&[u8]>);
    /// A nested record starts.
    fn start_record(&mut self, tag: &str);
    /// The innermost record ends.
    fn end_record(&mut self);
    /// A vector starts.
    fn start_vector(&mut self, tag: &str);
    /// The innermost vector ends.
    fn end_vector(&mut self);
}

/// A value whose fields can be walked by a [`Visitor`].
pub trait Visit {
    /// Walks the value as the field `tag`.
    fn visit(&self, tag: &str, v: &mut dyn Visitor);
}

pub(crate) fn len_prefix(what: &'static str, len: usize) -> Result<i32, EncodeError> {
    i32::try_from(len).map_err(|_| EncodeError::LengthOverflow { what, len })
}

impl Decode for i32 {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.i32()
    }
}
impl Encode for i32 {
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i32(*self);
        Ok(())
    }
}
impl Visit for i32 {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.int(tag, *self);
    }
}

impl Decode for i64 {
    const MIN_LEN: usize = 8;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.i64()
    }
}
impl Encode for i64 {
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i64(*self);
        Ok(())
    }
}
impl Visit for i64 {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.long(tag, *self);
    }
}

impl Decode for bool {
    const MIN_LEN: usize = 1;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.bool()
    }
}
impl Encode for bool {
    fn encoded_len(&self) -> usize {
        1
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u8(u8::from(*self));
        Ok(())
    }
}
impl Visit for bool {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.bool(tag, *self);
    }
}

impl Decode for String {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.string().map(std::borrow::Cow::into_owned)
    }
}
impl Encode for String {
    fn encoded_len(&self) -> usize {
        self.as_str().encoded_len()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.as_str().encode(out)
    }
}
impl Encode for str {
    fn encoded_len(&self) -> usize {
        4 + crate::java_utf8::encoded_len(self)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i32(len_prefix("string", crate::java_utf8::encoded_len(self))?);
        crate::java_utf8::encode(self, out);
        Ok(())
    }
}
impl Visit for String {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.string(tag, self);
    }
}

/// A `ustring` that may be a constant (an [`Id`](crate::records::Id)'s `world`/`anyone`):
/// encoded as a string, decoded owned.
impl Decode for std::borrow::Cow<'static, str> {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        String::decode(r).map(std::borrow::Cow::Owned)
    }
}
impl Encode for std::borrow::Cow<'static, str> {
    fn encoded_len(&self) -> usize {
        str::encoded_len(self)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        str::encode(self, out)
    }
}
impl Visit for std::borrow::Cow<'static, str> {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.string(tag, self);
    }
}

/// A vector that may be a constant (a create's [`Acl`](crate::records::Acl) list, so that
/// creating with an open ACL allocates nothing for it): encoded as a vector, decoded owned.
impl<T: Decode + Clone> Decode for std::borrow::Cow<'static, [T]> {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Vec::<T>::decode(r).map(std::borrow::Cow::Owned)
    }
}
impl<T: Encode + Clone> Encode for std::borrow::Cow<'static, [T]> {
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        (**self).encode(out)
    }
}
impl<T: Visit + Clone> Visit for std::borrow::Cow<'static, [T]> {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        (**self).visit(tag, v);
    }
}

/// A `ustring` that may be null (`-1`): only `ReconfigRequest` needs one.
impl Decode for Option<String> {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut peek = r.clone();
        if peek.i32()? == -1 {
            let _ = r.i32()?;
            return Ok(None);
        }
        r.string().map(|s| Some(s.into_owned()))
    }
}
impl Encode for Option<String> {
    fn encoded_len(&self) -> usize {
        self.as_deref().map_or(4, Encode::encoded_len)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            None => {
                out.put_i32(-1);
                Ok(())
            }
            Some(s) => s.encode(out),
        }
    }
}
impl Visit for Option<String> {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        match self {
            Some(s) => v.string(tag, s),
            None => v.buffer(tag, None),
        }
    }
}

impl Decode for Option<Bytes> {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(r.buffer()?.map(Bytes::copy_from_slice))
    }
}
impl Encode for Option<Bytes> {
    fn encoded_len(&self) -> usize {
        4 + self.as_ref().map_or(0, Bytes::len)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            None => out.put_i32(-1),
            Some(b) => {
                out.put_i32(len_prefix("buffer", b.len())?);
                out.put_slice(b);
            }
        }
        Ok(())
    }
}
impl Visit for Option<Bytes> {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.buffer(tag, self.as_deref());
    }
}

impl<T: Decode> Decode for Vec<T> {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.field();
        let n = r.vector_len(T::MIN_LEN)?;
        // `n` is bounded by the bytes present, so this capacity is too.
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(T::decode(r.at(at))?);
        }
        Ok(items)
    }
}
/// A vector's encoding, for `Vec<T>` and `Cow<[T]>` alike.
impl<T: Encode> Encode for [T] {
    fn encoded_len(&self) -> usize {
        4 + self.iter().map(Encode::encoded_len).sum::<usize>()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i32(len_prefix("vector", self.len())?);
        self.iter().try_for_each(|item| item.encode(out))
    }
}
impl<T: Visit> Visit for [T] {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_vector(tag);
        for item in self {
            item.visit("", v);
        }
        v.end_vector();
    }
}
impl<T: Encode> Encode for Vec<T> {
    fn encoded_len(&self) -> usize {
        self.as_slice().encoded_len()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.as_slice().encode(out)
    }
}
impl<T: Visit> Visit for Vec<T> {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        self.as_slice().visit(tag, v);
    }
}

/// Defines a jute record: a struct with public fields in wire order, and its [`Decode`],
/// [`Encode`] and [`Visit`] implementations. Each field names its `zookeeper.jute` tag.
macro_rules! record {
    (
        $(#[$meta:meta])*
        $name:ident $jute:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $tag:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::Decode for $name {
            const MIN_LEN: usize = 0 $( + <$ty as $crate::Decode>::MIN_LEN )*;
            fn decode(r: &mut $crate::Reader<'_>) -> Result<Self, $crate::DecodeError> {
                Ok(Self {
                    $( $field: <$ty as $crate::Decode>::decode(r.at(concat!($jute, ".", $tag)))?, )*
                })
            }
        }

        impl $crate::Encode for $name {
            fn encoded_len(&self) -> usize {
                0 $( + $crate::Encode::encoded_len(&self.$field) )*
            }
            #[allow(unused_variables)]
            fn encode(&self, out: &mut bytes::BytesMut) -> Result<(), $crate::EncodeError> {
                $( $crate::Encode::encode(&self.$field, out)?; )*
                Ok(())
            }
        }

        impl $crate::Visit for $name {
            fn visit(&self, tag: &str, v: &mut dyn $crate::Visitor) {
                v.start_record(tag);
                $( $crate::Visit::visit(&self.$field, $tag, v); )*
                v.end_record();
            }
        }
    };
}
pub(crate) use record;

/// Defines a fieldless code enum carried on the wire as an `int`, with its conversions and
/// codec: unknown values decode to [`DecodeError::UnknownCode`].
macro_rules! int_code {
    (
        $(#[$meta:meta])*
        $name:ident $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[repr(i32)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),* ];

            /// The value on the wire.
            pub const fn code(self) -> i32 {
                self as i32
            }

            /// The variant for a wire value, if there is one.
            pub const fn from_code(code: i32) -> Option<Self> {
                match code {
                    $( $value => Some($name::$variant), )*
                    _ => None,
                }
            }
        }

        impl From<$name> for i32 {
            fn from(v: $name) -> i32 {
                v.code()
            }
        }

        impl TryFrom<i32> for $name {
            type Error = i32;
            fn try_from(code: i32) -> Result<Self, i32> {
                Self::from_code(code).ok_or(code)
            }
        }

        impl $crate::Decode for $name {
            const MIN_LEN: usize = 4;
            fn decode(r: &mut $crate::Reader<'_>) -> Result<Self, $crate::DecodeError> {
                let offset = r.offset();
                let value = r.i32()?;
                Self::from_code(value).ok_or($crate::DecodeError::UnknownCode {
                    at: r.field(),
                    offset,
                    value,
                })
            }
        }

        impl $crate::Encode for $name {
            fn encoded_len(&self) -> usize {
                4
            }
            fn encode(&self, out: &mut bytes::BytesMut) -> Result<(), $crate::EncodeError> {
                bytes::BufMut::put_i32(out, self.code());
                Ok(())
            }
        }

        impl $crate::Visit for $name {
            fn visit(&self, tag: &str, v: &mut dyn $crate::Visitor) {
                v.int(tag, self.code());
            }
        }
    };
}
pub(crate) use int_code;
