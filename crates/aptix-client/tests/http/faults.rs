//! Faults found by injection, through the real HTTP client against the in-repo fault
//! server (`aptix_testkit::fault_server`): keys echoed in stream events, HTML error
//! pages, a connection cut mid-body, and resuming a background response's stream.

use aptix_client::{ClientError, OpenAiProvider, ResponsesProvider, TransportPhase};
use aptix_testkit::fault_server::{FaultServer, Reply, Step, sse_text, text_answer_events};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{TEST_KEY, config, fold, request};

fn provider(server: &FaultServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server.uri()).build().unwrap()).unwrap()
}

/// The key's masked form as OpenAI prints it.
fn masked_key() -> String {
    format!("sk-test-****{}", &TEST_KEY[TEST_KEY.len() - 4..])
}

#[tokio::test]
async fn an_error_event_echoing_the_key_is_scrubbed_in_both_shapes() {
    let message = format!(
        "Incorrect API key provided: {TEST_KEY}, also shown as {}. Authorization: Bearer {TEST_KEY}",
        masked_key()
    );
    let events = [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_k", "status": "in_progress", "output": []}}),
        // Flat, as OpenAI sends it, then nested, as some compatible servers do.
        json!({"type": "error", "sequence_number": 1, "code": "invalid_api_key", "message": message}),
        json!({"type": "error", "sequence_number": 2, "error": {"code": "invalid_api_key", "message": message}}),
        json!({"type": "response.failed", "sequence_number": 3, "response": {"id": "resp_k", "status": "failed", "output": [],
               "error": {"code": "invalid_api_key", "message": message}}}),
    ];
    let server = FaultServer::start(vec![Reply::sse(sse_text(&events))]).await;
    let stream = provider(&server).stream(&request()).await.unwrap();
    let mut all = String::new();
    let items: Vec<_> = stream.collect().await;
    for item in &items {
        all.push_str(&item.as_ref().unwrap().data);
    }
    assert_eq!(items.len(), 4);
    let tail = &TEST_KEY[TEST_KEY.len() - 4..];
    assert!(!all.contains(TEST_KEY), "{all}");
    assert!(!all.contains(tail), "the masked key's tail is shown: {all}");
    assert!(all.contains("[redacted]"), "{all}");
    // The scrubbed events still decode and fold: the failure is reported, keyless.
    let server = FaultServer::start(vec![Reply::sse(sse_text(&events))]).await;
    let verdict = fold(provider(&server).stream(&request()).await.unwrap()).await;
    let folded = verdict.unwrap();
    let text = format!("{folded:?}");
    assert!(!text.contains(TEST_KEY) && !text.contains(tail), "{text}");
}

#[tokio::test]
async fn a_whole_reply_echoing_the_key_is_scrubbed() {
    let body = json!({"id": "resp_w", "object": "response", "status": "failed", "output": [],
        "error": {"code": "invalid_api_key", "message": format!("bad key {}", masked_key())}});
    let server = FaultServer::start(vec![Reply::json(200, &body)]).await;
    let reply = provider(&server).create(&request()).await.unwrap();
    let text = serde_json::to_string(&reply.response).unwrap();
    assert!(!text.contains(&masked_key()), "{text}");
    assert!(text.contains("bad key [redacted]"), "{text}");
}

