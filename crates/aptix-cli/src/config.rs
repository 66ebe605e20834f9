//! Settings: flags over the environment over `<workspace>/aptix.toml` over the user's
//! `config.toml` over the built-in defaults, each value taken from the highest layer
//! that sets it.
//!
//! Every layer is a [`Layer`] of optional values, checked on its own so that an error
//! names where the bad value came from (`--temperature`, `APTIX_TEMPERATURE`,
//! `temperature in /repo/aptix.toml`). Config files are flat TOML tables; an unknown
//! key is an error naming the key and the file, and `api_key` is refused outright: the
//! key is read only from `OPENAI_API_KEY`, so it never sits in a file that may be
//! committed or shared.
//!
//! The environment is read through a lookup function, never directly, so that tests
//! give their own; empty variables count as unset, as the official SDKs treat them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use aptix_orchestrator::{ModelSettings, OrchestratorConfig};
use aptix_request::{ModelParams, check_model_settings};
use clap::ValueEnum as _;
use serde::Deserialize;

use crate::cli::ApiKind;
use crate::exit::usage;

/// The workspace config file's name.
pub(crate) const WORKSPACE_FILE: &str = "aptix.toml";

/// Keys that look like a place for the API key, refused with a pointer to the variable.
const SECRET_KEYS: &[&str] = &["api_key", "openai_api_key", "key"];

/// A source of environment variables: `Some` only for a set, non-empty variable.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as an [`Env`]: empty or non-UTF-8 values count as unset.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// The environment variable that sets a config key.
pub(crate) fn env_var(key: &str) -> String {
    if key == "base_url" {
        "OPENAI_BASE_URL".to_owned()
    } else if key == "store" {
        "APTIX_STORE_URL".to_owned()
    } else {
        format!("APTIX_{}", key.to_ascii_uppercase())
    }
}

/// Declares every setting once: its key (the config file key, the `--flag` with `-` for
/// `_`, and the environment variable through [`env_var`]), its type, and its help text.
/// From this one table come the [`Layer`] struct (a clap `Args` for the flags and a serde
/// struct for the files), [`KEYS`], the environment reader and the layering; tests check
/// that each help text names its key and variable, and that `docs/cli.md` lists them.
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])*
        $key:ident: $ty:ty, arg($($arg:tt)*);
    )+) => {
        /// One layer of settings: each value is set or not.
        // Unknown keys are refused by hand before serde sees a file (naming the file and
        // the known keys); `aptix serve`'s keys (`SERVE_KEYS`) are read by `ServeLayer`.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
        pub(crate) struct Layer {
            $(
                $(#[doc = $doc])*
                #[arg(long, $($arg)*)]
                pub(crate) $key: Option<$ty>,
            )+
        }

        /// Every config key, in the order the docs list them.
        pub(crate) const KEYS: &[&str] = &[$(stringify!($key)),+];

        impl Layer {
            /// The values the environment sets (`APTIX_<KEY>`, and `OPENAI_BASE_URL`).
            pub(crate) fn from_env(env: Env<'_>) -> Result<Layer, anyhow::Error> {
                let layer = Layer {
                    $($key: from_env_var::<$ty>(env, stringify!($key))?,)+
                };
                layer.checked(&env_var)
            }

            /// This layer over `lower`: each value from `self` when set, else from `lower`.
            pub(crate) fn over(self, lower: Layer) -> Layer {
                Layer {
                    $($key: self.$key.or(lower.$key),)+
                }
            }

            /// The help text of each key's flag, for the drift test.
            #[cfg(test)]
            pub(crate) fn help_texts() -> Vec<(&'static str, &'static str)> {
                vec![$((stringify!($key), concat!($($doc, "\n"),*)),)+]
            }
        }
    };
}

