//! Configuration of the HTTP providers, read the way the official SDKs read it.
//!
//! [`OpenAiConfig::builder`] builds one explicitly (tests do this); only
//! [`OpenAiConfigBuilder::from_env`] reads the environment: `OPENAI_API_KEY`,
//! `OPENAI_BASE_URL` (default `https://api.openai.com/v1`), `OPENAI_ORG_ID` and
//! `OPENAI_PROJECT_ID`. Any server that speaks `/v1/responses` or
//! `/v1/chat/completions` is reached by its base URL. [`OpenAiConfigBuilder::build`]
//! validates before any request exists: a missing key for a host that needs one
//! (`api.openai.com`, Azure OpenAI) is an error there, while a local base URL
//! (`localhost`, `127.x`, `::1`) works without one.
//!
//! The key is a [`SecretString`]: it is never printed by `Debug`, never put in an
//! error, and its header value is marked sensitive.

use std::fmt;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::uri::Uri;
use secrecy::{ExposeSecret, SecretString};

use crate::error::ClientError;
use crate::provider::Capabilities;
use crate::retry::RetryPolicy;

/// The official API's base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Default connect timeout.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default whole-request timeout of a non-streaming call, per attempt (the SDKs' 10
/// minutes: long generations are slow).
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Default longest silence between two chunks of a streamed reply.
pub(crate) const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default time an unused keep-alive connection stays in the pool.
pub(crate) const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Hosts that always need a key (suffix match on the base URL's host).
const HOSTS_NEEDING_A_KEY: &[&str] = &[
    "api.openai.com",
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
];

/// How the key is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthScheme {
    /// `Authorization: Bearer <key>` (OpenAI, Azure's v1 API, most servers).
    #[default]
    Bearer,
    /// `api-key: <key>` (Azure OpenAI's older deployment API).
    ApiKeyHeader,
}

/// The three timeouts. `None` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing a connection (DNS, TCP, TLS).
    pub connect: Option<Duration>,
    /// A whole non-streaming attempt, reply body included.
    pub request: Option<Duration>,
    /// The longest gap between two chunks of a streamed reply, and before its head.
    pub stream_idle: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Some(DEFAULT_CONNECT_TIMEOUT),
            request: Some(DEFAULT_REQUEST_TIMEOUT),
            stream_idle: Some(DEFAULT_STREAM_IDLE_TIMEOUT),
        }
    }
}

/// A validated configuration for [`OpenAiProvider`](crate::OpenAiProvider) and
/// [`ChatCompletionsProvider`](crate::ChatCompletionsProvider).
#[derive(Clone)]
pub struct OpenAiConfig {
    api_key: Option<SecretString>,
    auth_scheme: AuthScheme,
    base_url: Uri,
    organization: Option<String>,
    project: Option<String>,
    extra_headers: HeaderMap,
    timeouts: Timeouts,
    pool_idle_timeout: Option<Duration>,
    retry: RetryPolicy,
    capabilities: Option<Capabilities>,
}

impl OpenAiConfig {
    /// A builder with the defaults and no key.
    pub fn builder() -> OpenAiConfigBuilder {
        OpenAiConfigBuilder::default()
    }

    /// The configuration the environment describes (see
    /// [`OpenAiConfigBuilder::from_env`]), validated.
    pub fn from_env() -> Result<OpenAiConfig, ClientError> {
        OpenAiConfigBuilder::from_env().build()
    }

    /// The base URL, without a trailing slash, and with the password of any user-info
    /// it holds (`https://user:password@proxy/v1`) shown as `***` (see
    /// [`aptix_model::redact_url`]): for logs and messages.
    pub fn base_url(&self) -> String {
        aptix_model::redact_url(&self.base_url.to_string())
            .trim_end_matches('/')
            .to_owned()
    }

    /// The URL of an endpoint below the base URL (`responses`, `chat/completions`),
    /// keeping the base URL's query string (Azure's `api-version`) at the end.
    pub fn endpoint(&self, path: &str) -> String {
        let scheme = self.base_url.scheme_str().unwrap_or("https");
        let authority = self
            .base_url
            .authority()
            .map(|authority| authority.as_str())
            .unwrap_or_default();
        let base_path = self.base_url.path().trim_end_matches('/');
        let path = path.trim_start_matches('/');
        match self.base_url.query() {
            Some(query) => format!("{scheme}://{authority}{base_path}/{path}?{query}"),
            None => format!("{scheme}://{authority}{base_path}/{path}"),
        }
    }

    /// Whether a key is configured (the key itself is never exposed by this type's
    /// public API).
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// The `OpenAI-Organization` value.
    pub fn organization(&self) -> Option<&str> {
        self.organization.as_deref()
    }

