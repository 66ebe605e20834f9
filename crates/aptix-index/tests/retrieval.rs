//! Ranking and AGN-034 scope conditions.
// The fixture covers every grammar; without them chunks are line windows.
#![cfg(all(
    feature = "lang-rust",
    feature = "lang-python",
    feature = "lang-typescript",
    feature = "lang-javascript",
    feature = "lang-go",
    feature = "lang-java",
    feature = "lang-csharp"
))]

mod common;

use aptix_index::{IndexConfig, SearchQuery, WorkspaceIndex};
use aptix_model::contract::{ScopeCondition, ScopeOperator};
use aptix_rag::{Chunk, RetrievalQuery, Retriever};
use common::*;
use tempfile::TempDir;

/// The indexed fixture of a test, removed when the test ends (a fixture kept in a
/// `static` is never dropped: each test process left its workspace in the temp dir).
struct Fixture {
    index: WorkspaceIndex,
    _workspace: TempDir,
}

impl std::ops::Deref for Fixture {
    type Target = WorkspaceIndex;
    fn deref(&self) -> &WorkspaceIndex {
        &self.index
    }
}

fn fixture() -> Fixture {
    let workspace = workspace();
    let config = IndexConfig {
        repo_name: Some("billing".into()),
        ..IndexConfig::default()
    };
    let index = indexed(workspace.path(), config);
    Fixture {
        index,
        _workspace: workspace,
    }
}

fn condition(key: &str, operator: ScopeOperator, values: &[&str]) -> ScopeCondition {
    ScopeCondition {
        key: key.into(),
        operator,
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    }
}

fn search(text: &str, scope: Vec<ScopeCondition>) -> Vec<Chunk> {
    let query = SearchQuery::new(text).with_scope(scope).with_limit(100);
    let results = fixture().search(&query).unwrap();
    // The one warning a valid scope may bring: that nothing of the index is in it,
    // and then nothing is found.
    let empty_scope = results.hits.is_empty()
        && results.warnings.len() == 1
        && results.warnings[0].starts_with("no chunk of the index is in the scope");
    assert!(
        results.warnings.is_empty() || empty_scope,
        "{:?}",
        results.warnings
    );
    results.hits.into_iter().map(|hit| hit.chunk).collect()
}

/// Matches every chunk of the fixture: each has the word `invoice` or a path under a
/// folder named like the languages.
const BROAD: &str = "invoice manager total notes gateway";

#[test]
fn a_camel_case_query_finds_snake_case_and_prose() {
    let hits = search("parseHttpResponse", Vec::new());
    let paths: Vec<&str> = hits.iter().map(|c| c.path.as_str()).collect();
    assert!(paths.contains(&"src/billing/invoice.rs"), "{paths:?}");
    assert!(paths.contains(&"py/invoice.py"), "{paths:?}");
    assert!(
        paths.contains(&"docs/notes.md"),
        "prose 'parse http response': {paths:?}"
    );
    // Every spelling of the identifier ranks above prose that merely mentions its words.
    let notes = paths.iter().position(|p| *p == "docs/notes.md").unwrap();
    let rust = paths
        .iter()
        .position(|p| *p == "src/billing/invoice.rs")
        .unwrap();
    assert!(rust < notes, "{paths:?}");
    let snake = search("parse_http_response", Vec::new());
    // The best hit defines the identifier in one of its spellings.
    let best = snake[0].content.to_lowercase().replace('_', "");
    assert!(best.contains("parsehttpresponse"), "{best}");
}

#[test]
fn a_symbol_name_ranks_its_definition_first() {
    let hits = search(
        "send_invoice",
        vec![condition("language", ScopeOperator::Equals, &["rust"])],
    );
    assert!(
        hits[0].content.contains("pub fn send_invoice"),
        "{}",
        hits[0].content
    );
}

/// The index's answer to a scoped search equals the unscoped answer filtered with
/// the contract's own `ScopeCondition::accepts`: the oracle for every operator.
fn check_against_accepts(condition: ScopeCondition) {
    let all = search(BROAD, Vec::new());
    let expected: Vec<&Chunk> = all
        .iter()
        .filter(|chunk| condition.accepts(chunk.metadata_value(&condition.key)))
        .collect();
    let scoped = search(BROAD, vec![condition.clone()]);
    let mut expected_ids: Vec<_> = expected.iter().map(|c| c.id.clone()).collect();
    let mut scoped_ids: Vec<_> = scoped.iter().map(|c| c.id.clone()).collect();
    expected_ids.sort();
    scoped_ids.sort();
    assert_eq!(scoped_ids, expected_ids, "{condition:?}");
}