settings! {
    /// Agent mode: QA or CODE_EDIT [config: mode, env: APTIX_MODE]
    mode: String, arg(value_name = "MODE");
    /// Model id [config: model, env: APTIX_MODEL]
    model: String, arg(value_name = "MODEL");
    /// Base URL up to and including /v1, e.g. http://127.0.0.1:8080/v1 [config:
    /// base_url, env: OPENAI_BASE_URL]
    base_url: String, arg(value_name = "URL");
    /// Wire API: `responses` (/v1/responses) or `chat` (the Chat Completions bridge,
    /// for servers without /v1/responses) [config: api, env: APTIX_API]
    api: ApiKind, arg(value_name = "API");
    /// Replay the session's history on every turn instead of chaining
    /// previous_response_id (servers that keep no state, such as llama-server); a bare
    /// `--stateless` is `true` [config: stateless, env: APTIX_STATELESS]
    stateless: bool, arg(value_name = "BOOL", num_args = 0..=1, default_missing_value = "true");
    /// Sampling temperature, 0 to 2 [config: temperature, env: APTIX_TEMPERATURE]
    temperature: f64, arg(value_name = "T");
    /// Upper bound on generated tokens [config: max_output_tokens, env:
    /// APTIX_MAX_OUTPUT_TOKENS]
    max_output_tokens: u64, arg(value_name = "N");
    /// Reasoning effort, e.g. low, medium, high [config: reasoning_effort, env:
    /// APTIX_REASONING_EFFORT]
    reasoning_effort: String, arg(value_name = "EFFORT");
    /// Token budget of the retrieved CONTEXT block [config: context_token_budget,
    /// env: APTIX_CONTEXT_TOKEN_BUDGET]
    context_token_budget: usize, arg(value_name = "TOKENS");
    /// Extra system prompt, appended to the built-in one [config: system_prompt, env:
    /// APTIX_SYSTEM_PROMPT]
    system_prompt: String, arg(value_name = "TEXT");
    /// Longest wait for one whole non-streamed reply, e.g. 10m [config:
    /// request_timeout, env: APTIX_REQUEST_TIMEOUT]
    request_timeout: HumanDuration, arg(value_name = "DURATION");
    /// Longest silence of a streamed reply (before its head and between chunks)
    /// before the stream counts as stalled, e.g. 5m [config: stream_idle_timeout, env:
    /// APTIX_STREAM_IDLE_TIMEOUT]
    stream_idle_timeout: HumanDuration, arg(value_name = "DURATION");
    /// Longest wait for a connection (DNS, TCP, TLS), e.g. 10s [config:
    /// connect_timeout, env: APTIX_CONNECT_TIMEOUT]
    connect_timeout: HumanDuration, arg(value_name = "DURATION");
    /// Retries of a failed request (429, 5xx, connection failures) after the first
    /// attempt; 0 turns them off [config: max_retries, env: APTIX_MAX_RETRIES]
    max_retries: u32, arg(value_name = "N");
    /// Attempts of one streamed model call whose stream is cut (the first included); 1
    /// turns recovery off [config: stream_max_attempts, env: APTIX_STREAM_MAX_ATTEMPTS]
    stream_max_attempts: u32, arg(value_name = "N");
    /// Stream in background mode (OpenAI only: the response is stored), so a cut
    /// stream resumes where it stopped instead of being sent again; a bare
    /// `--background` is `true` [config: background, env: APTIX_BACKGROUND]
    background: bool, arg(value_name = "BOOL", num_args = 0..=1, default_missing_value = "true");
    /// The model's context window in tokens, for a server or model Aptix does not know;
    /// default from the model id (e.g. 128000 for gpt-4o, 32768 for an unknown model)
    /// [config: context_window, env: APTIX_CONTEXT_WINDOW]
    context_window: u64, arg(value_name = "TOKENS");
    /// Share of the context window a request may reach before the session is compacted
    /// first, above 0 and at most 1 [config: compact_threshold, env:
    /// APTIX_COMPACT_THRESHOLD]
    compact_threshold: f64, arg(value_name = "SHARE");
    /// How long a session stays locked by an ask whose process cannot give it back
    /// (on another host, or where a dead process cannot be detected), e.g. 5m [config:
    /// lease_ttl, env: APTIX_LEASE_TTL]
    lease_ttl: HumanDuration, arg(value_name = "DURATION");
    /// Offer the model the built-in read-only tools (search_code, read_file,
    /// list_files) over the workspace; `--no-tools` or `false` turns them off [config:
    /// tools, env: APTIX_TOOLS]
    tools: bool, arg(value_name = "BOOL", num_args = 0..=1, default_missing_value = "true");
    /// Where sessions are kept: a PostgreSQL URL (postgres://user:password@host/db),
    /// shared by every process that uses it, or a SQLite file; default
    /// .aptix/sessions.db in the workspace [config: store, env: APTIX_STORE_URL]
    store: StoreUrl, arg(value_name = "URL");
}

/// Where sessions are kept, as configured: a PostgreSQL URL or a SQLite file path.
/// `Debug` hides the password, so a printed layer never shows it; parsing never fails
/// (a bad value is reported when the store is opened, with the password hidden), so no
/// parser error can echo it either.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct StoreUrl(pub(crate) String);

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