#[tokio::test]
async fn an_error_body_echoing_the_key_in_any_member_is_scrubbed() {
    // A 400 whose every member echoes what it was sent (a proxy that quotes the
    // header, a server that names the "bad" parameter's value).
    let echo = format!("Bearer {TEST_KEY}");
    let body =
        json!({"error": {"message": echo, "type": echo, "param": echo, "code": masked_key()}});
    let server = FaultServer::start(vec![Reply::json(400, &body)]).await;
    let error = provider(&server).create(&request()).await.unwrap_err();
    let ClientError::Status {
        api_error: Some(api),
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    let tail = &TEST_KEY[TEST_KEY.len() - 4..];
    for text in [
        Some(api.message.as_str()),
        api.kind.as_deref(),
        api.param.as_deref(),
        api.code.as_deref(),
    ] {
        let text = text.unwrap();
        assert!(!text.contains(TEST_KEY) && !text.contains(tail), "{text}");
    }
    let shown = format!("{error} {error:?} {}", error.code());
    assert!(
        !shown.contains(TEST_KEY) && !shown.contains(tail),
        "{shown}"
    );
}

#[tokio::test]
async fn a_request_id_echoing_the_key_is_scrubbed_on_success_and_failure() {
    // The reply's `x-request-id` ends up in envelopes (`requestId`), errors and logs.
    let body = json!({"id": "resp_r", "object": "response", "status": "completed", "output": []});
    let replies = vec![
        Reply::json(200, &body).header("x-request-id", TEST_KEY),
        Reply::json(400, &json!({"error": {"message": "bad"}}))
            .header("x-request-id", &format!("req {}", masked_key())),
    ];
    let server = FaultServer::start(replies).await;
    let reply = provider(&server).create(&request()).await.unwrap();
    assert_eq!(reply.meta.request_id.as_deref(), Some("[redacted]"));
    let error = provider(&server).create(&request()).await.unwrap_err();
    assert_eq!(error.request_id(), Some("req [redacted]"));
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(&TEST_KEY[TEST_KEY.len() - 4..]), "{shown}");
}

#[tokio::test]
async fn a_request_holding_the_key_sends_it_only_in_the_header() {
    // A workspace file with the key in it, retrieved as context or read by a tool.
    let body = json!({"id": "resp_k", "object": "response", "status": "completed", "output": []});
    let server = FaultServer::start(vec![Reply::json(200, &body)]).await;
    let mut asked = request();
    asked.input = aptix_model::wire::Input::Text(format!(
        "config.py:\nOPENAI_API_KEY = \"{TEST_KEY}\"\nWhy does it fail?"
    ));
    provider(&server).create(&asked).await.unwrap();
    let received = &server.requests()[0];
    let sent = String::from_utf8(received.body.clone()).unwrap();
    assert!(!sent.contains(TEST_KEY), "{sent}");
    assert!(
        sent.contains(r#"OPENAI_API_KEY = \"[redacted]\""#),
        "{sent}"
    );
    let authorization = received
        .headers
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str());
    assert_eq!(authorization, Some(format!("Bearer {TEST_KEY}").as_str()));
}

#[tokio::test]
async fn an_html_502_is_its_status_and_title_not_the_page() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "<div>cloudflare ray id</div>".repeat(60)
    );
    assert!(page.len() > 1500);
    let replies = (0..3).map(|_| Reply::status(502, "text/html", page.clone()));
    let server = FaultServer::start(replies.collect()).await;
    let error = provider(&server).create(&request()).await.unwrap_err();
    assert_eq!(server.requests().len(), 3);
    let shown = error.to_string();
    assert_eq!(
        shown,
        format!(
            "http status 502: 502 Bad Gateway (an HTML error page of {} bytes)",
            page.len()
        )
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_says_so_and_counts_the_events() {
    let events = text_answer_events("resp_cut", &["Hel", "lo", " there"]);
    let head = sse_text(&events[..4]);
    let server = FaultServer::start(vec![Reply::sse_steps(vec![
        Step::Send(head.into_bytes()),
        Step::Reset,
    ])])
    .await;
    let stream = provider(&server).stream(&request()).await.unwrap();
    let items: Vec<_> = stream.collect().await;
    assert_eq!(items.len(), 5, "four events, then the failure");
    let Some(Err(ClientError::Transport {
        phase: TransportPhase::ReadBody,
        message,
        ..
    })) = items.last()
    else {
        panic!("{items:?}")
    };
    assert!(
        message.starts_with("the connection was lost after 4 event(s) ("),
        "{message}"
    );
}

#[tokio::test]
async fn a_background_stream_resumes_after_the_last_event_seen() {
    let server = FaultServer::start(vec![Reply::sse(sse_text(&text_answer_events(
        "resp_bg",
        &["a", "b"],
    )))])
    .await;
    let stream = provider(&server)
        .resume_stream("resp_bg", Some(3))
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    assert!(items.iter().all(Result::is_ok));
    let received = server.requests();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].method, "GET");
    assert_eq!(
        received[0].target,
        "/v1/responses/resp_bg?stream=true&starting_after=3"
    );
    let error = provider(&server)
        .resume_stream("../admin", None)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Config { .. }), "{error:?}");
}

