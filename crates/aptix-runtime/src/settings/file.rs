//! Config files: where the user's is, and reading one as a layer.

use std::path::{Path, PathBuf};

use super::table::Table;
use super::{Env, KEYS, SERVE_KEYS};
use crate::Error;

/// Keys that look like a place for the API key, refused with a pointer to the variable.
const SECRET_KEYS: &[&str] = &["api_key", "openai_api_key", "key"];

/// The user's config file: `$XDG_CONFIG_HOME/aptix/config.toml` when that variable is an
/// absolute path (the XDG rule), else `$HOME/.config/aptix/config.toml`.
pub(crate) fn user_config_path(env: Env<'_>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("aptix").join("config.toml"))
}

/// Keys of the `aptix` command itself, read before any table (logging starts first):
/// `log_format` (see [`configured_log_format`](super::configured_log_format)).
pub(super) const COMMAND_KEYS: &[&str] = &["log_format"];

/// The string value of `key` in the config file at `path`, when the file exists, reads
/// as TOML and sets it (`Some(Err(_))` when it is not a string). A file that does not
/// read is left to the settings' own load, which says why.
pub(super) fn string_key(path: &Path, key: &str) -> Option<Result<String, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let table: toml::Table = text.parse().ok()?;
    Some(match table.get(key)? {
        toml::Value::String(value) => Ok(value.clone()),
        other => Err(other.to_string()),
    })
}

/// Reads a config file as a layer of `T`, checked (`None` when there is no such file):
/// valid TOML, no key that holds a secret, no key outside [`KEYS`] and [`SERVE_KEYS`]
/// (a file holds both tables), and each value of the right type, every error naming the
/// file, the key and the line.
pub(super) fn read<T: Table>(path: &Path) -> Result<Option<T>, Error> {
    // A file that is there but does not read is a bad config file, the person's to fix
    // (exit 2), as one that does not parse is: not a failure of the command.
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if path.symlink_metadata().is_ok() {
                return Err(Error::config(format!(
                    "config file {} is a symbolic link to nothing (its target does not exist)",
                    path.display()
                )));
            }
            return Ok(None);
        }
        Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Error::config(format!(
                "config file {} is not UTF-8 text",
                path.display()
            )));
        }
        Err(error) => {
            return Err(Error::config(format!(
                "config file {} cannot be read: {error}",
                path.display()
            )));
        }
    };
    let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        // Where: the line, and its key (never its value, which may be a secret put
        // there by mistake).
        let at = error.span().map(|span| {
            let line = text
                .get(..span.start)
                .unwrap_or_default()
                .matches('\n')
                .count();
            let key = text
                .lines()
                .nth(line)
                .and_then(|line| line.split_once('='))
                .map(|(key, _)| key.trim())
                .filter(|key| !key.is_empty())
                .map(|key| format!(", at `{key}`"))
                .unwrap_or_default();
            format!(" (line {}{key})", line + 1)
        });
        Error::config(format!(
            "config file {} is not valid toml{}: {}",
            path.display(),
            at.unwrap_or_default(),
            error.message()
        ))
    })?;
    for key in table.keys() {
        if SECRET_KEYS.contains(&key.as_str()) {
            return Err(Error::config(format!(
                "key `{key}` in {}: the api key is never read from a config file; set OPENAI_API_KEY instead",
                path.display()
            )));
        }
        if !KEYS.contains(&key.as_str())
            && !SERVE_KEYS.contains(&key.as_str())
            && !COMMAND_KEYS.contains(&key.as_str())
        {
            let hint = closest_key(key)
                .map_or_else(String::new, |known| format!("; did you mean `{known}`?"));
            return Err(Error::config(format!(
                "unknown key `{key}` in {}{hint} (known keys: {}; for aptix serve: {}; for every command: {})",
                path.display(),
                KEYS.join(", "),
                SERVE_KEYS.join(", "),
                COMMAND_KEYS.join(", ")
            )));
        }
    }
    let layer: T = toml::from_str(&text).map_err(|error| {
        // The error points at the value; its line names the key.
        let start = error.span().map_or(0, |span| span.start);
        let line = text.get(..start).unwrap_or_default().matches('\n').count();
        let key = text
            .lines()
            .nth(line)
            .and_then(|line| line.split('=').next())
            .unwrap_or_default()
            .trim();
        Error::config(format!(
            "invalid value for `{key}` in {} (line {}): {}",
            path.display(),
            line + 1,
            error.message()
        ))
    })?;
    let shown = path.display().to_string();
    layer.check(&|key| format!("`{key}` in {shown}")).map(Some)
}

/// The known key `key` is most likely a misspelling of (`modle` -> `model`,
/// `max_concurent_turns` -> `max_concurrent_turns`), when one is close enough.
fn closest_key(key: &str) -> Option<&'static str> {
    super::closest(
        key,
        KEYS.iter()
            .chain(SERVE_KEYS.iter())
            .chain(COMMAND_KEYS.iter())
            .copied(),
        0.85,
    )
}
