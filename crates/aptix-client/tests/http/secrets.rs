//! The API key never leaks: not in `Debug` of configurations, providers or errors, not
//! in error messages (even when the server echoes it back), not in tracing output.

use std::io::Write;
use std::sync::{Arc, Mutex};

use aptix_client::{
    ChatCompletionsProvider, OpenAiConfig, OpenAiProvider, ResponsesProvider, RetryPolicy,
};
use futures_util::StreamExt;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{TEST_KEY, config, reply_once, request};

/// A tracing writer that appends to a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Every trace of this thread from now until the guard is dropped, at TRACE.
    fn traces() -> (Captured, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn assert_no_key(text: &str, what: &str) {
    assert!(!text.contains(TEST_KEY), "{what} leaks the key:\n{text}");
    // Not even a long prefix of it.
    assert!(
        !text.contains(&TEST_KEY[..16]),
        "{what} leaks part of the key:\n{text}"
    );
}

#[tokio::test]
async fn the_key_never_appears_in_debug_errors_or_traces() {
    let (captured, _guard) = Captured::traces();

    let server = MockServer::start().await;
    // A server that echoes the key back in its error body, as a careless proxy might.
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {TEST_KEY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    reply_once(
        &server,
        ResponseTemplate::new(503).set_body_string(format!("upstream said {TEST_KEY}")),
        1,
    )
    .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401).set_body_raw(echo.into_bytes(), "application/json"),
        )
        .mount(&server)
        .await;

    let config = config(&server.uri())
        .organization("org-visible")
        .header("x-gateway-token", TEST_KEY)
        .build()
        .unwrap();
    let openai = OpenAiProvider::new(config.clone()).unwrap();
    let chat = ChatCompletionsProvider::new(config.clone()).unwrap();

    // One retried 503 then a 401 that echoes the key, on both paths.
    let create_error = openai.create(&request()).await.unwrap_err();
    let stream_error = openai.stream(&request()).await.unwrap_err();
    let chat_error = chat.create(&request()).await.unwrap_err();
    assert_eq!(create_error.api_code(), Some("invalid_api_key"));
    assert!(create_error.to_string().contains("[redacted]"));

    let never_sent = OpenAiProvider::new(
        OpenAiConfig::builder()
            .base_url("http://127.0.0.1:9/v1")
            .api_key(TEST_KEY)
            .retry(RetryPolicy::never())
            .build()
            .unwrap(),
    )
    .unwrap();
    let connect_error = never_sent.create(&request()).await.unwrap_err();
    let stream_items: Vec<_> = match openai.stream(&request()).await {
        Ok(stream) => stream.collect().await,
        Err(error) => vec![Err(error)],
    };

    let outputs = [
        ("config debug", format!("{config:?}")),
        ("openai provider debug", format!("{openai:?}")),
        ("chat provider debug", format!("{chat:?}")),
        (
            "builder debug",
            format!("{:?}", OpenAiConfig::builder().api_key(TEST_KEY)),
        ),
        ("create error", format!("{create_error} {create_error:?}")),
        ("stream error", format!("{stream_error} {stream_error:?}")),
        ("chat error", format!("{chat_error} {chat_error:?}")),
        (
            "connect error",
            format!("{connect_error} {connect_error:?}"),
        ),
        ("stream items", format!("{stream_items:?}")),
    ];
    for (what, text) in &outputs {
        assert_no_key(text, what);
    }
    assert!(
        outputs[0].1.contains("org-visible"),
        "debug output should still be useful"
    );

    drop(_guard);
    let traces = captured.text();
    assert!(
        traces.contains("aptix_client.attempt"),
        "nothing was traced:\n{traces}"
    );
    assert!(
        traces.contains("attempt=2"),
        "the retry should be traced:\n{traces}"
    );
    assert!(traces.contains("status=401"));
    assert_no_key(&traces, "tracing output");
}

#[tokio::test]
async fn a_password_in_the_base_url_is_sent_but_never_shown() {
    const PASSWORD: &str = "proxy-pass-5f2c9e";
    let (captured, _guard) = Captured::traces();

    // A port nobody listens on: the request fails to connect, and its error is shown.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let builder = OpenAiConfig::builder()
        .base_url(format!("http://proxy-user:{PASSWORD}@127.0.0.1:{port}/v1"))
        .api_key(TEST_KEY)
        .retry(RetryPolicy::never());
    let builder_debug = format!("{builder:?}");
    let config = builder.build().unwrap();
    let shown = format!("{} {config:?}", config.base_url());
    let provider = OpenAiProvider::new(config).unwrap();
    let error = provider.create(&request()).await.unwrap_err();
    let stream_error = provider.stream(&request()).await.err().unwrap();
    drop(_guard);
    for (what, text) in [
        ("builder debug", builder_debug),
        ("config", shown),
        ("create error", format!("{error} {error:?}")),
        ("stream error", format!("{stream_error} {stream_error:?}")),
        ("tracing output", captured.text()),
    ] {
        assert!(
            !text.contains(PASSWORD),
            "{what} shows the password:\n{text}"
        );
    }
}