#[tokio::test]
async fn a_whole_reply_over_the_limit_is_refused_before_it_fills_memory() {
    // 17 MiB of answer text, sent chunked with no declared length, as a server gone
    // wrong might: refused once past 16 MiB (the limit on a streamed final event), not
    // read whole, and not asked again.
    let text = "x".repeat(17 * 1024 * 1024);
    let body = json!({"id": "resp_big", "object": "response", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}]})
    .to_string()
    .into_bytes();
    let steps = body
        .chunks(1024 * 1024)
        .map(|chunk| Step::Send(chunk.to_vec()))
        .collect();
    let huge = Reply {
        status: Some(200),
        headers: vec![("content-type".into(), "application/json".into())],
        steps,
    };
    let server = FaultServer::start(vec![huge.clone()]).await;
    let error = provider(&server).create(&request()).await.unwrap_err();
    let ClientError::Decode { what, message, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*what, "response body");
    assert!(message.contains("over the 16 MiB"), "{message}");
    assert_eq!(server.requests().len(), 1, "not retried");

    // The same reply to a streamed request (a server that ignores `stream: true`).
    let server = FaultServer::start(vec![huge]).await;
    let stream = provider(&server).stream(&request()).await.unwrap();
    let items: Vec<_> = stream.collect().await;
    assert_eq!(items.len(), 1);
    let error = items[0].as_ref().unwrap_err();
    assert!(error.to_string().contains("over the 16 MiB"), "{error}");
}

#[tokio::test]
async fn a_non_streamed_reply_cut_mid_body_is_sent_again() {
    // The head said 200, then the connection dropped half-way through the JSON: nothing
    // of it was shown, and the official SDKs send it again. (A stream's cut body is the
    // orchestrator's to recover: see the test above.)
    let body = aptix_testkit::read_fixture("response_plain_text.json");
    let half = body[..body.len() / 2].to_vec();
    let cut = Reply {
        steps: vec![Step::Send(half), Step::Reset],
        ..Reply::status(200, "application/json", Vec::new())
    };
    let server = FaultServer::start(vec![cut, Reply::status(200, "application/json", body)]).await;
    let reply = provider(&server).create(&request()).await.unwrap();
    assert_eq!(server.requests().len(), 2);
    assert_eq!(reply.meta.attempts, 2);
    assert!(!reply.response.output.is_empty());
}

#[tokio::test]
async fn a_401_to_a_request_sent_without_a_key_says_none_was_sent() {
    // A local server started with a key of its own, and none set here: it did not
    // refuse a key, it wanted one.
    let server = FaultServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": "Invalid API Key", "type": "authentication_error"}}),
    )])
    .await;
    let keyless = aptix_client::OpenAiConfig::builder()
        .base_url(server.base_url())
        .build()
        .unwrap();
    let error = OpenAiProvider::new(keyless)
        .unwrap()
        .create(&request())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "missing_api_key", "{error}");
    assert!(error.to_string().contains("no API key was sent"), "{error}");
    assert_eq!(
        aptix_client::remedy(&error.code(), &error.to_string()),
        Some(aptix_client::Remedy::SetKey)
    );
}