impl FromEnvText for StoreUrl {
    const EXPECTED: &'static str = "a postgres:// URL or a file path";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// A duration as people write it: `30s`, `5m`, `1h 30m`, `500ms` (humantime's
/// syntax); in a config file also a whole number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HumanDuration(pub(crate) std::time::Duration);

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
        Ok(HumanDuration(duration))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Seconds(u64),
            Text(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Seconds(seconds) => seconds.to_string(),
            Written::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromEnvText for HumanDuration {
    const EXPECTED: &'static str = "a duration such as 30s, 5m or 1h 30m";
    fn from_env_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl FromEnvText for u32 {
    const EXPECTED: &'static str = "a whole number";
    fn from_env_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

/// A setting's type as an environment variable spells it; the error says what was
/// expected.
trait FromEnvText: Sized {
    /// What a valid value looks like, for the error.
    const EXPECTED: &'static str;
    /// The value, or `None` when `text` is not one.
    fn from_env_text(text: &str) -> Option<Self>;
}

impl FromEnvText for String {
    const EXPECTED: &'static str = "text";
    fn from_env_text(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
}

impl FromEnvText for f64 {
    const EXPECTED: &'static str = "a number";
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
        parse_bool(text)
    }
}

impl FromEnvText for ApiKind {
    const EXPECTED: &'static str = "responses or chat";
    fn from_env_text(text: &str) -> Option<Self> {
        ApiKind::from_str(text.trim(), true).ok()
    }
}

/// The value of `key`'s environment variable, when set.
fn from_env_var<T: FromEnvText>(env: Env<'_>, key: &str) -> Result<Option<T>, anyhow::Error> {
    let Some(text) = env(&env_var(key)) else {
        return Ok(None);
    };
    T::from_env_text(&text).map(Some).ok_or_else(|| {
        usage(format!(
            "invalid {} {text:?}: expected {}",
            env_var(key),
            T::EXPECTED
        ))
    })
}

impl Layer {
    /// The values the flags set, checked.
    pub(crate) fn from_flags(flags: &Layer) -> Result<Layer, anyhow::Error> {
        flags
            .clone()
            .checked(&|key| format!("--{}", key.replace('_', "-")))
    }

    /// The values a config file sets, or `None` when there is no such file.
    pub(crate) fn from_file(path: &Path) -> Result<Option<Layer>, anyhow::Error> {
        let Some(layer) = read_config_file::<Layer>(path)? else {
            return Ok(None);
        };
        let shown = path.display().to_string();
        layer
            .checked(&|key| format!("`{key}` in {shown}"))
            .map(Some)
    }

    /// Checks each value and normalises it (trimmed text, canonical mode names, blank
    /// text as unset); `name` says where a key's value came from, for the error.
    fn checked(mut self, name: &dyn Fn(&str) -> String) -> Result<Layer, anyhow::Error> {
        let non_blank =
            |key: &str, value: Option<String>| -> Result<Option<String>, anyhow::Error> {
                match value {
                    Some(text) if text.trim().is_empty() => {
                        Err(usage(format!("{} is blank", name(key))))
                    }
                    other => Ok(other.map(|text| text.trim().to_owned())),
                }
            };
        self.model = non_blank("model", self.model)?;
        self.reasoning_effort = non_blank("reasoning_effort", self.reasoning_effort)?;
        self.base_url = non_blank("base_url", self.base_url)?;
        self.store = non_blank("store", self.store.map(|store| store.0))?.map(StoreUrl);
        if let Some(url) = &self.base_url {
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err(usage(format!(
                    "{} {url:?} is not an http or https url (expected e.g. http://127.0.0.1:8080/v1)",
                    name("base_url")
                )));
            }
        }
        if let Some(mode) = self.mode.take() {
            self.mode = Some(canonical_mode(&mode).ok_or_else(|| {
                usage(format!(
                    "{} {mode:?} is not a mode (known modes: {})",
                    name("mode"),
                    known_modes().join(", ")
                ))
            })?);
        }
        // The request builder's own rule, so a value accepted here is never rejected
        // when the request is built.
        for (key, settings) in [
            (
                "temperature",
                ModelParams {
                    temperature: self.temperature,
                    ..ModelParams::default()
                },
            ),
            (
                "max_output_tokens",
                ModelParams {
                    max_output_tokens: self.max_output_tokens,
                    ..ModelParams::default()
                },
            ),
        ] {
            check_model_settings(&settings)
                .map_err(|error| usage(format!("invalid {}: {error}", name(key))))?;
        }
        self.system_prompt = self
            .system_prompt
            .filter(|prompt| !prompt.trim().is_empty());
        if self.context_window == Some(0) {
            return Err(usage(format!(
                "invalid {}: at least 1 token",
                name("context_window")
            )));
        }
        if let Some(threshold) = self.compact_threshold
            && !(threshold > 0.0 && threshold <= 1.0)
        {
            return Err(usage(format!(
                "invalid {}: {threshold} is not above 0 and at most 1",
                name("compact_threshold")
            )));
        }
        if self.stream_max_attempts == Some(0) {
            return Err(usage(format!(
                "invalid {}: at least 1 attempt (1 turns recovery off)",
                name("stream_max_attempts")
            )));
        }
        Ok(self)
    }
}

/// Reads a config file as `T` (`None` when there is no such file): valid TOML, no key
/// that holds a secret, no key outside [`KEYS`] and [`SERVE_KEYS`], and each value of the
/// right type, every error naming the file, the key and the line.
fn read_config_file<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, anyhow::Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(error)
                .with_context(|| format!("could not read config file {}", path.display()));
        }
    };
    let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        usage(format!(
            "config file {} is not valid toml: {}",
            path.display(),
            error.message()
        ))
    })?;
    for key in table.keys() {
        if SECRET_KEYS.contains(&key.as_str()) {
            return Err(usage(format!(
                "key `{key}` in {}: the api key is never read from a config file; set OPENAI_API_KEY instead",
                path.display()
            )));
        }
        if !KEYS.contains(&key.as_str()) && !SERVE_KEYS.contains(&key.as_str()) {
            return Err(usage(format!(
                "unknown key `{key}` in {} (known keys: {}; for aptix serve: {})",
                path.display(),
                KEYS.join(", "),
                SERVE_KEYS.join(", ")
            )));
        }
    }
    toml::from_str(&text).map(Some).map_err(|error| {
        // The error points at the value; its line names the key.
        let start = error.span().map_or(0, |span| span.start);
        let line = text.get(..start).unwrap_or_default().matches('\n').count();
        let key = text
            .lines()
            .nth(line)
            .and_then(|line| line.split('=').next())
            .unwrap_or_default()
            .trim();
        usage(format!(
            "invalid value for `{key}` in {} (line {}): {}",
            path.display(),
            line + 1,
            error.message()
        ))
    })
}

