//! Settings: flags over the environment over `<workspace>/aptix.toml` over the user's
//! `config.toml` over the built-in defaults, each value taken from the highest layer
//! that sets it.
//!
//! Every layer is a [`SettingsLayer`] of optional values, checked on its own so that an
//! error names where the bad value came from (`--temperature`, `APTIX_TEMPERATURE`,
//! `temperature in /repo/aptix.toml`). Config files are flat TOML tables; an unknown
//! key is an error naming the key and the file, and `api_key` is refused outright: the
//! key is read only from `OPENAI_API_KEY`, so it never sits in a file that may be
//! committed or shared.
//!
//! The environment is read through a lookup function ([`Env`]), never directly, so that
//! tests and embedders give their own; empty variables count as unset, as the official
//! SDKs treat them.

mod file;
mod table;
mod values;

use std::path::{Path, PathBuf};

use aptix_model::is_loopback_url;
use aptix_orchestrator::{ModelSettings, OrchestratorConfig};

pub(crate) use file::user_config_path;
use table::Table;
pub(crate) use table::{KEYS, SERVE_KEYS};
pub use table::{ServeLayer, SettingsLayer};
pub use values::{ApiKind, ByteSize, HumanDuration, ListenAddr, SchemaStrategy, StoreUrl};

use crate::Error;

/// The workspace config file's name.
pub(crate) const WORKSPACE_FILE: &str = "aptix.toml";

/// A source of environment variables: `Some` only for a set, non-empty variable.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as an [`Env`]: empty or non-UTF-8 values count as unset.
pub fn process_env(name: &str) -> Option<String> {
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

/// Variables of the command's own, beside the settings' (`APTIX_<KEY>`).
const OTHER_VARIABLES: [&str; 5] = [
    "APTIX_LOG_FORMAT",
    "APTIX_SERVE_TOKENS",
    "APTIX_WORKSPACE",
    "APTIX_MCP_TOOL_TIMEOUT",
    "APTIX_MCP_STARTUP_TIMEOUT",
];

/// Environment variables named like an Aptix setting's but not one (`APTIX_MODLE`), each
/// with the variable it most likely means: the environment is read by name, so a
/// misspelt variable is otherwise ignored without a word (a config file's unknown key is
/// an error; a variable cannot be, as other tools set `APTIX_*` names of their own).
/// Only names close to a known one are returned: a misspelling of one, or a known name
/// short of one of its words (`APTIX_TOKENS` for `APTIX_SERVE_TOKENS`). Short generic
/// names other tools use (`APTIX_URL`, `APTIX_TOKEN`) are left alone.
pub fn misspelt_variables<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, String)> {
    let known: Vec<String> = KEYS
        .iter()
        .chain(SERVE_KEYS.iter())
        .map(|key| env_var(key))
        .chain(OTHER_VARIABLES.iter().map(|name| (*name).to_owned()))
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let rest = name.strip_prefix("APTIX_")?;
            if known.iter().any(|known| known == name) {
                return None;
            }
            let suffixes = known
                .iter()
                .filter_map(|known| known.strip_prefix("APTIX_"));
            // A name one word short of the one meant (`APTIX_TOKENS`) may mean any that
            // has its words and one more (`APTIX_SERVE_TOKENS`, `APTIX_TOKENS_FILE`):
            // each is named, rather than the one that merely starts the same. Only for
            // a distinctive word (five letters or more) and a few candidates: `APTIX_URL`
            // or `APTIX_TIMEOUT` is as likely another tool's own.
            let words: Vec<&str> = rest.split('_').filter(|word| !word.is_empty()).collect();
            let distinctive = words.iter().any(|word| word.len() >= 5);
            let mut holding: Vec<&str> = suffixes
                .clone()
                .filter(|suffix| {
                    let theirs: Vec<&str> = suffix.split('_').collect();
                    distinctive
                        && theirs.len() == words.len() + 1
                        && words.iter().all(|word| theirs.contains(word))
                })
                .collect();
            holding.sort_unstable();
            if (1..=3).contains(&holding.len()) {
                let named: Vec<String> = holding
                    .iter()
                    .map(|suffix| format!("APTIX_{suffix}"))
                    .collect();
                return Some((name, named.join(" or ")));
            }
            closest(rest, suffixes, 0.9).map(|suffix| (name, format!("APTIX_{suffix}")))
        })
        .collect()
}

