//! The types of setting values that are not plain numbers or text, and how each type is
//! spelled in an environment variable.

use std::path::PathBuf;

use serde::Deserialize;

/// Which wire API the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ApiKind {
    /// `POST {base_url}/responses`.
    Responses,
    /// `POST {base_url}/chat/completions`, through the bridge.
    Chat,
}

impl ApiKind {
    /// The endpoint below the base URL.
    pub(crate) fn endpoint(self) -> &'static str {
        match self {
            ApiKind::Responses => "responses",
            ApiKind::Chat => "chat/completions",
        }
    }
}

/// How `aptix ask --schema` asks for the answer's shape, whatever the provider's
/// capabilities would choose (see `aptix_schema::Strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SchemaStrategy {
    /// Native structured output (`text.format` `json_schema`, strict).
    NativeSchema,
    /// A forced `generate_response` function tool whose parameters are the schema.
    ToolCall,
    /// JSON mode (`text.format` `json_object`), the schema in the system prompt.
    JsonObject,
    /// Plain text, the schema in the system prompt.
    PromptOnly,
}

impl SchemaStrategy {
    const ALL: [SchemaStrategy; 4] = [
        SchemaStrategy::NativeSchema,
        SchemaStrategy::ToolCall,
        SchemaStrategy::JsonObject,
        SchemaStrategy::PromptOnly,
    ];

    /// The solver's strategy.
    pub fn strategy(self) -> aptix_schema::Strategy {
        match self {
            SchemaStrategy::NativeSchema => aptix_schema::Strategy::NativeSchema,
            SchemaStrategy::ToolCall => aptix_schema::Strategy::ToolCall,
            SchemaStrategy::JsonObject => aptix_schema::Strategy::JsonObject,
            SchemaStrategy::PromptOnly => aptix_schema::Strategy::PromptOnly,
        }
    }
}

/// A duration as people write it: `30s`, `5m`, `1h 30m`, `500ms` (humantime's syntax);
/// a bare whole number is seconds (in a config file also a TOML integer). Zero is
/// refused, and so is more than a year ([`HumanDuration::MAX`]): no setting means that
/// long, and deadlines that far out overflow the clock they are added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub std::time::Duration);

impl std::str::FromStr for HumanDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<HumanDuration, String> {
        let text = text.trim();
        let duration = match text.parse::<u64>() {
            Ok(seconds) => std::time::Duration::from_secs(seconds),
            Err(_) => humantime::parse_duration(text)
                .map_err(|error| format!("{error} (expected e.g. 30s, 5m, 1h 30m)"))?,
        };
        if duration.is_zero() {
            return Err("a duration must be longer than zero".to_owned());
        }
        if duration > HumanDuration::MAX {
            return Err("a duration must be at most a year (365d)".to_owned());
        }
        Ok(HumanDuration(duration))
    }
}

impl HumanDuration {
    /// The longest duration a setting takes: 365 days.
    pub const MAX: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 60 * 60);
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        text_or_count(
            deserializer,
            "a duration such as \"30s\" or \"5m\", or whole seconds",
        )?
        .parse()
        .map_err(serde::de::Error::custom)
    }
}

/// A setting written as text or as a whole number (a TOML integer), as its text; any
/// other value is an error that says what was `expected`.
fn text_or_count<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    expected: &'static str,
) -> Result<String, D::Error> {
    struct Visitor(&'static str);
    impl serde::de::Visitor<'_> for Visitor {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<String, E> {
            Ok(value.to_string())
        }
        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<String, E> {
            u64::try_from(value)
                .map(|value| value.to_string())
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(value), &self))
        }
        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<String, E> {
            Ok(value.to_owned())
        }
    }
    deserializer.deserialize_any(Visitor(expected))
}

/// A size in bytes as people write it: a whole number of bytes (in a config file also a
/// TOML integer), or a number with a unit: `KiB`, `MiB`, `GiB` (powers of 1024), `KB`,
/// `MB`, `GB` (powers of 1000) or `B`, in any case and with or without a space
/// (`512KiB`, `2 MiB`, `1.5MB`). Zero is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub usize);

impl std::str::FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        const EXPECTED: &str = "expected bytes, or a size such as 512KiB, 2MiB or 1MB";
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit = unit.trim().to_ascii_lowercase();
        let scale: u64 = match unit.as_str() {
            "" | "b" => 1,
            "kib" => 1 << 10,
            "mib" => 1 << 20,
            "gib" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ => return Err(format!("unknown unit {unit:?} ({EXPECTED})")),
        };
        let bytes = match number.parse::<u64>() {
            Ok(whole) => whole.checked_mul(scale),
            // A fraction needs a unit to be a whole number of bytes.
            Err(_) if scale > 1 => number
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite() && *value >= 0.0)
                .map(|value| value * scale as f64)
                .filter(|bytes| *bytes < u64::MAX as f64)
                .map(|bytes| bytes.round() as u64),
            Err(_) => None,
        }
        .ok_or_else(|| format!("not a size ({EXPECTED})"))?;
        let bytes = usize::try_from(bytes)
            .map_err(|_| "larger than this machine can address".to_owned())?;
        if bytes == 0 {
            return Err("a size must be larger than zero".to_owned());
        }
        Ok(ByteSize(bytes))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        text_or_count(
            deserializer,
            "a size such as \"512KiB\" or \"4MiB\", or whole bytes",
        )?
        .parse()
        .map_err(serde::de::Error::custom)
    }
}