/// `aptix serve`'s own settings, each a `--flag`, a key in the config files and an
/// `APTIX_<KEY>` variable, layered like the others (flags over the environment over the
/// workspace file over the user file). Only `serve` reads them.
pub(crate) const SERVE_KEYS: &[&str] = &[
    "listen",
    "tokens_file",
    "max_concurrent_turns",
    "body_limit",
    "turn_timeout",
    "shutdown_grace",
];

/// One layer of `aptix serve`'s settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct ServeLayer {
    pub(crate) listen: Option<std::net::SocketAddr>,
    pub(crate) tokens_file: Option<PathBuf>,
    pub(crate) max_concurrent_turns: Option<usize>,
    pub(crate) body_limit: Option<usize>,
    pub(crate) turn_timeout: Option<HumanDuration>,
    pub(crate) shutdown_grace: Option<HumanDuration>,
}

impl ServeLayer {
    /// This layer over `lower`.
    fn over(self, lower: ServeLayer) -> ServeLayer {
        ServeLayer {
            listen: self.listen.or(lower.listen),
            tokens_file: self.tokens_file.or(lower.tokens_file),
            max_concurrent_turns: self.max_concurrent_turns.or(lower.max_concurrent_turns),
            body_limit: self.body_limit.or(lower.body_limit),
            turn_timeout: self.turn_timeout.or(lower.turn_timeout),
            shutdown_grace: self.shutdown_grace.or(lower.shutdown_grace),
        }
    }

    fn from_env(env: Env<'_>) -> Result<ServeLayer, anyhow::Error> {
        Ok(ServeLayer {
            listen: from_env_var(env, "listen")?,
            tokens_file: from_env_var(env, "tokens_file")?,
            max_concurrent_turns: from_env_var(env, "max_concurrent_turns")?,
            body_limit: from_env_var(env, "body_limit")?,
            turn_timeout: from_env_var(env, "turn_timeout")?,
            shutdown_grace: from_env_var(env, "shutdown_grace")?,
        })
    }

    /// `flags` over the environment over the workspace file over the user file; a
    /// relative `tokens_file` from a config file is relative to that file's folder.
    pub(crate) fn load(
        workspace: &Path,
        flags: ServeLayer,
        env: Env<'_>,
    ) -> Result<ServeLayer, anyhow::Error> {
        let mut layered = ServeLayer::default();
        let workspace_file = workspace.join(WORKSPACE_FILE);
        for path in user_config_path(env)
            .iter()
            .chain(std::iter::once(&workspace_file))
        {
            if let Some(mut layer) = read_config_file::<ServeLayer>(path)? {
                if let (Some(file), Some(folder)) = (&layer.tokens_file, path.parent()) {
                    layer.tokens_file = Some(folder.join(file));
                }
                layered = layer.over(layered);
            }
        }
        Ok(flags.over(ServeLayer::from_env(env)?.over(layered)))
    }
}