    /// The `OpenAI-Project` value.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// The timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How long an unused keep-alive connection is kept (`None`: no limit).
    pub fn pool_idle_timeout(&self) -> Option<Duration> {
        self.pool_idle_timeout
    }

    /// The retry policy.
    pub fn retry(&self) -> RetryPolicy {
        self.retry
    }

    /// The capabilities set explicitly, if any (providers otherwise pick theirs).
    pub fn capabilities(&self) -> Option<Capabilities> {
        self.capabilities
    }

    /// Every header sent with each request: authentication (marked sensitive),
    /// organization, project, then the extra headers (which may replace any of them).
    /// Crate-private: the key is in it, and this type keeps the key to itself.
    #[cfg(any(feature = "http", test))]
    pub(crate) fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let (name, value) = match self.auth_scheme {
                AuthScheme::Bearer => (
                    http::header::AUTHORIZATION,
                    format!("Bearer {}", key.expose_secret()),
                ),
                AuthScheme::ApiKeyHeader => (
                    HeaderName::from_static("api-key"),
                    key.expose_secret().to_owned(),
                ),
            };
            // Validated in `build`, so this cannot fail; an unrepresentable key is
            // left out rather than panicking.
            if let Ok(mut value) = HeaderValue::from_str(&value) {
                value.set_sensitive(true);
                headers.insert(name, value);
            }
        }
        let named = [
            ("openai-organization", &self.organization),
            ("openai-project", &self.project),
        ];
        for (name, value) in named {
            if let Some(value) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        headers
    }

    /// The key, for scrubbing it out of anything the server echoes back (error texts
    /// are scrubbed of any key; content only of a key of 12 characters or more).
    // Only the HTTP providers need it.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn secret(&self) -> Option<&str> {
        self.api_key
            .as_ref()
            .map(|key| key.expose_secret())
            .filter(|key| !key.is_empty())
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("auth_scheme", &self.auth_scheme)
            .field("base_url", &self.base_url())
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field("extra_headers", &header_names(&self.extra_headers))
            .field("timeouts", &self.timeouts)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field("retry", &self.retry)
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

/// Header names only: extra header values may be credentials too.
fn header_names(headers: &HeaderMap) -> Vec<&str> {
    headers.keys().map(HeaderName::as_str).collect()
}

/// Builds an [`OpenAiConfig`]; [`build`](Self::build) validates.
#[derive(Clone, Default)]
pub struct OpenAiConfigBuilder {
    api_key: Option<SecretString>,
    auth_scheme: AuthScheme,
    base_url: Option<String>,
    organization: Option<String>,
    project: Option<String>,
    extra_headers: Vec<(String, String)>,
    timeouts: Timeouts,
    pool_idle_timeout: Option<Option<Duration>>,
    retry: RetryPolicy,
    capabilities: Option<Capabilities>,
}

impl OpenAiConfigBuilder {
    /// A builder filled from the process environment: `OPENAI_API_KEY`,
    /// `OPENAI_BASE_URL`, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`. Empty variables count
    /// as unset. The only place this crate reads the environment.
    pub fn from_env() -> OpenAiConfigBuilder {
        OpenAiConfigBuilder::from_lookup(|name| std::env::var(name).ok())
    }