#[test]
fn every_operator_filters_as_the_contract_says() {
    assert!(search(BROAD, Vec::new()).len() >= SOURCES.len());
    for operator in ScopeOperator::ALL {
        check_against_accepts(condition("language", operator, &["python", "go"]));
        check_against_accepts(condition("path", operator, &["web/"]));
        check_against_accepts(condition("path", operator, &["Invoice", ".md"]));
        check_against_accepts(condition("extension", operator, &["ts"]));
        check_against_accepts(condition("repo", operator, &["billing"]));
        check_against_accepts(condition("repo", operator, &["other"]));
    }
}

#[test]
fn operators_on_concrete_values() {
    let python = search(
        BROAD,
        vec![condition("language", ScopeOperator::Equals, &["python"])],
    );
    assert!(!python.is_empty() && python.iter().all(|c| c.language == "python"));
    let not_python = search(
        BROAD,
        vec![condition("language", ScopeOperator::NotEquals, &["python"])],
    );
    assert!(!not_python.is_empty() && not_python.iter().all(|c| c.language != "python"));
    let web = search(
        BROAD,
        vec![condition("path", ScopeOperator::Contains, &["web/"])],
    );
    assert!(!web.is_empty() && web.iter().all(|c| c.path.starts_with("web/")));
    let not_web = search(
        BROAD,
        vec![condition("path", ScopeOperator::DoesNotContain, &["web/"])],
    );
    assert!(!not_web.is_empty() && not_web.iter().all(|c| !c.path.contains("web/")));
    // Substrings are case-sensitive, like `str::contains`.
    assert!(
        search(
            BROAD,
            vec![condition("path", ScopeOperator::Contains, &["WEB/"])]
        )
        .is_empty()
    );
    // No values: `==` and `contains` match nothing, `!=` and `does_not_contain` everything.
    assert!(search(BROAD, vec![condition("path", ScopeOperator::Equals, &[])]).is_empty());
    assert_eq!(
        search(
            BROAD,
            vec![condition("path", ScopeOperator::DoesNotContain, &[])]
        )
        .len(),
        search(BROAD, Vec::new()).len()
    );
}

#[test]
fn a_missing_key_fails_equals_and_contains_and_passes_the_negations() {
    // The markdown notes are line windows: they have no `symbol`.
    let has_notes = |chunks: &[Chunk]| chunks.iter().any(|c| c.path == "docs/notes.md");
    assert!(has_notes(&search(BROAD, Vec::new())));
    let eq = search(
        BROAD,
        vec![condition(
            "symbol",
            ScopeOperator::Equals,
            &["helper_total"],
        )],
    );
    assert!(!has_notes(&eq) && !eq.is_empty());
    assert!(
        eq.iter()
            .all(|c| symbols(c).contains(&"helper_total".to_owned()))
    );
    assert!(!has_notes(&search(
        BROAD,
        vec![condition("symbol", ScopeOperator::Contains, &["Invoice"])]
    )));
    assert!(has_notes(&search(
        BROAD,
        vec![condition(
            "symbol",
            ScopeOperator::NotEquals,
            &["helper_total"]
        )]
    )));
    assert!(has_notes(&search(
        BROAD,
        vec![condition(
            "symbol",
            ScopeOperator::DoesNotContain,
            &["Invoice"]
        )]
    )));
    // A chunk holding several definitions matches `symbol ==` on any of them.
    let method = search(
        BROAD,
        vec![condition(
            "symbol",
            ScopeOperator::Equals,
            &["InvoiceManager.SendInvoiceEmail"],
        )],
    );
    assert_eq!(method.len(), 1);
    assert_eq!(method[0].path, "Billing/Managers/InvoiceManager.cs");
}

#[test]
fn conditions_are_anded() {
    let hits = search(
        BROAD,
        vec![
            condition("path", ScopeOperator::Contains, &["web/"]),
            condition("language", ScopeOperator::NotEquals, &["typescript"]),
            condition("extension", ScopeOperator::DoesNotContain, &["x"]),
        ],
    );
    let paths: Vec<&str> = hits.iter().map(|c| c.path.as_str()).collect();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| *p == "web/legacy.js"), "{paths:?}");
}

#[test]
fn an_unknown_key_is_a_warning_and_is_ignored() {
    let query = SearchQuery::new(BROAD)
        .with_limit(100)
        .with_scope(vec![condition(
            "team",
            ScopeOperator::Equals,
            &["payments"],
        )]);
    let results = fixture().search(&query).unwrap();
    assert_eq!(results.warnings.len(), 1);
    assert!(
        results.warnings[0].contains("\"team\""),
        "{}",
        results.warnings[0]
    );
    assert_eq!(results.hits.len(), search(BROAD, Vec::new()).len());
}