/// The candidate `word` is most likely a misspelling of: the most similar
/// (Jaro-Winkler), when it is more similar than `threshold`. The one rule of "did you
/// mean" for config keys and variables.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    threshold: f64,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(word, candidate), candidate))
        .filter(|(similarity, _)| *similarity > threshold)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// Every layer applied, and what the user's own layers (flags, environment, user file)
/// say without the workspace's file.
struct Layers<T> {
    merged: T,
    files: Vec<PathBuf>,
    /// `flags` over `env` over the user file: what a workspace cannot choose.
    users: T,
}

fn layers<T: Table>(workspace: &Path, flags: &T, env: Env<'_>) -> Result<Layers<T>, Error> {
    let mut merged = T::default();
    let mut users = T::default();
    let mut files = Vec::new();
    let workspace_file = workspace.join(WORKSPACE_FILE);
    let user_file = user_config_path(env);
    for path in user_file.iter().chain(std::iter::once(&workspace_file)) {
        if let Some(mut layer) = file::read::<T>(path)? {
            if let Some(folder) = path.parent() {
                layer.relative_to(folder);
            }
            if *path != workspace_file {
                users = layer.clone().over(users);
            }
            merged = layer.over(merged);
            files.push(path.clone());
        }
    }
    let from_env = T::from_env(env)?;
    users = from_env.clone().over(users);
    merged = from_env.over(merged);
    let flags = flags
        .clone()
        .check(&|key| T::flag(key).unwrap_or_else(|| format!("--{}", key.replace('_', "-"))))?;
    users = flags.clone().over(users);
    Ok(Layers {
        merged: flags.over(merged),
        files,
        users,
    })
}

/// The log format the config files set for `workspace` (`log_format = "json"`; the
/// workspace's `aptix.toml` over the user's file): `"text"` or `"json"`, or `None`. Read
/// by the command before logging starts, under `--log-format` and `APTIX_LOG_FORMAT`; a
/// file that does not read is reported by the settings' own load, after.
pub fn configured_log_format(workspace: &Path, env: Env<'_>) -> Result<Option<String>, Error> {
    let mut format = None;
    for path in user_config_path(env)
        .into_iter()
        .chain(std::iter::once(workspace.join(WORKSPACE_FILE)))
    {
        match file::string_key(&path, "log_format") {
            None => {}
            Some(Ok(value))
                if matches!(value.trim().to_ascii_lowercase().as_str(), "text" | "json") =>
            {
                format = Some(value.trim().to_ascii_lowercase());
            }
            Some(Ok(value)) => {
                return Err(Error::config(format!(
                    "invalid value for `log_format` in {}: {value:?}; it must be \"text\" or \"json\"",
                    path.display()
                )));
            }
            Some(Err(value)) => {
                return Err(Error::config(format!(
                    "invalid value for `log_format` in {}: {value}; it must be \"text\" or \"json\"",
                    path.display()
                )));
            }
        }
    }
    Ok(format)
}

impl ServeLayer {
    /// `aptix serve`'s own settings for `workspace`: `flags` over `env` over the
    /// workspace file over the user file; a relative `tokens_file` from a config file is
    /// relative to that file's folder.
    ///
    /// A folder's own file (a cloned repository's) may not open the service to other
    /// machines: a `listen` address that is not loopback, or the `tokens_file` of a
    /// service that listens on one, chosen only by the workspace's `aptix.toml` is
    /// refused (its author would know the tokens, and run turns on the user's key).
    pub fn load(workspace: &Path, flags: &ServeLayer, env: Env<'_>) -> Result<ServeLayer, Error> {
        let Layers { merged, users, .. } = layers(workspace, flags, env)?;
        let exposed = merged
            .listen
            .as_ref()
            .is_some_and(|listen| !listen.0.ip().is_loopback());
        let trust = || {
            format!(
                "pass it as a flag, an APTIX_* variable or in your user config ({})",
                user_config_path(env).map_or_else(
                    || "~/.config/aptix/config.toml".to_owned(),
                    |path| path.display().to_string(),
                )
            )
        };
        if let Some(listen) = merged.listen.as_ref().filter(|_| exposed)
            && users.listen.as_ref() != Some(listen)
        {
            return Err(Error::config(format!(
                "the workspace's aptix.toml sets listen to {}, an address other machines can reach: a folder's own file may only choose a loopback address; if you mean to serve this workspace on the network, {}",
                listen.0,
                trust()
            )));
        }
        if let Some(tokens) = merged.tokens_file.as_ref().filter(|_| exposed)
            && users.tokens_file.as_ref() != Some(tokens)
        {
            return Err(Error::config(format!(
                "the workspace's aptix.toml sets tokens_file to {} for a service other machines can reach: whoever wrote the folder's file would know the tokens; {}",
                tokens.display(),
                trust()
            )));
        }
        Ok(merged)
    }
}