    /// A builder filled from `lookup` the way [`from_env`](Self::from_env) fills it
    /// from the environment; for tests and for callers with their own settings source.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> OpenAiConfigBuilder {
        let read = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let mut builder = OpenAiConfigBuilder::default();
        if let Some(key) = read("OPENAI_API_KEY") {
            builder = builder.api_key(key);
        }
        builder.base_url = read("OPENAI_BASE_URL");
        builder.organization = read("OPENAI_ORG_ID");
        builder.project = read("OPENAI_PROJECT_ID");
        builder
    }

    /// The API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(SecretString::from(key.into()));
        self
    }

    /// How the key is sent (default: `Authorization: Bearer`).
    pub fn auth_scheme(mut self, scheme: AuthScheme) -> Self {
        self.auth_scheme = scheme;
        self
    }

    /// The base URL, up to and including `/v1` (`http://127.0.0.1:8080/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The `OpenAI-Organization` header.
    pub fn organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    /// The `OpenAI-Project` header.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// A header sent with every request (replacing a built-in one of the same name).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// The connect timeout (`None`: none).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeouts.connect = timeout;
        self
    }

    /// The whole-request timeout of non-streaming calls, per attempt (`None`: none).
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeouts.request = timeout;
        self
    }

    /// The longest gap between stream chunks (`None`: none).
    pub fn stream_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeouts.stream_idle = timeout;
        self
    }

    /// How long an unused keep-alive connection is kept (`None`: no limit).
    pub fn pool_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.pool_idle_timeout = Some(timeout);
        self
    }

    /// The retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// What the server supports, overriding the provider's assumption (for example
    /// [`Capabilities::stateless_responses`] for `llama-server`).
    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<OpenAiConfig, ClientError> {
        let text = self.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL).trim();
        // Named in errors without the password or key it may hold.
        let shown = || aptix_model::redact_url(text);
        let not_absolute = || {
            ClientError::config(
                "base_url",
                format!(
                    "{:?} is not an absolute http or https url (e.g. http://127.0.0.1:8080/v1)",
                    shown()
                ),
            )
        };
        // `127.0.0.1:8080/v1` does not parse as a URI at all: a scheme left out, said so.
        let base_url: Uri = text.parse().map_err(|error| {
            if text.contains("://") {
                ClientError::config("base_url", format!("{:?}: {error}", shown()))
            } else {
                not_absolute()
            }
        })?;
        let scheme_ok = matches!(base_url.scheme_str(), Some("http" | "https"));
        let host = base_url.host().unwrap_or_default().to_ascii_lowercase();
        if !scheme_ok || host.is_empty() {
            return Err(not_absolute());
        }
        // The endpoint pasted whole: requests would go to /v1/responses/responses.
        let path = base_url.path().trim_end_matches('/');
        for endpoint in ["/responses", "/chat/completions"] {
            if let Some(base) = path.strip_suffix(endpoint) {
                // Named without any user-info (`user:password@`) it holds.
                let host = base_url
                    .authority()
                    .map_or("", |authority| authority.as_str())
                    .rsplit('@')
                    .next()
                    .unwrap_or_default();
                return Err(ClientError::config(
                    "base_url",
                    format!(
                        "the base URL names the {endpoint} endpoint; it is the part before it, e.g. {}://{host}{base}",
                        base_url.scheme_str().unwrap_or("https"),
                    ),
                ));
            }
        }
        let api_key = self
            .api_key
            .filter(|key| !key.expose_secret().trim().is_empty());
        if api_key.is_none() && needs_a_key(&host) {
            return Err(ClientError::config(
                "api_key",
                format!(
                    "{host} needs an api key: give one to the builder (api_key), or set \
                     OPENAI_API_KEY and build with OpenAiConfigBuilder::from_env"
                ),
            ));
        }
        if let Some(key) = &api_key
            && HeaderValue::from_str(&format!("Bearer {}", key.expose_secret())).is_err()
        {
            // Say what is wrong without repeating the value.
            return Err(ClientError::config(
                "api_key",
                "the key holds characters that cannot go in an http header",
            ));
        }
        let mut extra_headers = HeaderMap::new();
        for (name, value) in self.extra_headers {
            let header_name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| ClientError::config("header", format!("invalid name {name:?}")))?;
            let mut header_value = HeaderValue::from_str(&value).map_err(|_| {
                ClientError::config("header", format!("invalid value for {name:?}"))
            })?;
            // Extra headers may carry credentials (proxies, gateways): keep them out of
            // any log the HTTP stack writes.
            header_value.set_sensitive(true);
            extra_headers.insert(header_name, header_value);
        }
        for (field, value) in [
            ("organization", &self.organization),
            ("project", &self.project),
        ] {
            if let Some(value) = value
                && HeaderValue::from_str(value).is_err()
            {
                return Err(ClientError::config(field, "not a valid header value"));
            }
        }
        Ok(OpenAiConfig {
            api_key,
            auth_scheme: self.auth_scheme,
            base_url,
            organization: self.organization,
            project: self.project,
            extra_headers,
            timeouts: self.timeouts,
            pool_idle_timeout: self
                .pool_idle_timeout
                .unwrap_or(Some(DEFAULT_POOL_IDLE_TIMEOUT)),
            retry: self.retry,
            capabilities: self.capabilities,
        })
    }
}

impl fmt::Debug for OpenAiConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfigBuilder")
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field(
                "base_url",
                &self.base_url.as_deref().map(aptix_model::redact_url),
            )
            .field("organization", &self.organization)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