impl FromEnvText for std::net::SocketAddr {
    const EXPECTED: &'static str = "an address such as 127.0.0.1:8787";
    fn from_env_text(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

impl FromEnvText for PathBuf {
    const EXPECTED: &'static str = "a file path";
    fn from_env_text(text: &str) -> Option<Self> {
        Some(PathBuf::from(text.trim()))
    }
}

/// `true` / `false` and their usual spellings, as environment variables write them.
fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The modes the orchestrator is configured with.
fn known_modes() -> Vec<String> {
    OrchestratorConfig::default()
        .modes
        .into_iter()
        .map(|mode| mode.name)
        .collect()
}

/// A mode's configured name, accepting any case and `-` for `_` (`code-edit`).
fn canonical_mode(text: &str) -> Option<String> {
    let wanted = text.trim().replace('-', "_").to_ascii_uppercase();
    known_modes().into_iter().find(|mode| *mode == wanted)
}

/// The user's config file: `$XDG_CONFIG_HOME/aptix/config.toml` when that variable is an
/// absolute path (the XDG rule), else `$HOME/.config/aptix/config.toml`.
pub(crate) fn user_config_path(env: Env<'_>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("aptix").join("config.toml"))
}

/// The settings in force for one invocation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// Every value some layer set; unset values take the built-in defaults.
    pub(crate) configured: Layer,
    /// The config files that were read, lowest first.
    pub(crate) files: Vec<PathBuf>,
}

impl Settings {
    /// Reads every layer for `workspace`: `flags` over `env` over the workspace file over
    /// the user file.
    pub(crate) fn load(
        workspace: &Path,
        flags: &Layer,
        env: Env<'_>,
    ) -> Result<Settings, anyhow::Error> {
        let mut configured = Layer::default();
        let mut files = Vec::new();
        let user = user_config_path(env);
        let workspace_file = workspace.join(WORKSPACE_FILE);
        for path in user.iter().chain(std::iter::once(&workspace_file)) {
            if let Some(layer) = Layer::from_file(path)? {
                configured = layer.over(configured);
                files.push(path.clone());
            }
        }
        configured = Layer::from_env(env)?.over(configured);
        configured = Layer::from_flags(flags)?.over(configured);
        Ok(Settings { configured, files })
    }

    /// The wire API.
    pub(crate) fn api(&self) -> ApiKind {
        self.configured.api.unwrap_or(ApiKind::Responses)
    }

    /// Whether history is replayed instead of chained.
    pub(crate) fn stateless(&self) -> bool {
        self.configured.stateless.unwrap_or(false)
    }

    /// Whether the built-in tools are offered (on unless turned off).
    pub(crate) fn tools(&self) -> bool {
        self.configured.tools.unwrap_or(true)
    }

    /// The HTTP client's timeouts and retries over `builder`: configured values only,
    /// the client's defaults otherwise.
    pub(crate) fn apply_client_settings(
        &self,
        mut builder: aptix_client::OpenAiConfigBuilder,
    ) -> aptix_client::OpenAiConfigBuilder {
        let layer = &self.configured;
        if let Some(HumanDuration(timeout)) = layer.request_timeout {
            builder = builder.request_timeout(Some(timeout));
        }
        if let Some(HumanDuration(timeout)) = layer.stream_idle_timeout {
            builder = builder.stream_idle_timeout(Some(timeout));
        }
        if let Some(HumanDuration(timeout)) = layer.connect_timeout {
            builder = builder.connect_timeout(Some(timeout));
        }
        if let Some(max_retries) = layer.max_retries {
            builder = builder.retry(aptix_client::RetryPolicy {
                max_retries,
                ..aptix_client::RetryPolicy::default()
            });
        }
        builder
    }

    /// The configured base URL, if any (the provider's default otherwise).
    pub(crate) fn base_url(&self) -> Option<&str> {
        self.configured.base_url.as_deref()
    }

