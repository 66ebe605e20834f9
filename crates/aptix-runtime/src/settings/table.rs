//! The settings tables: every key declared once, with its type, its flag's clap
//! attributes and its help text; and the checks of each layer's values.

use std::path::Path;

use aptix_orchestrator::OrchestratorConfig;
use aptix_request::{ModelParams, check_model_settings};
use serde::Deserialize;

use super::values::{
    ApiKind, ByteSize, FromEnvText, HumanDuration, ListenAddr, SchemaStrategy, StoreUrl,
};
use super::{Env, env_var};
use crate::Error;

/// A table of settings: one layer of optional values, read from a config file (serde),
/// the environment and, with the `clap` feature, the command line.
pub(crate) trait Table: Sized + Clone + Default + serde::de::DeserializeOwned {
    /// The values the environment sets, checked.
    fn from_env(env: Env<'_>) -> Result<Self, Error>;

    /// This layer over `lower`: each value from `self` when set, else from `lower`.
    fn over(self, lower: Self) -> Self;

    /// Checks each value and normalises it; `name` says where a key's value came from.
    fn check(self, name: &dyn Fn(&str) -> String) -> Result<Self, Error>;

    /// The flag that sets `key` (`--max-output-tokens`), when it is a key of the table.
    fn flag(key: &str) -> Option<String>;

    /// Makes the paths a config file in `folder` gives relative to that folder.
    fn relative_to(&mut self, _folder: &Path) {}

    /// The help text of each key's flag, for the drift test.
    #[cfg(test)]
    fn help_texts() -> Vec<(&'static str, &'static str)>;
}

/// The flag of a key: `--` and the key with `-` for `_`, unless the table names one.
macro_rules! flag_of {
    ($key:ident) => {
        format!("--{}", stringify!($key).replace('_', "-"))
    };
    ($key:ident, $flag:literal) => {
        format!("--{}", $flag)
    };
}

/// A value's `Debug` text with any URL password in it hidden.
struct WithoutPassword<'a, T>(&'a T);

impl<T: std::fmt::Debug> std::fmt::Debug for WithoutPassword<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&aptix_model::redact_url(&format!("{:?}", self.0)))
    }
}

/// Declares a table of settings once: each key (the config file key, the flag, and the
/// environment variable through [`env_var`]), its type, its flag's clap attributes and
/// its help text. From this one table come the layer struct (a serde struct for the
/// files and, with the `clap` feature, a clap `Args` for the flags), the list of keys,
/// the environment reader and the layering; tests check that each help text names its
/// key and variable, and that `docs/cli.md` lists them.
macro_rules! settings {
    (
        $(#[doc = $table_doc:literal])*
        pub struct $name:ident;
        const $keys:ident;
        $(
            $(#[doc = $doc:literal])*
            $key:ident: $ty:ty, arg($($arg:tt)*) $(, flag $flag:literal)?;
        )+
    ) => {
        $(#[doc = $table_doc])*
        // Unknown keys are refused by hand before serde sees a file (naming the file and
        // the known keys of every table).
        #[derive(Clone, Default, PartialEq, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::Args))]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[cfg_attr(feature = "clap", arg(long $(= $flag)?, $($arg)*))]
                pub $key: Option<$ty>,
            )+
        }

        // Every value shown as `Debug` shows it, but a URL's password (`base_url`
        // through a proxy that wants one): a layer is logged at `-vv`.
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut shown = f.debug_struct(stringify!($name));
                $(shown.field(stringify!($key), &WithoutPassword(&self.$key));)+
                shown.finish()
            }
        }

        #[doc = concat!("Every key of [`", stringify!($name), "`], in the order the docs list them.")]
        pub(crate) const $keys: &[&str] = &[$(stringify!($key)),+];

        impl Table for $name {
            fn from_env(env: Env<'_>) -> Result<$name, Error> {
                let layer = $name {
                    $($key: from_env_var::<$ty>(env, stringify!($key))?,)+
                };
                layer.check(&env_var)
            }

            fn over(self, lower: $name) -> $name {
                $name {
                    $($key: self.$key.or(lower.$key),)+
                }
            }

            fn check(self, name: &dyn Fn(&str) -> String) -> Result<$name, Error> {
                self.checked(name)
            }

            fn flag(key: &str) -> Option<String> {
                $(
                    if key == stringify!($key) {
                        return Some(flag_of!($key $(, $flag)?));
                    }
                )+
                None
            }

            fn relative_to(&mut self, folder: &Path) {
                self.relative_paths(folder);
            }

            #[cfg(test)]
            fn help_texts() -> Vec<(&'static str, &'static str)> {
                vec![$((stringify!($key), concat!($($doc, "\n"),*)),)+]
            }
        }
    };
}