fn needs_a_key(host: &str) -> bool {
    HOSTS_NEEDING_A_KEY
        .iter()
        .any(|suffix| host == suffix.trim_start_matches('.') || host.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<OpenAiConfig, ClientError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        OpenAiConfigBuilder::from_lookup(|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
        .build()
    }

    #[test]
    fn the_default_base_url_needs_a_key() {
        let error = from(&[]).unwrap_err();
        assert!(
            matches!(&error, ClientError::Config { field, .. } if field == "api_key"),
            "{error}"
        );
        let error = from(&[("OPENAI_API_KEY", "  ")]).unwrap_err();
        assert!(matches!(error, ClientError::Config { .. }));
    }

    #[test]
    fn azure_needs_a_key_and_local_servers_do_not() {
        assert!(from(&[("OPENAI_BASE_URL", "https://x.openai.azure.com/openai/v1")]).is_err());
        for url in [
            "http://localhost:8080/v1",
            "http://127.0.0.1:11434/v1",
            "http://[::1]:8000/v1",
        ] {
            let config = from(&[("OPENAI_BASE_URL", url)]).unwrap();
            assert!(!config.has_api_key());
            assert!(config.headers().get("authorization").is_none());
        }
    }

    #[test]
    fn env_settings_become_headers() {
        let config = from(&[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_ORG_ID", "org-1"),
            ("OPENAI_PROJECT_ID", "proj_1"),
        ])
        .unwrap();
        let headers = config.headers();
        assert_eq!(headers["authorization"], "Bearer sk-test");
        assert!(headers["authorization"].is_sensitive());
        assert_eq!(headers["openai-organization"], "org-1");
        assert_eq!(headers["openai-project"], "proj_1");
        assert_eq!(
            config.endpoint("responses"),
            "https://api.openai.com/v1/responses"
        );
    }

    #[test]
    fn endpoints_keep_the_base_path_and_query() {
        let config = OpenAiConfig::builder()
            .base_url("https://r.openai.azure.com/openai/v1/?api-version=preview")
            .api_key("k")
            .auth_scheme(AuthScheme::ApiKeyHeader)
            .build()
            .unwrap();
        assert_eq!(
            config.endpoint("responses"),
            "https://r.openai.azure.com/openai/v1/responses?api-version=preview"
        );
        assert_eq!(config.headers()["api-key"], "k");
    }

    #[test]
    fn a_base_url_without_its_scheme_is_said_to_lack_one() {
        for url in [
            "127.0.0.1:8931/v1",
            "localhost:8080/v1",
            "api.example.com/v1",
        ] {
            let error = OpenAiConfig::builder()
                .base_url(url)
                .build()
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("is not an absolute http or https url (e.g. http://"),
                "{url}: {error}"
            );
        }
    }

    #[test]
    fn malformed_settings_are_errors_that_do_not_echo_the_key() {
        assert!(
            OpenAiConfig::builder()
                .base_url("not a url")
                .build()
                .is_err()
        );
        assert!(
            OpenAiConfig::builder()
                .base_url("ftp://x/v1")
                .build()
                .is_err()
        );
        // A misspelt scheme is refused without showing the password or key it holds.
        for url in [
            "htps://u:hunter2@proxy.example/v1",
            "ftp://proxy.example/v1?key=hunter2",
            "https://u:hunter2@proxy example/v1",
        ] {
            let error = OpenAiConfig::builder()
                .base_url(url)
                .build()
                .unwrap_err()
                .to_string();
            assert!(!error.contains("hunter2"), "{error}");
        }
        // The endpoint pasted as the base URL: the error says what the base URL is.
        for (pasted, base) in [
            (
                "http://127.0.0.1:8080/v1/responses",
                "http://127.0.0.1:8080/v1",
            ),
            (
                "http://localhost/v1/chat/completions/",
                "http://localhost/v1",
            ),
        ] {
            let error = OpenAiConfig::builder()
                .base_url(pasted)
                .build()
                .unwrap_err()
                .to_string();
            assert!(error.contains(&format!("e.g. {base}")), "{error}");
        }
        let error = OpenAiConfig::builder()
            .base_url("https://u:hunter2@proxy.example/v1/responses")
            .build()
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        assert!(error.contains("e.g. https://proxy.example/v1"), "{error}");
        // Shown (a log line, a `Debug`), a proxy's password is hidden.
        let builder = OpenAiConfig::builder().base_url("https://u:hunter2@proxy.example/v1");
        assert!(!format!("{builder:?}").contains("hunter2"), "{builder:?}");
        let config = builder.build().unwrap();
        assert_eq!(config.base_url(), "https://u:***@proxy.example/v1");
        assert!(!format!("{config:?}").contains("hunter2"), "{config:?}");
        assert!(
            config.endpoint("responses").contains("hunter2"),
            "still sent"
        );
        let error = OpenAiConfig::builder()
            .api_key("sk-bad\nkey")
            .build()
            .unwrap_err();
        assert!(!format!("{error} {error:?}").contains("sk-bad"));
        assert!(
            OpenAiConfig::builder()
                .base_url("http://localhost/v1")
                .header("bad name", "v")
                .build()
                .is_err()
        );
    }

    #[test]
    fn debug_never_shows_the_key_or_extra_header_values() {
        let config = OpenAiConfig::builder()
            .api_key("sk-very-secret")
            .header("x-gateway-token", "gw-secret")
            .build()
            .unwrap();
        let debug = format!(
            "{config:?} {:?}",
            OpenAiConfig::builder().api_key("sk-very-secret")
        );
        assert!(!debug.contains("sk-very-secret"), "{debug}");
        assert!(!debug.contains("gw-secret"), "{debug}");
        assert!(debug.contains("x-gateway-token"));
    }
}