    /// The orchestrator configuration: the library defaults with every configured value
    /// applied. A new session starts with its mode and model settings.
    pub(crate) fn orchestrator_config(&self) -> OrchestratorConfig {
        let mut config = OrchestratorConfig::default();
        let layer = &self.configured;
        self.apply_model_settings(&mut config.model);
        if let Some(mode) = &layer.mode {
            config.default_mode = mode.clone();
        }
        config.stateless = self.stateless();
        if let Some(budget) = layer.context_token_budget {
            config.context_token_budget = budget;
        }
        if let Some(HumanDuration(ttl)) = layer.lease_ttl {
            config.lease_ttl = ttl;
        }
        if let Some(attempts) = layer.stream_max_attempts {
            config.stream_recovery.max_attempts = attempts;
        }
        config.background = layer.background.unwrap_or(false);
        if let Some(window) = layer.context_window {
            config.context_window = Some(window);
        }
        if let Some(threshold) = layer.compact_threshold {
            config.compact_threshold = threshold;
        }
        if let Some(prompt) = &layer.system_prompt {
            for mode in &mut config.modes {
                mode.system_prompt = Some(match mode.system_prompt.take() {
                    Some(own) => format!("{own}\n\n{prompt}"),
                    None => prompt.clone(),
                });
            }
        }
        config
    }

    /// Writes the configured model settings over `model`, leaving unset ones alone. A
    /// continued session gets the same treatment, so what is configured now applies.
    pub(crate) fn apply_model_settings(&self, model: &mut ModelSettings) {
        let layer = &self.configured;
        if let Some(name) = &layer.model {
            model.model = name.clone();
        }
        if let Some(temperature) = layer.temperature {
            model.temperature = Some(temperature);
        }
        if let Some(max) = layer.max_output_tokens {
            model.max_output_tokens = Some(max);
        }
        if let Some(effort) = &layer.reasoning_effort {
            model.reasoning_effort = Some(effort.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.trim().is_empty())
        }
    }

    fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn message(error: &anyhow::Error) -> String {
        format!("{error:#}")
    }

    #[test]
    fn flags_beat_env_beat_workspace_file_beat_user_file_beat_defaults() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        write(
            home.path(),
            ".config/aptix/config.toml",
            "model = \"user-model\"\ntemperature = 0.1\nmax_output_tokens = 100\nmode = \"code-edit\"\n",
        );
        write(
            workspace.path(),
            "aptix.toml",
            "model = \"workspace-model\"\ntemperature = 0.2\nstateless = true\n",
        );
        let home_text = home.path().to_str().unwrap().to_owned();
        let env = env_of(&[
            ("HOME", &home_text),
            ("APTIX_TEMPERATURE", "0.3"),
            ("APTIX_STATELESS", "false"),
        ]);
        let flags = Layer {
            temperature: Some(0.4),
            ..Layer::default()
        };
        let settings = Settings::load(workspace.path(), &flags, &env).unwrap();
        let layer = &settings.configured;
        assert_eq!(layer.model.as_deref(), Some("workspace-model"));
        assert_eq!(layer.temperature, Some(0.4));
        assert_eq!(layer.max_output_tokens, Some(100));
        assert_eq!(layer.mode.as_deref(), Some("CODE_EDIT"));
        assert!(!settings.stateless(), "the environment beats the file");
        assert_eq!(settings.api(), ApiKind::Responses);
        assert_eq!(settings.files.len(), 2);

        let config = settings.orchestrator_config();
        assert_eq!(config.model.model, "workspace-model");
        assert_eq!(config.default_mode, "CODE_EDIT");
        let defaults = OrchestratorConfig::default();
        assert_eq!(config.context_token_budget, defaults.context_token_budget);
    }