/// Where sessions are kept, as configured: a PostgreSQL URL or a SQLite file path.
/// `Debug` hides the password, so a printed layer never shows it; parsing never fails
/// (a bad value is reported when the store is opened, with the password hidden), so no
/// parser error can echo it either.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct StoreUrl(pub String);

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreUrl({:?})", aptix_orchestrator::redact_url(&self.0))
    }
}

impl std::str::FromStr for StoreUrl {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<StoreUrl, Self::Err> {
        Ok(StoreUrl(text.trim().to_owned()))
    }
}

/// A setting's type as an environment variable spells it; the error says what was
/// expected.
pub(crate) trait FromEnvText: Sized {
    /// What a valid value looks like, for the error.
    const EXPECTED: &'static str;
    /// The value, or `None` when `text` is not one.
    fn from_env_text(text: &str) -> Option<Self>;
    /// Why `text` is not a value, for the error: what one looks like, unless the type
    /// knows better (a duration of zero is written as one, and refused for its value).
    fn why_not(text: &str) -> String {
        let _ = text;
        format!("expected {}", Self::EXPECTED)
    }
}

impl FromEnvText for String {
    const EXPECTED: &'static str = "text";
    fn from_env_text(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
}

/// A list is written comma-separated (`read_file,list_files`); blank items are dropped.
impl FromEnvText for Vec<String> {
    const EXPECTED: &'static str = "names separated by commas";
    fn from_env_text(text: &str) -> Option<Self> {
        Some(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }
}

impl FromEnvText for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_env_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

impl FromEnvText for u32 {
    const EXPECTED: &'static str = "a whole number";
    fn from_env_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

impl FromEnvText for u64 {
    const EXPECTED: &'static str = "a whole number";
    fn from_env_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

impl FromEnvText for usize {
    const EXPECTED: &'static str = "a whole number";
    fn from_env_text(text: &str) -> Option<Self> {
        // A budget beyond the address space is no budget at all.
        u64::from_env_text(text).map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

impl FromEnvText for bool {
    const EXPECTED: &'static str = "true or false (1/0, yes/no, on/off)";
    fn from_env_text(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        }
    }
}

impl FromEnvText for ApiKind {
    const EXPECTED: &'static str = "responses or chat";
    fn from_env_text(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "responses" => Some(ApiKind::Responses),
            "chat" => Some(ApiKind::Chat),
            _ => None,
        }
    }
}

impl FromEnvText for SchemaStrategy {
    const EXPECTED: &'static str = "native_schema, tool_call, json_object or prompt_only";
    /// By the solver's own names for its strategies (`Strategy::as_str`).
    fn from_env_text(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        SchemaStrategy::ALL
            .into_iter()
            .find(|strategy| strategy.strategy().as_str() == text)
    }
}

impl FromEnvText for HumanDuration {
    const EXPECTED: &'static str = "a duration such as 30s, 5m or 1h 30m";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
    /// The reason a flag or a config file is given, so the three sources say the same.
    fn why_not(text: &str) -> String {
        text.parse::<Self>().err().unwrap_or_default()
    }
}

impl FromEnvText for ByteSize {
    const EXPECTED: &'static str = "a size in bytes, or such as 512KiB, 2MiB or 1MB";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
    /// The reason a flag or a config file is given, so the three sources say the same.
    fn why_not(text: &str) -> String {
        text.parse::<Self>().err().unwrap_or_default()
    }
}

impl FromEnvText for StoreUrl {
    const EXPECTED: &'static str = "a postgres:// URL or a file path";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// An address to listen on: an IP address and a port (`127.0.0.1:8787`, `[::1]:8787`,
/// `0.0.0.0:8787`), or `localhost:PORT`, which is `127.0.0.1:PORT`. No other host name
/// is looked up: which interface a name stands for is for the operator to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddr(pub std::net::SocketAddr);

impl std::str::FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<ListenAddr, String> {
        let text = text.trim();
        if let Ok(address) = text.parse() {
            return Ok(ListenAddr(address));
        }
        let localhost_port = text
            .split_once(':')
            .filter(|(host, _)| host.eq_ignore_ascii_case("localhost"))
            .and_then(|(_, port)| port.parse::<u16>().ok());
        localhost_port
            .map(|port| ListenAddr(std::net::SocketAddr::from(([127, 0, 0, 1], port))))
            .ok_or_else(|| {
                format!(
                    "{text:?} is not an address to listen on (expected an IP address and a \
                     port, such as 127.0.0.1:8787, [::1]:8787 or 0.0.0.0:8787, or \
                     localhost:8787)"
                )
            })
    }
}

impl<'de> Deserialize<'de> for ListenAddr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl FromEnvText for ListenAddr {
    const EXPECTED: &'static str = "an address such as 127.0.0.1:8787 or localhost:8787";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl FromEnvText for PathBuf {
    const EXPECTED: &'static str = "a file path";
    fn from_env_text(text: &str) -> Option<Self> {
        Some(PathBuf::from(text.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_are_ip_and_port_or_localhost() {
        use super::ListenAddr;
        let parsed = |text: &str| {
            text.parse::<ListenAddr>()
                .map(|listen| listen.0.to_string())
        };
        assert_eq!(parsed("127.0.0.1:8787").as_deref(), Ok("127.0.0.1:8787"));
        assert_eq!(parsed(" [::1]:9000 ").as_deref(), Ok("[::1]:9000"));
        assert_eq!(parsed("0.0.0.0:80").as_deref(), Ok("0.0.0.0:80"));
        assert_eq!(parsed("localhost:8787").as_deref(), Ok("127.0.0.1:8787"));
        assert_eq!(parsed("LocalHost:1").as_deref(), Ok("127.0.0.1:1"));
        for wrong in [
            "localhost",
            "localhost:",
            "localhost:99999",
            "example.com:80",
            "8787",
            "",
        ] {
            let error = parsed(wrong).unwrap_err();
            assert!(error.contains("127.0.0.1:8787"), "{wrong}: {error}");
        }
        let from_toml: std::collections::BTreeMap<String, ListenAddr> =
            toml::from_str("listen = \"localhost:9100\"").unwrap();
        assert_eq!(from_toml["listen"].0.to_string(), "127.0.0.1:9100");
    }

    #[test]
    fn env_text_spellings() {
        assert_eq!(bool::from_env_text(" On "), Some(true));
        assert_eq!(bool::from_env_text("maybe"), None);
        assert_eq!(ApiKind::from_env_text("CHAT"), Some(ApiKind::Chat));
        assert_eq!(
            Vec::<String>::from_env_text(" read_file, ,list_files "),
            Some(vec!["read_file".to_owned(), "list_files".to_owned()])
        );
        assert_eq!(
            HumanDuration::from_env_text("1m 30s"),
            Some(HumanDuration(std::time::Duration::from_secs(90)))
        );
        assert_eq!(HumanDuration::from_env_text("0"), None);
        assert_eq!(
            HumanDuration::why_not("0"),
            "a duration must be longer than zero"
        );
        // Past a year: refused, not added to a clock that overflows (a panic in every
        // connection of `aptix serve --header-timeout 18446744073709551615`).
        assert_eq!(
            HumanDuration::why_not("18446744073709551615"),
            "a duration must be at most a year (365d)"
        );
        assert_eq!(
            HumanDuration::from_env_text("365d"),
            Some(HumanDuration(HumanDuration::MAX))
        );
        assert_eq!(
            bool::why_not("maybe"),
            format!("expected {}", bool::EXPECTED)
        );
    }

    #[test]
    fn a_config_file_value_of_the_wrong_kind_says_what_was_expected() {
        #[derive(Debug, Deserialize)]
        struct Keys {
            #[allow(dead_code)]
            size: Option<ByteSize>,
            #[allow(dead_code)]
            wait: Option<HumanDuration>,
        }
        let read = |text: &str| {
            toml::from_str::<Keys>(text)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert!(read("size = 2048\nwait = 30").is_ok());
        assert!(read("size = \"2MiB\"\nwait = \"5m\"").is_ok());
        for (text, expected) in [
            ("size = -1", "a size such as"),
            ("size = 1.5", "a size such as"),
            ("size = true", "a size such as"),
            ("wait = -3", "a duration such as"),
            ("wait = [1]", "a duration such as"),
        ] {
            let error = read(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn sizes_are_bytes_or_a_number_with_a_unit() {
        let size = |text: &str| text.parse::<ByteSize>().map(|size| size.0);
        assert_eq!(size("1048576"), Ok(1_048_576));
        assert_eq!(size("2MiB"), Ok(2 << 20));
        assert_eq!(size(" 512 kib "), Ok(512 << 10));
        assert_eq!(size("1MB"), Ok(1_000_000));
        assert_eq!(size("1.5MiB"), Ok(1_572_864));
        assert_eq!(size("10b"), Ok(10));
        for bad in [
            "", "0", "0MiB", "1.5", "-1MiB", "1 TiB", "MiB", "1e3", "nanMiB",
        ] {
            assert!(size(bad).is_err(), "{bad:?} was read");
        }
        assert!(
            size("99999999999999999999GiB")
                .unwrap_err()
                .contains("not a size")
        );
        assert_eq!(ByteSize::from_env_text("4KiB"), Some(ByteSize(4096)));
        assert_eq!(ByteSize::why_not("0"), "a size must be larger than zero");
    }
}