/// The settings in force for one workspace: every layer applied. Unset values take the
/// built-in defaults where they are used (those of [`OrchestratorConfig::default`] and
/// the HTTP client's), so that a continued session keeps what it stored for anything
/// not configured.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    configured: SettingsLayer,
    files: Vec<PathBuf>,
    /// The base URL is one only the workspace's file chose, of another machine.
    base_url_from_workspace: bool,
    /// The store is a database only the workspace's file chose, on another machine.
    store_from_workspace: bool,
}

impl Settings {
    /// Reads every layer for `workspace`: `flags` over `env` over the workspace file
    /// over the user file, each checked.
    pub fn load(workspace: &Path, flags: &SettingsLayer, env: Env<'_>) -> Result<Settings, Error> {
        let Layers {
            merged: configured,
            files,
            users,
        } = layers(workspace, flags, env)?;
        // A base URL only the workspace's file chose, of another machine: the API key
        // is not sent there (see `provider`).
        let base_url_from_workspace = configured
            .base_url
            .as_ref()
            .is_some_and(|url| users.base_url.as_ref() != Some(url) && !is_loopback_url(url));
        // Likewise a PostgreSQL store only the workspace's file chose, of another
        // machine: `PGPASSWORD` is not sent there (see `Workspace::open_store`).
        let store_from_workspace = configured.store.as_ref().is_some_and(|store| {
            users.store.as_ref() != Some(store) && !crate::store::is_local_database(&store.0)
        });
        Ok(Settings {
            configured,
            files,
            base_url_from_workspace,
            store_from_workspace,
        })
    }

    /// The store URL when the workspace's `aptix.toml` alone chose it and it names a
    /// database on another machine (which `PGPASSWORD` must not be sent to).
    pub(crate) fn workspace_store(&self) -> Option<&str> {
        self.configured
            .store
            .as_ref()
            .map(|store| store.0.as_str())
            .filter(|_| self.store_from_workspace)
    }

    /// The base URL when the workspace's `aptix.toml` alone chose it and it names
    /// another machine: a folder someone else wrote (a cloned repository, whatever an
    /// editor opens) must not be able to send the user's API key to a host of its
    /// choosing.
    pub(crate) fn workspace_base_url(&self) -> Option<&str> {
        self.configured
            .base_url
            .as_deref()
            .filter(|_| self.base_url_from_workspace)
    }

    /// Every value some layer set.
    pub fn configured(&self) -> &SettingsLayer {
        &self.configured
    }

    /// The config files that were read, lowest first.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The strategy `ask --schema` must use (`schema_strategy`); `None`: the solver
    /// chooses from the provider's capabilities.
    pub fn schema_strategy(&self) -> Option<aptix_schema::Strategy> {
        self.configured
            .schema_strategy
            .map(SchemaStrategy::strategy)
    }

    /// The wire API.
    pub(crate) fn api(&self) -> ApiKind {
        self.configured.api.unwrap_or(ApiKind::Responses)
    }

    /// Whether history is replayed instead of chained.
    pub(crate) fn stateless(&self) -> bool {
        self.configured.stateless.unwrap_or(false)
    }

    /// Whether the built-in tool `name` is offered: tools are on unless turned off, and
    /// then every one not disabled by name.
    pub(crate) fn offers_tool(&self, name: &str) -> bool {
        self.configured.tools.unwrap_or(true)
            && !self
                .configured
                .disabled_tools
                .iter()
                .flatten()
                .any(|disabled| disabled == name)
    }

    /// The configured base URL, if any (the provider's default otherwise).
    pub(crate) fn base_url(&self) -> Option<&str> {
        self.configured.base_url.as_deref()
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

    /// The orchestrator configuration: the library defaults with every configured value
    /// applied. A new session starts with its mode and model settings.
    pub fn orchestrator_config(&self) -> OrchestratorConfig {
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

    /// Settings of exactly this layer, read from no file (for tests).
    #[cfg(test)]
    pub(crate) fn of(configured: SettingsLayer) -> Settings {
        Settings {
            configured,
            files: Vec::new(),
            base_url_from_workspace: false,
            store_from_workspace: false,
        }
    }
}

#[cfg(test)]
mod tests;
