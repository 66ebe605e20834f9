//! String enums whose set of values may grow: each known value has a variant that
//! serialises to exactly its string, and any other string is kept in `Other` instead of
//! failing the decode. A client built today keeps working when a newer server adds a
//! value. Decoding never produces `Other` holding a known string. With the `openapi`
//! feature each is a string schema listing the known values and allowing any other.

/// Declares an open string enum: known variants with their exact strings, plus `Other`.
macro_rules! open_string_enum {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[doc = $vdoc])* $variant, )+
            /// A value this version of Aptix does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// Every known value, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The value as it appears on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(text) => text,
                }
            }

            /// Reads a wire value; unknown values become `Other`.
            pub fn parse(text: &str) -> $name {
                match text {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl ::std::convert::From<&str> for $name {
            fn from(text: &str) -> $name {
                $name::parse(text)
            }
        }

        impl ::std::convert::From<String> for $name {
            fn from(text: String) -> $name {
                match $name::parse(&text) {
                    $name::Other(_) => $name::Other(text),
                    known => known,
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                <String as ::serde::Deserialize>::deserialize(deserializer).map($name::from)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        // A string: one of the known values, or any other (see `open_enum` in the
        // `openapi` module); the description is the doc comments.
        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $crate::openapi::open_enum(&[$($doc),*], &[$( ($text, &[$($vdoc),*]) ),+])
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $name {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }
        }
    };
}

pub(crate) use open_string_enum;
