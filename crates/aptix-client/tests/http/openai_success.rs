//! Successful exchanges with the OpenAI provider: JSON and SSE bodies from the
//! recorded fixtures, reply metadata, and the headers and body it sends.

use aptix_client::{ClientError, OpenAiProvider, ResponsesProvider};
use aptix_model::wire::{OutputItem, Response, StreamEvent};

use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{TEST_KEY, config, fixture_headers, request};

fn json_reply(fixture: &str) -> ResponseTemplate {
    let mut template = ResponseTemplate::new(200)
        .set_body_raw(aptix_testkit::read_fixture(fixture), "application/json");
    for (name, value) in fixture_headers("headers_nonstreaming_200.json") {
        template = template.insert_header(name.as_str(), value.as_str());
    }
    template
}

fn sse_reply(fixture: &str) -> ResponseTemplate {
    let mut template = ResponseTemplate::new(200).set_body_raw(
        aptix_testkit::read_fixture(fixture),
        "text/event-stream; charset=utf-8",
    );
    for (name, value) in fixture_headers("headers_streaming_200.json") {
        template = template.insert_header(name.as_str(), value.as_str());
    }
    template
}

#[tokio::test]
async fn create_returns_the_fixture_response_with_its_metadata() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(json_reply("response_plain_text.json"))
        .expect(1)
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let reply = provider.create(&request()).await.unwrap();

    let expected: Response =
        serde_json::from_slice(&aptix_testkit::read_fixture("response_plain_text.json")).unwrap();
    assert_eq!(reply.response, expected);
    // The body as received, byte for byte: the envelope's `rawResponseJson` is made
    // from it instead of encoding the response again.
    assert_eq!(
        reply.raw_json.as_deref().map(str::as_bytes),
        Some(aptix_testkit::read_fixture("response_plain_text.json").as_slice())
    );
    assert_eq!(reply.meta.status, 200);
    assert_eq!(reply.meta.attempts, 1);
    assert_eq!(reply.meta.request_id.as_deref(), Some("Sanitized"));
    let limits = reply.meta.rate_limits.unwrap();
    assert_eq!(limits.remaining_requests, Some(29999));
    assert_eq!(
        limits.reset_requests,
        Some(std::time::Duration::from_millis(2))
    );
}

#[tokio::test]
async fn every_response_fixture_round_trips_through_create() {
    for fixture in aptix_testkit::fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("response_"))
    {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(json_reply(&fixture))
            .mount(&server)
            .await;
        let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
        let reply = provider.create(&request()).await.unwrap();
        let expected: Response =
            serde_json::from_slice(&aptix_testkit::read_fixture(&fixture)).unwrap();
        assert_eq!(reply.response, expected, "{fixture}");
    }
}

#[tokio::test]
async fn requests_carry_auth_content_type_org_project_and_extra_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header(
            "authorization",
            format!("Bearer {TEST_KEY}").as_str(),
        ))
        .and(header("content-type", "application/json"))
        .and(header("openai-organization", "org-aptix"))
        .and(header("openai-project", "proj_aptix"))
        .and(header("x-config-extra", "one"))
        .and(header("x-call-extra", "two"))
        .respond_with(json_reply("response_plain_text.json"))
        .expect(1)
        .mount(&server)
        .await;
    let config = config(&server.uri())
        .organization("org-aptix")
        .project("proj_aptix")
        .header("x-config-extra", "one")
        .build()
        .unwrap();
    let mut per_call = http::HeaderMap::new();
    per_call.insert("x-call-extra", http::HeaderValue::from_static("two"));
    let provider = OpenAiProvider::new(config)
        .unwrap()
        .with_extra_headers(&per_call);
    provider.create(&request()).await.unwrap();

    // The body is the request as given, without `stream` (create never streams).
    let received = server.received_requests().await.unwrap();
    let body: serde_json::Value = received[0].body_json().unwrap();
    assert_eq!(
        body,
        serde_json::json!({ "model": "gpt-4o-mini", "input": "Say hello" })
    );
}