settings! {
    /// One layer of the settings every front end shares: each value is set or not.
    /// [`Settings`](crate::Settings) is every layer applied.
    pub struct SettingsLayer;
    const KEYS;

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
    /// `--stateless` is `true`, `--stateless=false` turns it off [config: stateless,
    /// env: APTIX_STATELESS]
    stateless: bool, arg(value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new());
    /// Sampling temperature, 0 to 2 [config: temperature, env: APTIX_TEMPERATURE]
    temperature: f64, arg(value_name = "T");
    /// Upper bound on generated tokens [config: max_output_tokens, env:
    /// APTIX_MAX_OUTPUT_TOKENS]
    max_output_tokens: u64, arg(value_name = "N");
    /// Reasoning effort: none, minimal, low, medium, high, xhigh or max [config:
    /// reasoning_effort, env: APTIX_REASONING_EFFORT]
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
    /// `--background` is `true`, `--background=false` turns it off [config:
    /// background, env: APTIX_BACKGROUND]
    background: bool, arg(value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new());
    /// The model's context window in tokens, for a server or model Aptix does not know;
    /// default from the model id (e.g. 128000 for gpt-4o, 32768 for an unknown model)
    /// [config: context_window, env: APTIX_CONTEXT_WINDOW]
    context_window: u64, arg(value_name = "TOKENS");
    /// Share of the context window a request may reach before the session is compacted
    /// first, above 0 and at most 1 [config: compact_threshold, env:
    /// APTIX_COMPACT_THRESHOLD]
    compact_threshold: f64, arg(value_name = "SHARE");
    /// How long a session stays locked by a turn whose process cannot give it back
    /// (on another host, or where a dead process cannot be detected), e.g. 5m [config:
    /// lease_ttl, env: APTIX_LEASE_TTL]
    lease_ttl: HumanDuration, arg(value_name = "DURATION");
    /// Offer the model the built-in read-only tools (search_code, read_file,
    /// list_files) over the workspace; `--no-tools` or `--tools=false` turns them off
    /// [config: tools, env: APTIX_TOOLS]
    tools: bool, arg(value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new());
    /// Do not offer this built-in tool (search_code, read_file or list_files); repeat
    /// it or separate names with commas [config: disabled_tools, env:
    /// APTIX_DISABLED_TOOLS]
    disabled_tools: Vec<String>, arg(value_name = "NAME", value_delimiter = ','), flag "disable-tool";
    /// How `ask --schema` asks for the answer's shape: native_schema, tool_call,
    /// json_object or prompt_only; default: chosen from the provider's capabilities,
    /// the next one tried when the server refuses it [config: schema_strategy, env:
    /// APTIX_SCHEMA_STRATEGY]
    schema_strategy: SchemaStrategy, arg(value_name = "STRATEGY");
    /// Where sessions are kept: a PostgreSQL URL (postgres://user:password@host/db),
    /// shared by every process that uses it, or a SQLite file; default
    /// .aptix/sessions.db in the workspace [config: store, env: APTIX_STORE_URL]
    store: StoreUrl, arg(value_name = "URL");
}

settings! {
    /// One layer of `aptix serve`'s own settings (the HTTP service around the
    /// orchestrator), layered like the others. Only `serve` reads them; the config files
    /// may hold them beside the shared keys.
    pub struct ServeLayer;
    const SERVE_KEYS;

    /// The address to listen on (an IP address and port, or localhost:PORT); a
    /// non-loopback address needs bearer tokens [default: 127.0.0.1:8787] [config:
    /// listen, env: APTIX_LISTEN]
    listen: ListenAddr, arg(value_name = "ADDR");
    /// Bearer tokens, one per line (`#` comments and blank lines ignored); also
    /// APTIX_SERVE_TOKENS (comma-separated). With tokens, /v1/* needs `Authorization:
    /// Bearer`; relative to the config file that names it [config: tokens_file, env:
    /// APTIX_TOKENS_FILE]
    tokens_file: std::path::PathBuf, arg(value_name = "FILE");
    /// Turns running at once across all sessions; more are answered 503 [default: 64]
    /// [config: max_concurrent_turns, env: APTIX_MAX_CONCURRENT_TURNS]
    max_concurrent_turns: usize, arg(value_name = "N");
    /// The largest request body, in bytes or with a unit (512KiB, 4MiB); larger is 413
    /// [default: 1MiB] [config: body_limit, env: APTIX_BODY_LIMIT]
    body_limit: ByteSize, arg(value_name = "SIZE");
    /// The longest a turn may run (e.g. 10m); longer is 504 [default: 10m] [config:
    /// turn_timeout, env: APTIX_TURN_TIMEOUT]
    turn_timeout: HumanDuration, arg(value_name = "DURATION");
    /// The longest a client may take to send a request's headers; the connection is then
    /// closed (also a keep-alive connection idle that long) [default: 30s] [config:
    /// header_timeout, env: APTIX_HEADER_TIMEOUT]
    header_timeout: HumanDuration, arg(value_name = "DURATION");
    /// The longest a client may take to send a request's body; longer is 408 [default:
    /// 60s] [config: body_timeout, env: APTIX_BODY_TIMEOUT]
    body_timeout: HumanDuration, arg(value_name = "DURATION");
    /// How long turns in flight may take to finish after Ctrl-C or SIGTERM [default:
    /// 30s] [config: shutdown_grace, env: APTIX_SHUTDOWN_GRACE]
    shutdown_grace: HumanDuration, arg(value_name = "DURATION");
    /// A JSON file of tools the client runs (an editor's edits, a terminal): an array of
    /// function tools as the Responses API takes them ({"name", "description",
    /// "parameters", "strict"}), each with an optional "usage" (guidance for the
    /// model). A call of one ends the turn with its calls pending for the client's
    /// toolResults; relative to the config file that names it [config: client_tools,
    /// env: APTIX_CLIENT_TOOLS]
    client_tools: std::path::PathBuf, arg(value_name = "FILE");
}

