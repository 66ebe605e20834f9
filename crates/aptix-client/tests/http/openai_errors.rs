//! Every recorded error body maps to the right typed error: status, code, type,
//! message and request id; non-JSON bodies are kept as truncated text.

use aptix_client::{ClientError, OpenAiProvider, ResponsesProvider, RetryPolicy};
use aptix_model::wire::ErrorBody;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{config, request};

/// One error reply, returned as the provider's error, with retries off.
async fn error_for(template: ResponseTemplate) -> ClientError {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .expect(1)
        .mount(&server)
        .await;
    let config = config(&server.uri())
        .retry(RetryPolicy::never())
        .build()
        .unwrap();
    let provider = OpenAiProvider::new(config).unwrap();
    provider.create(&request()).await.unwrap_err()
}

#[tokio::test]
async fn each_error_fixture_maps_to_a_status_error() {
    let cases = [
        (
            "error_400_no_tool_output_found.json",
            400,
            None,
            "invalid_request_error",
        ),
        (
            "error_401_invalid_api_key.json",
            401,
            Some("invalid_api_key"),
            "invalid_request_error",
        ),
        (
            "error_429_insufficient_quota.json",
            429,
            Some("insufficient_quota"),
            "insufficient_quota",
        ),
        (
            "error_429_rate_limit_exceeded.json",
            429,
            Some("rate_limit_exceeded"),
            "tokens",
        ),
        ("error_500_server_error.json", 500, None, "server_error"),
    ];
    for (fixture, status, code, kind) in cases {
        let body = aptix_testkit::read_fixture(fixture);
        let recorded: ErrorBody = serde_json::from_slice(&body).unwrap();
        let template = ResponseTemplate::new(status)
            .insert_header("x-request-id", "req_err_1")
            .set_body_raw(body, "application/json");
        let error = error_for(template).await;
        match &error {
            ClientError::Status {
                status: got,
                api_error,
                raw_body,
                request_id,
                ..
            } => {
                assert_eq!(*got, status, "{fixture}");
                let api_error = api_error.as_deref().unwrap();
                assert_eq!(api_error, &recorded.error, "{fixture}");
                assert_eq!(api_error.code.as_deref(), code, "{fixture}");
                assert_eq!(api_error.kind.as_deref(), Some(kind), "{fixture}");
                // The body as sent, every member of it, for `rawResponseJson`.
                let sent = String::from_utf8_lossy(&aptix_testkit::read_fixture(fixture))
                    .trim()
                    .to_owned();
                assert_eq!(raw_body.as_deref(), Some(sent.as_str()), "{fixture}");
                assert_eq!(request_id.as_deref(), Some("req_err_1"));
            }
            other => panic!("{fixture}: unexpected {other:?}"),
        }
        assert_eq!(error.status(), Some(status));
        assert_eq!(error.api_code(), code);
        assert_eq!(error.request_id(), Some("req_err_1"));
        assert!(
            error
                .to_string()
                .starts_with(&format!("http status {status}: "))
        );
        let retryable = matches!(code, Some("rate_limit_exceeded")) || status == 500;
        assert_eq!(error.is_retryable(), retryable, "{fixture}");
    }
}

#[tokio::test]
async fn a_non_json_error_body_is_kept_truncated() {
    // Plain text; an HTML page is summarised instead (`faults.rs`).
    let text = format!("upstream:{}", "x".repeat(10_000));
    let error = error_for(ResponseTemplate::new(502).set_body_string(text)).await;
    match error {
        ClientError::Status {
            status: 502,
            api_error: None,
            raw_body: Some(raw),
            ..
        } => {
            assert!(raw.starts_with("upstream:xxx"));
            assert!(raw.len() <= aptix_client::MAX_RAW_BODY + 3);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn an_empty_error_body_is_neither_api_error_nor_raw_text() {
    let error = error_for(ResponseTemplate::new(404)).await;
    assert!(matches!(
        error,
        ClientError::Status {
            status: 404,
            api_error: None,
            raw_body: None,
            ..
        }
    ));
    assert_eq!(error.to_string(), "http status 404: no error body");
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = config(&format!("http://127.0.0.1:{port}"))
        .retry(RetryPolicy::never())
        .build()
        .unwrap();
    let error = OpenAiProvider::new(config)
        .unwrap()
        .create(&request())
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Transport {
                phase: aptix_client::TransportPhase::Connect,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
}