#[tokio::test]
async fn stream_yields_the_fixture_events_and_ends_at_the_terminal_one() {
    for fixture in ["sse_text_deltas.sse", "sse_function_call_arguments.sse"] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .and(body_partial_json(serde_json::json!({ "stream": true })))
            .respond_with(sse_reply(fixture))
            .expect(1)
            .mount(&server)
            .await;
        let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
        let stream = provider.stream(&request()).await.unwrap();
        assert_eq!(stream.meta().request_id.as_deref(), Some("Sanitized"));
        assert_eq!(stream.meta().rate_limits, None);
        let events: Vec<StreamEvent> = crate::support::typed_events(stream)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // Same events as decoding the fixture's data lines one by one.
        let text = aptix_testkit::read_fixture_text(fixture);
        let expected: Vec<StreamEvent> = text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| StreamEvent::from_json(data).unwrap())
            .collect();
        assert_eq!(events, expected, "{fixture}");
        let sequence: Vec<_> = events
            .iter()
            .map(|e| e.sequence_number().unwrap())
            .collect();
        assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>());
        assert_eq!(
            events.last().unwrap().type_name(),
            Some("response.completed")
        );
    }
}

#[tokio::test]
async fn a_streamed_function_call_folds_to_its_final_response() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_reply("sse_function_call_arguments.sse"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let response = crate::support::fold(provider.stream(&request()).await.unwrap())
        .await
        .unwrap()
        .response;
    let OutputItem::FunctionCall(call) = &response.output[0] else {
        panic!("expected a function call, got {:?}", response.output);
    };
    assert_eq!(call.name, "get_weather_at_location");
    assert!(call.call_id.starts_with("call_"));
    assert!(call.arguments.contains("San Francisco"));
}

#[tokio::test]
async fn an_error_event_is_judged_by_the_fold_with_the_failed_response_after_it() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_reply("sse_error_event_then_response_failed.sse"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let stream = provider.stream(&request()).await.unwrap();
    assert_eq!(stream.meta().request_id.as_deref(), Some("Sanitized"));
    // The connection delivers every event; the error event does not end it.
    let events = crate::support::typed_events(stream).await;
    assert!(events.iter().all(Result::is_ok));
    let types: Vec<_> = events
        .iter()
        .map(|event| event.as_ref().unwrap().type_name().unwrap().to_owned())
        .collect();
    assert_eq!(types[2], "error", "{types:?}");
    assert_eq!(types.last().map(String::as_str), Some("response.failed"));
    // The fold keeps the error and ends with the failed response that followed it.
    let stream = provider.stream(&request()).await.unwrap();
    let folded = crate::support::fold(stream).await.unwrap();
    let error = folded.stream_error.as_ref().unwrap();
    assert_eq!(error.code.as_deref(), Some("insufficient_quota"));
    assert!(error.message.starts_with("You exceeded your current quota"));
    assert_eq!(
        folded.response.status,
        Some(aptix_model::wire::ResponseStatus::Failed)
    );
}

#[tokio::test]
async fn a_json_reply_to_a_stream_request_is_read_as_its_final_event() {
    // Some proxies and local servers ignore `stream: true` and answer with the whole
    // response: the turn goes on as if it had streamed (no deltas, then the end).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_reply("response_plain_text.json"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let folded = crate::support::fold(provider.stream(&request()).await.unwrap())
        .await
        .unwrap();
    let expected: Response =
        serde_json::from_slice(&aptix_testkit::read_fixture("response_plain_text.json")).unwrap();
    assert_eq!(folded.response, expected);

    // Anything else that is no event stream is still a decode error naming the type.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>hello</html>", "text/html"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let error = provider.stream(&request()).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Decode {
                what: "stream reply",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("text/html"), "{error}");
}

#[tokio::test]
async fn an_undecodable_body_is_a_decode_error_with_position_and_excerpt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req_bad")
                .set_body_raw(
                    &b"{\"id\": \"resp_1\", \"output\": [oops]}"[..],
                    "application/json",
                ),
        )
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    match provider.create(&request()).await.unwrap_err() {
        ClientError::Decode {
            what,
            position,
            excerpt,
            request_id,
            ..
        } => {
            assert_eq!(what, "response body");
            assert!((28..32).contains(&position), "{position}");
            assert!(excerpt.contains("oops"));
            assert_eq!(request_id.as_deref(), Some("req_bad"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_key_for_openai_fails_before_any_request() {
    let error = aptix_client::OpenAiConfig::builder().build().unwrap_err();
    assert!(matches!(&error, ClientError::Config { field, .. } if field == "api_key"));
    assert!(error.to_string().contains("api.openai.com"));
}

#[tokio::test]
async fn a_local_server_works_without_a_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_reply("response_plain_text.json"))
        .mount(&server)
        .await;
    let config = aptix_client::OpenAiConfig::builder()
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .unwrap();
    let provider = OpenAiProvider::new(config).unwrap();
    provider.create(&request()).await.unwrap();
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
}
