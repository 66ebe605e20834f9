//! String enums whose set of values the API may grow: known values get a variant, any
//! other string is kept in `Other` instead of failing the decode.

macro_rules! open_string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version of Aptix does not know, kept as sent.
            Other(String),
        }

        impl $name {
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

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok($name::parse(&text))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use open_string_enum;

open_string_enum! {
    /// The author of a message.
    pub enum Role {
        /// Top-priority instructions (`system`).
        System = "system",
        /// Developer instructions, which newer models treat like `system`.
        Developer = "developer",
        /// The end user.
        User = "user",
        /// The model.
        Assistant = "assistant",
    }
}

open_string_enum! {
    /// The lifecycle status of a whole response.
    pub enum ResponseStatus {
        /// Finished normally.
        Completed = "completed",
        /// Stopped early; `incomplete_details.reason` says why.
        Incomplete = "incomplete",
        /// Failed; `error` says why.
        Failed = "failed",
        /// Cancelled (background responses only).
        Cancelled = "cancelled",
        /// Waiting to start (background responses only).
        Queued = "queued",
        /// Still running: seen in stream events before the terminal one.
        InProgress = "in_progress",
    }
}

open_string_enum! {
    /// The status of one output item.
    pub enum ItemStatus {
        /// Being generated.
        InProgress = "in_progress",
        /// Done.
        Completed = "completed",
        /// Cut off with the response.
        Incomplete = "incomplete",
    }
}