#[test]
fn a_kind_no_chunk_has_is_a_warning_and_matches_nothing() {
    let query = SearchQuery::new(BROAD)
        .with_limit(100)
        .with_scope(vec![condition("kind", ScopeOperator::Equals, &["sauce"])]);
    let index = fixture();
    let results = index.search(&query).unwrap();
    assert!(results.hits.is_empty());
    assert_eq!(results.warnings.len(), 1, "{:?}", results.warnings);
    assert!(
        results.warnings[0].starts_with("scope kind sauce is not a file kind (kinds: source,"),
        "{}",
        results.warnings[0]
    );
    // A real kind, or a substring test, is no problem.
    for (operator, value) in [
        (ScopeOperator::Equals, "source"),
        (ScopeOperator::Contains, "sour"),
    ] {
        let query = SearchQuery::new(BROAD).with_scope(vec![condition("kind", operator, &[value])]);
        assert!(index.search(&query).unwrap().warnings.is_empty());
    }
}

#[test]
fn a_scope_that_leaves_nothing_to_search_says_so() {
    // Values spelt otherwise than the index keeps them: a capital, a dot.
    let index = fixture();
    for (key, value) in [("language", "Rust"), ("extension", ".rs")] {
        let query = SearchQuery::new(BROAD).with_scope(vec![condition(
            key,
            ScopeOperator::Equals,
            &[value],
        )]);
        let results = index.search(&query).unwrap();
        assert!(results.hits.is_empty(), "{key}");
        assert_eq!(results.warnings.len(), 1, "{:?}", results.warnings);
        assert!(
            results.warnings[0].starts_with(&format!(
                "no chunk of the index is in the scope `{key} == {value}`"
            )),
            "{}",
            results.warnings[0]
        );
    }
    // In scope, but no hit: no warning, the question is just not answered there.
    let query = SearchQuery::new("zzqx_nothing_like_it").with_scope(vec![condition(
        "language",
        ScopeOperator::Equals,
        &["rust"],
    )]);
    let results = fixture().search(&query).unwrap();
    assert!(
        results
            .warnings
            .iter()
            .all(|warning| !warning.contains("scope")),
        "{:?}",
        results.warnings
    );
}

#[test]
fn a_query_without_words_warns_instead_of_failing() {
    let results = fixture().search(&SearchQuery::new("  ?! ")).unwrap();
    assert!(results.hits.is_empty());
    assert_eq!(results.warnings, ["query has no searchable words"]);
}

#[test]
fn a_query_whose_words_the_workspace_lacks_says_so_and_names_them() {
    // Words worth searching, none of them in the fixture: the warning must not claim the
    // question had no words, or a user asks it again in other words for nothing.
    let results = fixture()
        .search(&SearchQuery::new("Where is the quaternion slerp?"))
        .unwrap();
    assert!(results.hits.is_empty());
    assert_eq!(
        results.warnings,
        ["none of the query's words occurs in the workspace index (quaternion, slerp)"]
    );
}

#[test]
fn a_turn_that_asks_nothing_of_the_code_is_not_warned_of_it() {
    // "Thanks", "hello": a conversation's turn retrieves nothing, which is no news; the
    // search still says it (above).
    let index = fixture();
    for text in ["thanks, that helps", "Where is the quaternion slerp?", "?!"] {
        let retrieved = index
            .retrieve_blocking(&RetrievalQuery {
                text: text.into(),
                scope: Vec::new(),
                token_budget: 100_000,
                max_chunks: 8,
            })
            .unwrap();
        assert!(retrieved.chunks.is_empty(), "{text}");
        assert!(
            retrieved.warnings.is_empty(),
            "{text}: {:?}",
            retrieved.warnings
        );
    }
}

#[tokio::test]
async fn the_retriever_packs_to_the_budget_without_overlaps() {
    let index = fixture();
    let query = RetrievalQuery {
        text: "invoice".into(),
        scope: vec![condition("unknown_key", ScopeOperator::Equals, &["x"])],
        token_budget: 100_000,
        max_chunks: 50,
    };
    let retrieval = index.retrieve(&query).await.unwrap();
    assert!(retrieval.chunks.len() > 3);
    assert_eq!(retrieval.warnings.len(), 1);
    for (i, a) in retrieval.chunks.iter().enumerate() {
        for b in &retrieval.chunks[i + 1..] {
            assert!(a.chunk.path != b.chunk.path || !a.chunk.lines.overlaps(b.chunk.lines));
        }
    }
    let scores: Vec<f32> = retrieval.chunks.iter().map(|c| c.score).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );

    let tight = RetrievalQuery {
        token_budget: 120,
        ..query.clone()
    };
    let packed = index.retrieve(&tight).await.unwrap();
    assert!(!packed.chunks.is_empty() && packed.chunks.len() < retrieval.chunks.len());
    // What the budget left out is counted for the orchestrator, which says it once with
    // what it leaves out itself; the retriever does not warn about it too.
    assert!(packed.left_out > 0, "{packed:?}");
    assert!(
        !packed
            .warnings
            .iter()
            .any(|warning| warning.contains("left out")),
        "{:?}",
        packed.warnings
    );

    let few = RetrievalQuery {
        max_chunks: 2,
        ..query
    };
    assert_eq!(index.retrieve(&few).await.unwrap().chunks.len(), 2);
}