/// The value of `key`'s environment variable, when set.
fn from_env_var<T: FromEnvText>(env: Env<'_>, key: &str) -> Result<Option<T>, Error> {
    let Some(text) = env(&env_var(key)) else {
        return Ok(None);
    };
    T::from_env_text(&text).map(Some).ok_or_else(|| {
        Error::config(format!(
            "invalid {} {text:?}: {}",
            env_var(key),
            T::why_not(&text)
        ))
    })
}

impl SettingsLayer {
    /// Checks each value and normalises it (trimmed text, canonical mode names, blank
    /// text as unset); `name` says where a key's value came from, for the error.
    fn checked(mut self, name: &dyn Fn(&str) -> String) -> Result<SettingsLayer, Error> {
        let non_blank = |key: &str, value: Option<String>| -> Result<Option<String>, Error> {
            match value {
                Some(text) if text.trim().is_empty() => {
                    Err(Error::config(format!("{} is blank", name(key))))
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
                return Err(Error::config(format!(
                    "{} {:?} is not an http or https url (expected e.g. http://127.0.0.1:8080/v1)",
                    name("base_url"),
                    aptix_model::redact_url(url)
                )));
            }
        }
        if let Some(mode) = self.mode.take() {
            self.mode = Some(canonical_mode(&mode).ok_or_else(|| {
                Error::config(format!(
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
            (
                "reasoning_effort",
                ModelParams {
                    reasoning_effort: self.reasoning_effort.as_deref(),
                    ..ModelParams::default()
                },
            ),
        ] {
            check_model_settings(&settings)
                .map_err(|error| Error::config(format!("invalid {}: {error}", name(key))))?;
        }
        self.system_prompt = self
            .system_prompt
            .filter(|prompt| !prompt.trim().is_empty());
        if self.context_window == Some(0) {
            return Err(Error::config(format!(
                "invalid {}: at least 1 token",
                name("context_window")
            )));
        }
        // A lease is renewed every third of its TTL, at most every 50 ms: one shorter
        // than a second lapses between renewals on a loaded machine, and another process
        // then takes a session a turn still runs on (the turn's commit fails as a
        // conflict, after its model call was paid for).
        if let Some(HumanDuration(ttl)) = self.lease_ttl
            && ttl < MIN_LEASE_TTL
        {
            return Err(Error::config(format!(
                "invalid {}: at least 1s (a shorter lease lapses between its renewals, and another process takes the session while a turn still runs on it)",
                name("lease_ttl")
            )));
        }
        if let Some(threshold) = self.compact_threshold
            && !(threshold > 0.0 && threshold <= 1.0)
        {
            return Err(Error::config(format!(
                "invalid {}: {threshold} is not above 0 and at most 1",
                name("compact_threshold")
            )));
        }
        if self.stream_max_attempts == Some(0) {
            return Err(Error::config(format!(
                "invalid {}: at least 1 attempt (1 turns recovery off)",
                name("stream_max_attempts")
            )));
        }
        if let Some(tools) = self.disabled_tools.take() {
            let mut names: Vec<String> = Vec::new();
            for tool in tools {
                let tool = tool.trim();
                if !aptix_tools::TOOL_NAMES.contains(&tool) {
                    return Err(Error::config(format!(
                        "{} {tool:?} is not a built-in tool (known tools: {})",
                        name("disabled_tools"),
                        aptix_tools::TOOL_NAMES.join(", ")
                    )));
                }
                if !names.iter().any(|known| known == tool) {
                    names.push(tool.to_owned());
                }
            }
            self.disabled_tools = Some(names);
        }
        Ok(self)
    }

    /// The shared settings hold no paths relative to their file: `store` is relative
    /// to the workspace.
    fn relative_paths(&mut self, _folder: &Path) {}
}

impl ServeLayer {
    /// Serve's values need no check beyond their types (the front end checks ranges).
    fn checked(self, _name: &dyn Fn(&str) -> String) -> Result<ServeLayer, Error> {
        Ok(self)
    }

    /// A relative `tokens_file` or `client_tools` is relative to the config file that
    /// names it.
    fn relative_paths(&mut self, folder: &Path) {
        for file in [&mut self.tokens_file, &mut self.client_tools] {
            if let Some(path) = file.as_mut() {
                *path = folder.join(&*path);
            }
        }
    }
}

/// The shortest lease TTL the settings take (the library takes any above zero, for
/// tests that watch a lease expire).
const MIN_LEASE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

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
