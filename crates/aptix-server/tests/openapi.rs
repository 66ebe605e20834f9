//! `docs/openapi.json` is the document the service generates: this test fails when the
//! two drift. Regenerate with `UPDATE_OPENAPI=1 cargo nextest run -p aptix-server
//! --test openapi` and commit the result.

use std::path::PathBuf;

use serde_json::Value;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn the_committed_openapi_document_is_the_generated_one() {
    let generated = aptix_server::openapi_json();
    let path = committed_path();
    if std::env::var_os("UPDATE_OPENAPI").is_some_and(|value| value == "1") {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from the generated document; regenerate it with \
         `UPDATE_OPENAPI=1 cargo nextest run -p aptix-server --test openapi` and commit it"
    );
}

#[test]
fn every_error_code_and_status_is_documented() {
    let document: Value = serde_json::from_str(&aptix_server::openapi_json()).unwrap();
    let codes: Vec<&str> = document["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let execute = &document["paths"]["/v1/agent/execute"]["post"]["responses"];
    let mut described = String::new();
    for (status, response) in execute.as_object().unwrap() {
        let description = response["description"].as_str().unwrap();
        described.push_str(description);
        if status != "200" {
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error",
                "{status}"
            );
        }
    }
    for status in [
        "200", "400", "401", "404", "409", "413", "415", "500", "503", "504",
    ] {
        assert!(execute.get(status).is_some(), "{status} is not documented");
    }
    assert_eq!(codes.len(), 13, "{codes:?}");
    for code in codes {
        assert!(
            described.contains(&format!("`{code}`")),
            "{code} is in no response's description"
        );
    }
    assert!(document["components"]["securitySchemes"]["bearer"].is_object());
}