#[test]
fn the_retriever_runs_without_a_runtime_too() {
    let query = RetrievalQuery {
        text: "helperTotal".into(),
        scope: Vec::new(),
        token_budget: 10_000,
        max_chunks: 5,
    };
    let retrieval = fixture().retrieve_blocking(&query).unwrap();
    let best = retrieval.chunks[0].chunk.content.to_lowercase();
    assert!(
        best.contains("helpertotal") || best.contains("helper_total"),
        "{best}"
    );
}

#[test]
fn the_index_is_a_shareable_retriever() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<WorkspaceIndex>();
    let fixture = fixture();
    let retriever: std::sync::Arc<dyn Retriever> = std::sync::Arc::new(fixture.index.clone());
    drop(retriever);
}

#[test]
fn an_index_with_nothing_in_it_says_so_rather_than_blaming_the_words() {
    let empty = tempfile::tempdir().unwrap();
    let index = indexed(empty.path(), IndexConfig::default());
    let results = index.search(&SearchQuery::new("invoice total")).unwrap();
    assert!(results.hits.is_empty());
    assert_eq!(results.warnings.len(), 1, "{:?}", results.warnings);
    assert!(
        results.warnings[0].starts_with("the workspace index holds no chunk yet"),
        "{}",
        results.warnings[0]
    );
}

#[test]
fn a_changelog_gives_a_context_no_more_than_the_cap_when_little_else_matches() {
    // A question whose words a long changelog repeats in every release: its windows
    // used to fill the budget behind the one source file that matched.
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    write(
        root,
        "src/router.js",
        "export function mountNested(router, middleware) {\n  router.use(middleware);\n  return router;\n}\n",
    );
    let mut changelog = String::new();
    for release in 0..300 {
        changelog.push_str(&format!(
            "## 1.{release}.0\n\n- Fix nested router middleware when mounted ({release})\n- Router docs\n\n"
        ));
    }
    write(root, "CHANGELOG.md", &changelog);
    let index = indexed(root, IndexConfig::default());
    let query = RetrievalQuery {
        text: "Fix nested router losing middleware when mounted".into(),
        scope: Vec::new(),
        token_budget: 12_000,
        max_chunks: 28,
    };
    let retrieval = index.retrieve_blocking(&query).unwrap();
    let paths: Vec<&str> = retrieval
        .chunks
        .iter()
        .map(|chunk| chunk.chunk.path.as_str())
        .collect();
    assert_eq!(paths.first(), Some(&"src/router.js"), "{paths:?}");
    let changelog_chunks = paths.iter().filter(|path| **path == "CHANGELOG.md").count();
    assert!(
        (1..=3).contains(&changelog_chunks),
        "{changelog_chunks} changelog chunks: {paths:?}"
    );
    // A search still lists the rest, behind the other files.
    let hits = index
        .search(&SearchQuery::new("nested router middleware mounted").with_limit(20))
        .unwrap()
        .hits;
    assert!(hits.len() > 4, "{}", hits.len());
}

#[test]
fn a_question_in_chinese_or_japanese_finds_the_comment_that_answers_it() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    write(
        root,
        "pay.py",
        "# 当用户取消订单时退款到原支付账户\ndef refund_to_origin(order):\n    return order.refund()\n",
    );
    write(
        root,
        "user.py",
        "# ユーザー登録の確認メールを送る\ndef send_confirmation(user):\n    return user.mail()\n",
    );
    write(root, "other.py", "def unrelated():\n    return 1\n");
    let index = indexed(root, IndexConfig::default());
    for (question, file) in [
        ("退款", "pay.py"),
        ("用户取消订单时如何退款？", "pay.py"),
        ("確認メールはどこで送る？", "user.py"),
    ] {
        let hits = index.search(&SearchQuery::new(question)).unwrap().hits;
        assert_eq!(
            hits.first().map(|hit| hit.chunk.path.as_str()),
            Some(file),
            "{question}"
        );
    }
}
