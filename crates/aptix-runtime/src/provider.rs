//! Which provider and API the settings describe, and the request exactly as that
//! provider would send it.

use std::sync::Arc;

use aptix_client::chat::{ChatOptions, to_chat_request};
use aptix_client::{
    Capabilities, ChatCompletionsProvider, ClientError, DEFAULT_BASE_URL, FakeProvider,
    OpenAiConfigBuilder, OpenAiProvider, ResponsesProvider,
};
use aptix_model::wire::CreateResponseRequest;

use crate::Error;
use crate::settings::{ApiKind, Env, Settings, user_config_path};

/// What the provider reports about itself, as the real provider would: a dry run's
/// stand-in must make the orchestrator build the same body.
pub(crate) fn capabilities(settings: &Settings) -> Capabilities {
    match (settings.api(), settings.stateless()) {
        (ApiKind::Chat, _) => Capabilities::chat_completions(),
        (ApiKind::Responses, true) => Capabilities::stateless_responses(),
        (ApiKind::Responses, false) => Capabilities::openai_responses(),
    }
}

/// The HTTP provider the settings describe. The key, organization and project come
/// from the environment only.
pub(crate) fn provider(
    settings: &Settings,
    env: Env<'_>,
) -> Result<Arc<dyn ResponsesProvider>, Error> {
    let config = client_config(
        OpenAiConfigBuilder::from_lookup(|name| match name {
            // The base URL is a setting with its own precedence, applied below.
            "OPENAI_BASE_URL" => None,
            other => env(other),
        })
        .capabilities(capabilities(settings)),
        settings,
        env,
    )?;
    if config.has_api_key()
        && let Some(refusal) = untrusted_base_url(settings, env)
    {
        return Err(Error::config(refusal));
    }
    tracing::debug!(
        base_url = %config.base_url(),
        api = ?settings.api(),
        has_api_key = config.has_api_key(),
        "provider"
    );
    let built: Result<Arc<dyn ResponsesProvider>, ClientError> = match settings.api() {
        ApiKind::Responses => OpenAiProvider::new(config).map(|p| Arc::new(p) as _),
        ApiKind::Chat => ChatCompletionsProvider::new(config).map(|p| Arc::new(p) as _),
    };
    built.map_err(|error| config_error(error, settings, env))
}

/// `builder` with the settings' base URL, timeouts and retries, built and checked: the
/// one place settings become an HTTP client's configuration, for the provider and for
/// the dry run that must refuse what it would.
fn client_config(
    mut builder: OpenAiConfigBuilder,
    settings: &Settings,
    env: Env<'_>,
) -> Result<aptix_client::OpenAiConfig, Error> {
    if let Some(url) = settings.base_url() {
        builder = builder.base_url(url);
    }
    settings
        .apply_client_settings(builder)
        .build()
        .map_err(|error| config_error(error, settings, env))
}

/// Why the configured base URL may not be sent the API key, when it is one only the
/// workspace's `aptix.toml` chose, on another machine (see `Settings::load`); `None`
/// when it may. The one statement of the rule, for the provider and for a dry run that
/// must refuse what the call would.
pub(crate) fn untrusted_base_url(settings: &Settings, env: Env<'_>) -> Option<String> {
    let url = settings.workspace_base_url()?;
    Some(format!(
        "the workspace's aptix.toml sets base_url to {}, a server on another machine, and \
         the API key would go with every request: a folder's own file may only name a \
         server on this machine. If you trust that server, set it with --base-url, \
         OPENAI_BASE_URL or in your user config ({})",
        aptix_model::redact_url(url),
        user_config_path(env).map_or_else(
            || "~/.config/aptix/config.toml".to_owned(),
            |path| path.display().to_string(),
        ),
    ))
}

/// A stand-in for the configured provider that reports the same capabilities and is
/// never called: what a dry run builds its body with.
pub(crate) fn stand_in(settings: &Settings) -> Arc<dyn ResponsesProvider> {
    Arc::new(FakeProvider::new().with_capabilities(capabilities(settings)))
}

/// A provider configuration failure; a missing key says how to set one. A key that is
/// set but unusable (a line break pasted with it) is not a missing one: its reason is
/// passed on, with the variable it came from.
fn config_error(error: ClientError, settings: &Settings, env: Env<'_>) -> Error {
    let key_set = env("OPENAI_API_KEY").is_some_and(|key| !key.trim().is_empty());
    match error {
        ClientError::Config { field, reason } if field == "api_key" && key_set => {
            Error::config(format!(
                "OPENAI_API_KEY is not usable: {reason} (a line break or a space pasted with it?)"
            ))
        }
        ClientError::Config { field, .. } if field == "api_key" => Error::MissingApiKey {
            base_url: settings.base_url().unwrap_or(DEFAULT_BASE_URL).to_owned(),
            user_file: user_config_path(env).map_or_else(
                || "~/.config/aptix/config.toml".to_owned(),
                |path| path.display().to_string(),
            ),
        },
        ClientError::Config { field, reason } => {
            Error::config(format!("invalid provider setting {field}: {reason}"))
        }
        other => Error::Provider(Box::new(other)),
    }
}

/// A request exactly as the configured provider would send it: where, and the JSON
/// body.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WireRequest {
    /// The URL it is posted to, e.g. `https://api.openai.com/v1/responses` (a password in
    /// it shown as `***`).
    pub endpoint: String,
    /// The body: the `/v1/responses` request, or its Chat Completions translation.
    pub body: serde_json::Value,
}

/// `body` (an orchestrator's request) as the provider sends it: `stream` as the call
/// sets it, background mode when a streamed call uses it, and translated for the Chat
/// Completions bridge.
pub(crate) fn wire_request(
    settings: &Settings,
    mut body: CreateResponseRequest,
    stream: bool,
) -> Result<WireRequest, Error> {
    // The providers decide `stream` by the call they make.
    body.stream = stream.then_some(true);
    // Streamed calls go out in background mode when configured (the orchestrator adds
    // it as it sends them).
    if stream && settings.orchestrator_config().background {
        body.extra
            .insert("background".to_owned(), serde_json::Value::Bool(true));
        body.store = Some(true);
    }
    // The provider's own checks of its settings (a base URL naming the endpoint, a
    // timeout out of range), as a real call would make them: a dry run that shows a
    // request the call would refuse shows nothing true. The key is no setting here.
    let config = client_config(
        OpenAiConfigBuilder::from_lookup(|_| None).api_key("dry-run"),
        settings,
        &|_| None,
    )?;
    // Where the provider posts it, by the client's own rule (a base URL's query, such as
    // Azure's `?api-version=`, follows the path).
    let endpoint = config.endpoint(settings.api().endpoint());
    let body = match settings.api() {
        ApiKind::Responses => serde_json::to_value(&body).map_err(Error::Json)?,
        ApiKind::Chat => to_chat_request(&body, &ChatOptions::default(), stream)
            .map_err(|error| Error::Bridge(Box::new(error)))?,
    };
    // Shown to the user (`aptix ask --dry-run`): a proxy's password is not.
    let endpoint = aptix_model::redact_url(&endpoint);
    Ok(WireRequest { endpoint, body })
}