    #[test]
    fn xdg_config_home_wins_over_home_when_absolute() {
        let env = env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/xdg")]);
        assert_eq!(
            user_config_path(&env).unwrap(),
            Path::new("/xdg/aptix/config.toml")
        );
        let env = env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "relative")]);
        assert_eq!(
            user_config_path(&env).unwrap(),
            Path::new("/home/u/.config/aptix/config.toml")
        );
        assert_eq!(user_config_path(&env_of(&[])), None);
    }

    #[test]
    fn unknown_keys_name_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "aptix.toml", "modle = \"x\"\n");
        let error = Layer::from_file(&path).unwrap_err();
        let text = message(&error);
        assert!(text.contains("unknown key `modle`"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert_eq!(crate::exit::code_of(&error), crate::exit::USAGE);
    }

    #[test]
    fn an_api_key_in_a_config_file_is_refused_without_echoing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "aptix.toml", "api_key = \"sk-secret-value\"\n");
        let text = message(&Layer::from_file(&path).unwrap_err());
        assert!(text.contains("OPENAI_API_KEY"), "{text}");
        assert!(!text.contains("sk-secret-value"), "{text}");
    }

    #[test]
    fn bad_values_name_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "aptix.toml", "temperature = \"hot\"\n");
        let text = message(&Layer::from_file(&path).unwrap_err());
        assert!(text.contains("`temperature`"), "{text}");
        assert!(text.contains("aptix.toml"), "{text}");

        let path = write(dir.path(), "aptix.toml", "temperature = 7.0\n");
        let text = message(&Layer::from_file(&path).unwrap_err());
        assert!(text.contains("temperature 7 is outside 0..=2"), "{text}");

        let path = write(dir.path(), "aptix.toml", "model = \n");
        let text = message(&Layer::from_file(&path).unwrap_err());
        assert!(text.contains("not valid toml"), "{text}");

        let env = env_of(&[("APTIX_API", "grpc")]);
        let text = message(&Layer::from_env(&env).unwrap_err());
        assert!(text.contains("APTIX_API"), "{text}");

        let env = env_of(&[("APTIX_MODE", "poetry")]);
        let text = message(&Layer::from_env(&env).unwrap_err());
        assert!(text.contains("APTIX_MODE") && text.contains("QA"), "{text}");

        let flags = Layer {
            base_url: Some("localhost:8080".into()),
            ..Layer::default()
        };
        let text = message(&Layer::from_flags(&flags).unwrap_err());
        assert!(text.contains("--base-url"), "{text}");

        let path = write(dir.path(), "aptix.toml", "request_timeout = \"soon\"\n");
        let text = message(&Layer::from_file(&path).unwrap_err());
        assert!(
            text.contains("`request_timeout`") && text.contains("expected e.g. 30s"),
            "{text}"
        );
        let env = env_of(&[("APTIX_LEASE_TTL", "0s")]);
        let text = message(&Layer::from_env(&env).unwrap_err());
        assert!(
            text.contains("APTIX_LEASE_TTL") && text.contains("30s"),
            "{text}"
        );
        let env = env_of(&[("APTIX_STREAM_MAX_ATTEMPTS", "0")]);
        let text = message(&Layer::from_env(&env).unwrap_err());
        assert!(text.contains("APTIX_STREAM_MAX_ATTEMPTS"), "{text}");
    }

    #[test]
    fn every_key_can_be_set_in_a_file_and_in_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "aptix.toml",
            "model = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi = \"chat\"\nstateless = true\nmode = \"QA\"\ntemperature = 1\nmax_output_tokens = 64\nreasoning_effort = \"low\"\ncontext_token_budget = 9\nsystem_prompt = \"Be brief.\"\nrequest_timeout = \"2m\"\nstream_idle_timeout = 90\nconnect_timeout = \"5s\"\nmax_retries = 4\nstream_max_attempts = 3\nbackground = true\ncontext_window = 50000\ncompact_threshold = 0.5\nlease_ttl = \"1m 30s\"\ntools = false\nstore = \"postgres://u:pw@db/aptix\"\n",
        );
        let from_file = Layer::from_file(&path).unwrap().unwrap();
        let vars: Vec<(String, String)> = [
            ("model", "m"),
            ("base_url", "http://127.0.0.1:1/v1"),
            ("api", "chat"),
            ("stateless", "yes"),
            ("mode", "qa"),
            ("temperature", "1"),
            ("max_output_tokens", "64"),
            ("reasoning_effort", "low"),
            ("context_token_budget", "9"),
            ("system_prompt", "Be brief."),
            ("request_timeout", "120s"),
            ("stream_idle_timeout", "1m 30s"),
            ("connect_timeout", "5"),
            ("max_retries", "4"),
            ("stream_max_attempts", "3"),
            ("background", "on"),
            ("context_window", "50000"),
            ("compact_threshold", "0.5"),
            ("lease_ttl", "90s"),
            ("tools", "off"),
            ("store", "postgres://u:pw@db/aptix"),
        ]
        .iter()
        .map(|(key, value)| (env_var(key), (*value).to_owned()))
        .collect();
        assert_eq!(vars.len(), KEYS.len());
        let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let from_env = Layer::from_env(&env_of(&pairs)).unwrap();
        assert_eq!(from_file, from_env);
        assert_eq!(from_file.api, Some(ApiKind::Chat));
        let settings = Settings {
            configured: from_file,
            files: Vec::new(),
        };
        let config = settings.orchestrator_config();
        assert!(config.stateless);
        assert_eq!(config.context_token_budget, 9);
        assert_eq!(config.lease_ttl, std::time::Duration::from_secs(90));
        assert_eq!(config.stream_recovery.max_attempts, 3);
        assert!(config.background);
        assert_eq!(config.context_window, Some(50_000));
        assert_eq!(config.compact_threshold, 0.5);
        assert_eq!(
            format!("{:?}", settings.configured.store),
            "Some(StoreUrl(\"postgres://u:***@db/aptix\"))",
            "Debug never shows the password"
        );
        let client = settings
            .apply_client_settings(
                aptix_client::OpenAiConfig::builder().base_url("http://127.0.0.1:1/v1"),
            )
            .build()
            .unwrap();
        let timeouts = client.timeouts();
        assert_eq!(timeouts.request, Some(std::time::Duration::from_secs(120)));
        assert_eq!(
            timeouts.stream_idle,
            Some(std::time::Duration::from_secs(90))
        );
        assert_eq!(timeouts.connect, Some(std::time::Duration::from_secs(5)));
        assert_eq!(client.retry().max_retries, 4);
        assert!(
            config
                .modes
                .iter()
                .all(|mode| mode.system_prompt.as_deref() == Some("Be brief."))
        );
    }

    #[test]
    fn every_flag_help_names_its_config_key_and_environment_variable() {
        let texts = Layer::help_texts();
        assert_eq!(texts.len(), KEYS.len());
        for (key, help) in texts {
            let help = help.replace('\n', " ").replace("  ", " ");
            assert!(help.contains(&format!("config: {key}")), "{key}: {help}");
            assert!(
                help.contains(&format!("env: {}", env_var(key))),
                "{key}: {help}"
            );
        }
    }

    #[test]
    fn the_cli_docs_list_every_key_and_its_variable() {
        let docs = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"),
        )
        .unwrap();
        for key in KEYS.iter().chain(SERVE_KEYS) {
            assert!(
                docs.contains(&format!("`{key}`")),
                "docs/cli.md does not list `{key}`"
            );
            assert!(
                docs.contains(&env_var(key)),
                "docs/cli.md does not name {}",
                env_var(key)
            );
            let flag = format!("--{}", key.replace('_', "-"));
            assert!(docs.contains(&flag), "docs/cli.md does not show {flag}");
        }
    }

    #[test]
    fn serve_settings_layer_flags_over_env_over_the_workspace_file() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "aptix.toml",
            "model = \"m\"\nlisten = \"127.0.0.1:9000\"\ntokens_file = \"secrets/tokens\"\nmax_concurrent_turns = 8\nbody_limit = 2048\nturn_timeout = \"2m\"\nshutdown_grace = 5\n",
        );
        // The ask-side layer accepts the file (serve keys are known keys) and ignores them.
        let layer = Layer::from_file(&dir.path().join("aptix.toml"))
            .unwrap()
            .unwrap();
        assert_eq!(layer.model.as_deref(), Some("m"));

        let none = |_: &str| None;
        let from_file = ServeLayer::load(dir.path(), ServeLayer::default(), &none).unwrap();
        assert_eq!(from_file.listen, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(
            from_file.tokens_file,
            Some(dir.path().join("secrets/tokens")),
            "relative to the file that names it"
        );
        assert_eq!(from_file.max_concurrent_turns, Some(8));
        assert_eq!(from_file.body_limit, Some(2048));
        assert_eq!(
            from_file.turn_timeout,
            Some(HumanDuration(std::time::Duration::from_secs(120)))
        );
        assert_eq!(
            from_file.shutdown_grace,
            Some(HumanDuration(std::time::Duration::from_secs(5)))
        );

        let env = env_of(&[
            ("APTIX_LISTEN", "127.0.0.1:9001"),
            ("APTIX_BODY_LIMIT", "4096"),
        ]);
        let flags = ServeLayer {
            listen: Some("127.0.0.1:9002".parse().unwrap()),
            ..ServeLayer::default()
        };
        let layered = ServeLayer::load(dir.path(), flags, &env).unwrap();
        assert_eq!(layered.listen, Some("127.0.0.1:9002".parse().unwrap()));
        assert_eq!(layered.body_limit, Some(4096));
        assert_eq!(layered.max_concurrent_turns, Some(8));

        let env = env_of(&[("APTIX_MAX_CONCURRENT_TURNS", "many")]);
        let text = message(&ServeLayer::load(dir.path(), ServeLayer::default(), &env).unwrap_err());
        assert!(text.contains("APTIX_MAX_CONCURRENT_TURNS"), "{text}");

        write(dir.path(), "aptix.toml", "listen = \"not an address\"\n");
        let text =
            message(&ServeLayer::load(dir.path(), ServeLayer::default(), &none).unwrap_err());
        assert!(
            text.contains("`listen`") && text.contains("aptix.toml"),
            "{text}"
        );
        write(dir.path(), "aptix.toml", "listn = \"127.0.0.1:1\"\n");
        let text =
            message(&ServeLayer::load(dir.path(), ServeLayer::default(), &none).unwrap_err());
        assert!(
            text.contains("unknown key `listn`") && text.contains("listen"),
            "{text}"
        );
    }
}
