//! Both session stores pass the same conformance checks: versioned atomic commits,
//! idempotent turn records, leases; and the SQLite file keeps its last committed state
//! across reopening.

use std::sync::Arc;
use std::time::Duration;

use aptix_model::contract::{AgentExecuteResponse, Kind};
use aptix_model::wire::{ContentPart, InputItem, InputMessage, Role};
use aptix_orchestrator::{
    CompactionMethod, CompactionReason, CompactionRecord, InMemorySessionStore, ModelSettings,
    OrchestratorError, Scenario, SessionState, SessionStore, SqliteSessionStore, StoredTurn,
    TurnKey,
};

fn state(session: &str, last_response: Option<&str>) -> SessionState {
    let mut state = SessionState::new(
        session,
        "QA",
        ModelSettings {
            model: "gpt-test".into(),
            ..ModelSettings::default()
        },
    );
    state.last_response_id = last_response.map(str::to_owned);
    state
}

fn turn(turn_id: &str, scenario: Scenario, text: &str) -> StoredTurn {
    let mut envelope = AgentExecuteResponse::new(Kind::Ok);
    envelope.text = Some(text.to_owned());
    envelope.turn_id = Some(turn_id.to_owned());
    StoredTurn {
        turn_id: turn_id.to_owned(),
        scenario,
        envelope,
        request_digest: None,
    }
}

fn key(session: &str, turn_id: &str, scenario: Scenario) -> TurnKey {
    TurnKey {
        session_id: session.into(),
        turn_id: turn_id.into(),
        scenario,
    }
}

/// The conformance checks every store must pass.
async fn check_store(store: Arc<dyn SessionStore>) {
    assert!(store.load("s1").await.unwrap().is_none());

    let v1 = store
        .commit(
            state("s1", Some("resp_1")),
            None,
            turn("t1", Scenario::UserTurn, "one"),
            "test-holder",
        )
        .await
        .unwrap();
    assert_eq!(v1, 1);
    let loaded = store.load("s1").await.unwrap().unwrap();
    assert_eq!(
        (loaded.version, loaded.value.last_response_id.as_deref()),
        (1, Some("resp_1"))
    );

    // Creating an existing session, or committing from a stale version, is a conflict
    // that changes nothing.
    for expected in [None, Some(7)] {
        let error = store
            .commit(
                state("s1", Some("resp_x")),
                expected,
                turn("tx", Scenario::UserTurn, "x"),
                "test-holder",
            )
            .await
            .unwrap_err();
        assert!(
            matches!(error, OrchestratorError::Conflict { found: Some(1), .. }),
            "{error:?}"
        );
    }
    assert_eq!(
        store
            .load("s1")
            .await
            .unwrap()
            .unwrap()
            .value
            .last_response_id
            .as_deref(),
        Some("resp_1")
    );
    assert!(
        store
            .stored_turn(&key("s1", "tx", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );

    let v2 = store
        .commit(
            state("s1", Some("resp_2")),
            Some(1),
            turn("t1", Scenario::ToolContinuation, "two"),
            "test-holder",
        )
        .await
        .unwrap();
    assert_eq!(v2, 2);

    // A turn is keyed by session, turn id and scenario.
    let user = store
        .stored_turn(&key("s1", "t1", Scenario::UserTurn))
        .await
        .unwrap()
        .unwrap();
    let cont = store
        .stored_turn(&key("s1", "t1", Scenario::ToolContinuation))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.envelope.text.as_deref(), Some("one"));
    assert_eq!(cont.envelope.text.as_deref(), Some("two"));
    assert!(
        store
            .stored_turn(&key("s2", "t1", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );

    // Leases: one holder at a time; re-entrant for the holder; released only by it;
    // an expired lease can be taken over.
    let ttl = Duration::from_secs(60);
    assert!(store.acquire_lease("s1", "a", ttl).await.unwrap());
    assert!(!store.acquire_lease("s1", "b", ttl).await.unwrap());
    assert!(store.acquire_lease("s1", "a", ttl).await.unwrap());
    store.release_lease("s1", "b").await.unwrap();
    assert!(!store.acquire_lease("s1", "b", ttl).await.unwrap());
    store.release_lease("s1", "a").await.unwrap();
    assert!(store.acquire_lease("s1", "b", ttl).await.unwrap());
    assert!(
        store
            .acquire_lease("s2", "a", Duration::ZERO)
            .await
            .unwrap()
    );
    assert!(
        store.acquire_lease("s2", "b", ttl).await.unwrap(),
        "an expired lease is free"
    );
}

/// Two writers racing from the same version: exactly one wins, the other conflicts.
async fn check_racing_commits(store: Arc<dyn SessionStore>) {
    store
        .commit(
            state("race", None),
            None,
            turn("t0", Scenario::UserTurn, "zero"),
            "test-holder",
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            store
                .commit(
                    state("race", Some(&format!("resp_{writer}"))),
                    Some(1),
                    turn(&format!("t{writer}"), Scenario::UserTurn, "w"),
                    "test-holder",
                )
                .await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(version) => {
                assert_eq!(version, 2);
                won += 1;
            }
            Err(OrchestratorError::Conflict { .. }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(store.load("race").await.unwrap().unwrap().version, 2);
}

/// Listing pages through every session once, newest first; deleting removes a session
/// with its turns, refuses one with a live lease, and says whether it existed.
async fn check_listing_and_deleting(store: Arc<dyn SessionStore>) {
    let unix_ms = || {
        u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap()
    };
    let before = unix_ms();
    for n in 0..5 {
        let session = format!("s{n}");
        store
            .commit(
                state(&session, None),
                None,
                turn("t1", Scenario::UserTurn, "a"),
                "test-holder",
            )
            .await
            .unwrap();
        // Distinct change times for the file store's millisecond clock.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let after = unix_ms();
    let mut seen = Vec::new();
    let mut times = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list_sessions(2, cursor.as_deref()).await.unwrap();
        assert!(page.sessions.len() <= 2);
        times.extend(
            page.sessions
                .iter()
                .map(|summary| summary.updated_at_unix_ms),
        );
        seen.extend(
            page.sessions
                .iter()
                .map(|summary| summary.session_id.clone()),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["s4", "s3", "s2", "s1", "s0"]);
    // Each says when its last turn was committed (a database's clock may differ from
    // this one by a little), newest first.
    for time in &times {
        let time = time.unwrap_or_else(|| panic!("no update time: {times:?}"));
        assert!(
            time + 5_000 >= before && time <= after + 5_000,
            "{time} not in {before}..{after}"
        );
    }
    assert!(times.windows(2).all(|pair| pair[0] >= pair[1]), "{times:?}");
    assert!(store.list_sessions(10, Some("not a cursor")).await.is_err());

    assert!(store.delete_session("s2").await.unwrap());
    assert!(!store.delete_session("s2").await.unwrap());
    assert!(store.load("s2").await.unwrap().is_none());
    assert!(
        store
            .stored_turn(&key("s2", "t1", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .acquire_lease("s3", "holder", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(matches!(
        store.delete_session("s3").await,
        Err(OrchestratorError::SessionBusy { .. })
    ));
    assert!(store.load("s3").await.unwrap().is_some());
    let page = store.list_sessions(10, None).await.unwrap();
    assert_eq!(page.sessions.len(), 4);
    assert_eq!(page.next_cursor, None);
}

/// A session whose texts hold a NUL (an instruction, or a model's answer, may) is
/// stored, read back and listed like any other. On PostgreSQL, listing read the mode out
/// of the state's JSON, which fails on `\u0000`, and every page holding the session
/// answered 503.
async fn check_nul_in_texts(store: Arc<dyn SessionStore>) {
    let mut nul = state("nul", None);
    nul.history.push(InputItem::Message(InputMessage::new(
        Role::User,
        vec![ContentPart::input_text("hi \u{0} there")],
    )));
    store
        .commit(
            nul,
            None,
            turn("t1", Scenario::UserTurn, "answer \u{0} with a NUL"),
            "test-holder",
        )
        .await
        .unwrap();
    store
        .commit(
            state("plain", None),
            None,
            turn("t1", Scenario::UserTurn, "a"),
            "test-holder",
        )
        .await
        .unwrap();
    let loaded = store.load("nul").await.unwrap().unwrap();
    assert_eq!(loaded.value.history.len(), 1);
    let page = store.list_sessions(10, None).await.unwrap();
    let mut listed: Vec<(String, String)> = page
        .sessions
        .into_iter()
        .map(|summary| (summary.session_id, summary.mode))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [("nul".into(), "QA".into()), ("plain".into(), "QA".into())]
    );
    let stored = store
        .stored_turn(&key("nul", "t1", Scenario::UserTurn))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.turn_id, "t1");
}

/// A session made again under a deleted one's id goes on from its version, so a turn
/// prepared against the deleted one (a process stalled past its lease) cannot commit over
/// the new one by finding the version it expects there again.
async fn check_no_stale_commit_after_a_delete(store: Arc<dyn SessionStore>) {
    store
        .commit(
            state("s", None),
            None,
            turn("t1", Scenario::UserTurn, "old"),
            "test-holder",
        )
        .await
        .unwrap();
    // A replica loaded version 1 and stalled past its lease; meanwhile the session
    // is deleted and made again under the same id.
    let stale = store.load("s").await.unwrap().unwrap();
    assert_eq!(stale.version, 1);
    assert!(store.delete_session("s").await.unwrap());
    let made_again = store
        .commit(
            state("s", None),
            None,
            turn("t-new", Scenario::UserTurn, "new"),
            "test-holder",
        )
        .await
        .unwrap();
    assert_eq!(
        made_again, 2,
        "the new session goes on from the deleted one's version"
    );
    // The stalled turn comes back: its commit finds no session at version 1.
    let error = store
        .commit(
            stale.value.clone(),
            Some(stale.version),
            turn("t-stale", Scenario::UserTurn, "stale"),
            "test-holder",
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, OrchestratorError::Conflict { .. }),
        "{error:?}"
    );
    let now = store.load("s").await.unwrap().unwrap();
    assert_eq!(now.version, 2);
    assert!(
        store
            .stored_turn(&key("s", "t-stale", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );
}

/// A turn whose process stalled past its lease while another holder took the session
/// over cannot commit over the new holder's turn, even when it commits first: it is
/// fenced off by the lease (nothing written, `SessionBusy`), and the new holder's turn
/// lands. Before, the stalled turn won and the new holder's failed as a conflict.
async fn check_a_stalled_holder_is_fenced_off(store: Arc<dyn SessionStore>) {
    store
        .commit(
            state("fenced", None),
            None,
            turn("t1", Scenario::UserTurn, "first"),
            "stalled",
        )
        .await
        .unwrap();
    assert!(
        store
            .acquire_lease("fenced", "stalled", Duration::from_millis(50))
            .await
            .unwrap()
    );
    let stalled = store.load("fenced").await.unwrap().unwrap();
    // The stall: the lease expires, and another replica takes the session over.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        store
            .acquire_lease("fenced", "new", Duration::from_secs(60))
            .await
            .unwrap()
    );
    let taken_over = store.load("fenced").await.unwrap().unwrap();
    let error = store
        .commit(
            stalled.value.clone(),
            Some(stalled.version),
            turn("t-stalled", Scenario::UserTurn, "stalled"),
            "stalled",
        )
        .await
        .unwrap_err();
    match &error {
        OrchestratorError::SessionBusy { holder, .. } => {
            assert_eq!(holder.as_deref(), Some("new"), "{error:?}");
        }
        other => panic!("expected SessionBusy, got {other:?}"),
    }
    assert_eq!(store.load("fenced").await.unwrap().unwrap().version, 1);
    assert!(
        store
            .stored_turn(&key("fenced", "t-stalled", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );
    // The new holder's turn lands.
    let version = store
        .commit(
            taken_over.value,
            Some(taken_over.version),
            turn("t-new", Scenario::UserTurn, "new"),
            "new",
        )
        .await
        .unwrap();
    assert_eq!(version, 2);
    // A session nobody holds (the lease given back) takes anyone's commit, by version.
    store.release_lease("fenced", "new").await.unwrap();
    let now = store.load("fenced").await.unwrap().unwrap();
    store
        .commit(
            now.value,
            Some(now.version),
            turn("t-after", Scenario::UserTurn, "after"),
            "stalled",
        )
        .await
        .unwrap();
}

/// A delete that races a turn taking the session's lease never takes the lease away
/// from the turn: either the delete goes first (the turn then runs on a new session) or
/// it finds the session busy. Before, a PostgreSQL delete could check for a lease, see
/// none, and delete the one a turn took meanwhile, so a second turn ran beside it.
async fn check_deleting_races_lease_takers(store: Arc<dyn SessionStore>) {
    for round in 0..40 {
        let session = format!("race{round}");
        store
            .commit(
                state(&session, None),
                None,
                turn("t1", Scenario::UserTurn, "a"),
                "test-holder",
            )
            .await
            .unwrap();
        let holder = format!("turn-{round}");
        let (deleted, taken) = tokio::join!(
            store.delete_session(&session),
            store.acquire_lease(&session, &holder, Duration::from_secs(60))
        );
        let taken = taken.unwrap();
        match deleted {
            Ok(_) => {}
            Err(OrchestratorError::SessionBusy { .. }) => {
                assert!(taken, "busy, but nobody took the lease (round {round})");
            }
            Err(other) => panic!("round {round}: {other:?}"),
        }
        if taken {
            let lease = store.lease(&session).await.unwrap();
            assert_eq!(
                lease.map(|lease| lease.holder),
                Some(holder),
                "round {round}: the running turn's lease was deleted"
            );
        }
    }
}

/// A session's turns are listed most recent first, up to the limit; a turn committed
/// again (its retry) is listed once; an unknown session has none.
async fn check_turn_listing(store: Arc<dyn SessionStore>) {
    let mut version = None;
    for (turn_id, scenario) in [
        ("t1", Scenario::UserTurn),
        ("t2", Scenario::UserTurn),
        ("t2", Scenario::ToolContinuation),
        ("t3", Scenario::UserTurn),
    ] {
        version = Some(
            store
                .commit(
                    state("listed", None),
                    version,
                    turn(turn_id, scenario, turn_id),
                    "test-holder",
                )
                .await
                .unwrap(),
        );
        // Distinct commit times for the file store's millisecond clock.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let listed = |turns: Vec<StoredTurn>| -> Vec<(String, Scenario)> {
        turns
            .into_iter()
            .map(|turn| (turn.turn_id, turn.scenario))
            .collect()
    };
    assert_eq!(
        listed(store.list_turns("listed", 3).await.unwrap()),
        [
            ("t3".to_owned(), Scenario::UserTurn),
            ("t2".to_owned(), Scenario::ToolContinuation),
            ("t2".to_owned(), Scenario::UserTurn),
        ]
    );
    let all = store.list_turns("listed", 100).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[3].envelope.text.as_deref(), Some("t1"));
    assert!(store.list_turns("nobody", 10).await.unwrap().is_empty());
}

/// A turn's request digest is kept as given and read back with it, by key and in the
/// listing; a commit that records the turn again replaces it; a turn stored without
/// one reads back without one.
async fn check_request_digests(store: Arc<dyn SessionStore>) {
    let with_digest = |turn_id: &str, digest: Option<&str>| StoredTurn {
        request_digest: digest.map(str::to_owned),
        ..turn(turn_id, Scenario::UserTurn, turn_id)
    };
    let v1 = store
        .commit(
            state("d", None),
            None,
            with_digest("t1", Some("v1:aa")),
            "test-holder",
        )
        .await
        .unwrap();
    let v2 = store
        .commit(
            state("d", None),
            Some(v1),
            with_digest("t2", None),
            "test-holder",
        )
        .await
        .unwrap();
    let digest = |turn_id: &'static str| {
        let store = Arc::clone(&store);
        async move {
            store
                .stored_turn(&key("d", turn_id, Scenario::UserTurn))
                .await
                .unwrap()
                .unwrap()
                .request_digest
        }
    };
    assert_eq!(digest("t1").await.as_deref(), Some("v1:aa"));
    assert_eq!(digest("t2").await, None);
    let listed: Vec<Option<String>> = store
        .list_turns("d", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|turn| turn.request_digest)
        .collect();
    assert_eq!(listed, [None, Some("v1:aa".to_owned())]);
    store
        .commit(
            state("d", None),
            Some(v2),
            with_digest("t1", Some("v1:bb")),
            "test-holder",
        )
        .await
        .unwrap();
    assert_eq!(digest("t1").await.as_deref(), Some("v1:bb"));
}

fn message(role: Role, text: &str) -> InputItem {
    InputItem::Message(InputMessage::new(role, vec![ContentPart::input_text(text)]))
}

/// A compaction of `replaced` into one note, which begins the history after the system
/// message.
fn compaction(turn_id: &str, replaced: Vec<InputItem>, note: &str) -> CompactionRecord {
    CompactionRecord {
        turn_id: turn_id.to_owned(),
        at_unix_ms: 1,
        reason: CompactionReason::Threshold,
        method: CompactionMethod::Summary,
        tokens_before: 100,
        tokens_after: 10,
        replaced,
        replacement: vec![message(Role::User, note)],
        kept_items: 0,
    }
}

/// A long session compacted again and again: what a turn loads stays the size of its
/// history (and each record's figures), every item a compaction replaced or put in
/// place is kept and read back by `load_full` (in the order of the conversation), and
/// deleting the session deletes them.
async fn check_compacted_session(store: Arc<dyn SessionStore>) {
    let system = message(Role::System, "rules");
    // Each compaction replaces the previous note and a long exchange.
    let exchange = |n: usize| {
        vec![
            message(Role::User, &format!("question {n} {}", "q".repeat(2_000))),
            message(
                Role::Assistant,
                &format!("answer {n} {}", "a".repeat(2_000)),
            ),
        ]
    };
    let mut state = state("long", None);
    let mut expected_conversation = vec![system.clone()];
    let mut version = None;
    for n in 0..20 {
        let note = format!("note {n}");
        let mut replaced = Vec::new();
        if n > 0 {
            replaced.push(message(Role::User, &format!("note {}", n - 1)));
        }
        replaced.extend(exchange(n));
        expected_conversation.extend(exchange(n));
        state
            .compactions
            .push(compaction(&format!("t{n}"), replaced, &note));
        state.history = vec![system.clone(), message(Role::User, &note)];
        let committed = store
            .commit(
                state.clone(),
                version,
                turn(&format!("t{n}"), Scenario::UserTurn, "ok"),
                "test-holder",
            )
            .await
            .unwrap();
        version = Some(committed);
        // The next turn starts from what `load` gives, as the orchestrator does.
        let loaded = store.load("long").await.unwrap().unwrap();
        assert_eq!(loaded.version, committed);
        let mut without_items = state.clone();
        for record in &mut without_items.compactions {
            record.replaced.clear();
            record.replacement.clear();
        }
        assert_eq!(
            loaded.value, without_items,
            "load gives the session without its compactions' items"
        );
        // Each compaction replaced over 4 KB; what a turn loads grows by its record's
        // figures only (turn, time, reason, method, token counts).
        let bytes = serde_json::to_vec(&loaded.value).unwrap().len();
        assert!(
            bytes < 500 + 200 * (n + 1),
            "after {} compactions a turn loads {bytes} bytes",
            n + 1
        );
        state = loaded.value;
    }
    let full = store.load_full("long").await.unwrap().unwrap();
    assert_eq!(full.version, version.unwrap());
    assert_eq!(full.value.compactions.len(), 20);
    assert_eq!(full.value.history, state.history);
    assert_eq!(full.value.conversation(), expected_conversation);
    // Committing a session as `load_full` read it keeps one copy of each.
    store
        .commit(
            full.value.clone(),
            version,
            turn("t20", Scenario::UserTurn, "ok"),
            "test-holder",
        )
        .await
        .unwrap();
    let again = store.load_full("long").await.unwrap().unwrap();
    assert_eq!(again.value.compactions, full.value.compactions);

    assert!(store.load_full("nobody").await.unwrap().is_none());
    assert!(store.delete_session("long").await.unwrap());
    assert!(store.load_full("long").await.unwrap().is_none());
    // A new session of the same id has none of the old one's items.
    let mut fresh = self::state("long", None);
    fresh.compactions.push(compaction("t0", Vec::new(), "n"));
    store
        .commit(
            fresh.clone(),
            None,
            turn("t0", Scenario::UserTurn, "ok"),
            "test-holder",
        )
        .await
        .unwrap();
    let reloaded = store.load_full("long").await.unwrap().unwrap();
    assert_eq!(reloaded.value.compactions, fresh.compactions);
}

#[tokio::test]
async fn in_memory_store_conforms() {
    check_store(Arc::new(InMemorySessionStore::new())).await;
    check_racing_commits(Arc::new(InMemorySessionStore::new())).await;
    check_listing_and_deleting(Arc::new(InMemorySessionStore::new())).await;
    check_deleting_races_lease_takers(Arc::new(InMemorySessionStore::new())).await;
    check_nul_in_texts(Arc::new(InMemorySessionStore::new())).await;
    check_no_stale_commit_after_a_delete(Arc::new(InMemorySessionStore::new())).await;
    check_a_stalled_holder_is_fenced_off(Arc::new(InMemorySessionStore::new())).await;
    check_compacted_session(Arc::new(InMemorySessionStore::new())).await;
    check_turn_listing(Arc::new(InMemorySessionStore::new())).await;
    check_request_digests(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let open = |file: &str| Arc::new(SqliteSessionStore::open(dir.path().join(file)).unwrap());
    check_store(open("a.db")).await;
    check_racing_commits(open("b.db")).await;
    check_listing_and_deleting(open("c.db")).await;
    check_deleting_races_lease_takers(open("f.db")).await;
    check_nul_in_texts(open("g.db")).await;
    check_no_stale_commit_after_a_delete(open("h.db")).await;
    check_a_stalled_holder_is_fenced_off(open("j.db")).await;
    check_compacted_session(open("d.db")).await;
    check_turn_listing(open("e.db")).await;
    check_request_digests(open("i.db")).await;
}

/// A session as schema 1 stored it, at version 3: one compaction, its replaced item
/// inside the state.
fn version_1_session() -> SessionState {
    let mut old = state("s", None);
    old.compactions.push(compaction(
        "t1",
        vec![message(Role::User, "first question")],
        "note",
    ));
    old.history = vec![message(Role::System, "rules"), message(Role::User, "note")];
    old
}

/// A store holding [`version_1_session`] as schema 1 stored it shows its whole
/// conversation, loads it as it was written, and moves the replaced item out of the
/// state at the next commit.
async fn check_version_1_session(store: &dyn SessionStore, old: SessionState) {
    let conversation = vec![
        message(Role::System, "rules"),
        message(Role::User, "first question"),
    ];
    let full = store.load_full("s").await.unwrap().unwrap();
    assert_eq!(full.value.conversation(), conversation);
    let loaded = store.load("s").await.unwrap().unwrap();
    assert_eq!(loaded.value, old, "the old state reads as it was written");
    store
        .commit(
            loaded.value,
            Some(3),
            turn("t2", Scenario::UserTurn, "ok"),
            "test-holder",
        )
        .await
        .unwrap();
    let after = store.load("s").await.unwrap().unwrap();
    assert!(after.value.compactions[0].replaced.is_empty());
    assert!(after.value.compactions[0].replacement.is_empty());
    let full = store.load_full("s").await.unwrap().unwrap();
    assert_eq!(full.value.conversation(), conversation);
}

/// A file written before replaced items were kept apart (schema 1, the items inside the
/// state) opens, shows the whole conversation, and its next commit moves them out of
/// the state.
#[tokio::test]
async fn sqlite_moves_the_replaced_items_of_a_version_1_file_out_of_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let old = version_1_session();
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
                 state TEXT NOT NULL, updated_at_ms INTEGER NOT NULL);
             CREATE TABLE turns (session_id TEXT NOT NULL, turn_id TEXT NOT NULL,
                 scenario TEXT NOT NULL, envelope TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
                 PRIMARY KEY (session_id, turn_id, scenario));
             CREATE TABLE leases (session_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                 expires_at_ms INTEGER NOT NULL);
             PRAGMA user_version = 1;",
        )
        .unwrap();
        raw.execute(
            "INSERT INTO sessions VALUES ('s', 3, ?1, 1)",
            [serde_json::to_string(&old).unwrap()],
        )
        .unwrap();
        raw.execute(
            "INSERT INTO turns VALUES ('s', 't0', 'user_turn', ?1, 1)",
            [serde_json::to_string(&turn("t0", Scenario::UserTurn, "old").envelope).unwrap()],
        )
        .unwrap();
    }
    let store = SqliteSessionStore::open(&path).unwrap();
    check_version_1_session(&store, old).await;
    // A turn stored before digests were kept has none, and still answers.
    let stored = store
        .stored_turn(&key("s", "t0", Scenario::UserTurn))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.envelope.text.as_deref(), stored.request_digest),
        (Some("old"), None)
    );
}

#[tokio::test]
async fn sqlite_state_survives_reopening_and_a_dropped_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("sessions.db");
    {
        let store = SqliteSessionStore::open(&path).unwrap();
        store
            .commit(
                state("s", Some("resp_1")),
                None,
                turn("t1", Scenario::UserTurn, "kept"),
                "test-holder",
            )
            .await
            .unwrap();
        // A commit future dropped before it runs changes nothing.
        let lost_state = state("s", Some("resp_lost"));
        let lost_turn = turn("t2", Scenario::UserTurn, "lost");
        let dropped = store.commit(
            lost_state.clone(),
            Some(1),
            lost_turn.clone(),
            "test-holder",
        );
        drop(dropped);
    }
    let reopened = SqliteSessionStore::open(&path).unwrap();
    let loaded = reopened.load("s").await.unwrap().unwrap();
    assert_eq!(
        (loaded.version, loaded.value.last_response_id.as_deref()),
        (1, Some("resp_1"))
    );
    assert!(
        reopened
            .stored_turn(&key("s", "t2", Scenario::UserTurn))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn sqlite_refuses_a_file_from_a_newer_schema_and_reports_corrupt_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    {
        let store = SqliteSessionStore::open(&path).unwrap();
        store
            .commit(
                state("s", None),
                None,
                turn("t", Scenario::UserTurn, "x"),
                "test-holder",
            )
            .await
            .unwrap();
    }
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute(
            "UPDATE sessions SET state = '{not json' WHERE session_id = 's'",
            [],
        )
        .unwrap();
    }
    let store = SqliteSessionStore::open(&path).unwrap();
    let error = store.load("s").await.unwrap_err();
    assert!(
        matches!(error, OrchestratorError::CorruptState { .. }),
        "{error:?}"
    );
    drop(store);
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch("PRAGMA user_version = 99").unwrap();
    }
    let error = SqliteSessionStore::open(&path).unwrap_err();
    assert!(error.to_string().contains("open"), "{error}");
    let source = std::error::Error::source(&error).unwrap().to_string();
    assert!(source.contains("99"), "{source}");
}

/// The same checks on PostgreSQL, each on a fresh database of a real server
/// (`scripts/test-postgres.sh`; see `aptix_testkit::postgres`).
#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use aptix_orchestrator::PgSessionStore;
    use aptix_testkit::postgres::TestDatabase;

    #[tokio::test]
    async fn a_password_written_with_a_url_s_own_characters_is_said_to_need_escaping() {
        // Refused as it is read, before any connection: no server needed.
        let error = PgSessionStore::connect("postgres://sp:p@ss/w#rd?x@127.0.0.1:1/aptix", 1)
            .await
            .err()
            .unwrap();
        let text = aptix_model::error_chain(&error);
        assert!(text.contains("percent-encoded"), "{text}");
        assert!(!text.contains("w#rd"), "{text}");
        // An `@` alone parses, as a host the driver would look up and not find.
        let error = PgSessionStore::connect("postgres://aptixpw:p@ss@word@127.0.0.1:1/aptix", 1)
            .await
            .err()
            .unwrap();
        let text = aptix_model::error_chain(&error);
        assert!(text.contains("percent-encoded"), "{text}");
        assert!(
            !text.contains("ss@word") && !text.contains("lookup"),
            "{text}"
        );
        // A URL that is wrong otherwise is not sent looking at its password.
        let error = PgSessionStore::connect("postgres://aptix@127.0.0.1:1/aptix?bogus", 1)
            .await
            .err()
            .unwrap();
        let text = aptix_model::error_chain(&error);
        assert!(!text.contains("percent-encoded"), "{text}");
        // An `@` in the query is the query's: the URL is read, and the connection to
        // its (closed) port is what fails.
        let error = PgSessionStore::connect(
            "postgres://aptix@127.0.0.1:1/aptix?application_name=me@laptop",
            1,
        )
        .await
        .err()
        .unwrap();
        let text = aptix_model::error_chain(&error);
        assert!(!text.contains("percent-encoded"), "{text}");
    }

    /// A plain connection to `database`, to read and write its tables directly.
    async fn connect_raw(database: &TestDatabase) -> tokio_postgres::Client {
        let (raw, connection) = tokio_postgres::connect(database.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        raw
    }

    /// How many schema migrations the database records as applied.
    async fn migrations_applied(raw: &tokio_postgres::Client) -> i64 {
        raw.query_one("SELECT count(*) FROM aptix_schema_migrations", &[])
            .await
            .unwrap()
            .get(0)
    }

    async fn fresh() -> (TestDatabase, Arc<PgSessionStore>) {
        let database = TestDatabase::create();
        let store = PgSessionStore::connect(database.url(), 8).await.unwrap();
        (database, Arc::new(store))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_store_conforms() {
        let (_a, store) = fresh().await;
        check_store(store).await;
        let (_b, store) = fresh().await;
        check_racing_commits(store).await;
        let (_c, store) = fresh().await;
        check_listing_and_deleting(store).await;
        let (_f, store) = fresh().await;
        check_deleting_races_lease_takers(store).await;
        let (_g, store) = fresh().await;
        check_nul_in_texts(store).await;
        let (_d, store) = fresh().await;
        check_compacted_session(store).await;
        let (_e, store) = fresh().await;
        check_turn_listing(store).await;
        let (_h, store) = fresh().await;
        check_request_digests(store).await;
        let (_i, store) = fresh().await;
        check_no_stale_commit_after_a_delete(store).await;
        let (_j, store) = fresh().await;
        check_a_stalled_holder_is_fenced_off(store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_keeps_state_across_connections_and_refuses_a_newer_schema() {
        let database = TestDatabase::create();
        {
            let store = PgSessionStore::connect(database.url(), 2).await.unwrap();
            store
                .commit(
                    state("s", Some("resp_1")),
                    None,
                    turn("t1", Scenario::UserTurn, "kept"),
                    "test-holder",
                )
                .await
                .unwrap();
        }
        // A second connect (another replica starting) finds the schema in place and the
        // session as committed; migrations are not applied twice.
        let (first, second) = tokio::join!(
            PgSessionStore::connect(database.url(), 2),
            PgSessionStore::connect(database.url(), 2)
        );
        let (store, _) = (first.unwrap(), second.unwrap());
        let loaded = store.load("s").await.unwrap().unwrap();
        assert_eq!(
            (loaded.version, loaded.value.last_response_id.as_deref()),
            (1, Some("resp_1"))
        );

        let raw = connect_raw(&database).await;
        assert_eq!(migrations_applied(&raw).await, 4);

        // Stored text that is not a session is reported as corrupt, not panicked on.
        raw.execute(
            "UPDATE aptix_sessions SET state = '{\"not\": \"a session\"}' WHERE session_id = 's'",
            &[],
        )
        .await
        .unwrap();
        let error = store.load("s").await.unwrap_err();
        assert!(
            matches!(error, OrchestratorError::CorruptState { .. }),
            "{error:?}"
        );

        raw.execute(
            "INSERT INTO aptix_schema_migrations (version) VALUES (99)",
            &[],
        )
        .await
        .unwrap();
        let error = PgSessionStore::connect(database.url(), 2)
            .await
            .unwrap_err();
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert!(
            message.contains("schema version 99") && message.contains("understands up to 4"),
            "{message}"
        );
    }

    /// A database migrated by a build before replaced items were kept apart (schema 1,
    /// the items inside the state) is brought to schema 2 by the next replica that
    /// connects, shows the whole conversation, and its next commit moves the items out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_upgrades_a_version_1_database_and_moves_replaced_items_out() {
        let database = TestDatabase::create();
        let raw = connect_raw(&database).await;
        raw.batch_execute(
            "CREATE TABLE aptix_schema_migrations (version INTEGER PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
             INSERT INTO aptix_schema_migrations (version) VALUES (1);
             CREATE TABLE aptix_sessions (session_id TEXT PRIMARY KEY, version BIGINT NOT NULL,
                 state JSON NOT NULL, updated_us BIGINT NOT NULL);
             CREATE INDEX aptix_sessions_recent ON aptix_sessions (updated_us DESC, session_id DESC);
             CREATE TABLE aptix_turns (session_id TEXT NOT NULL, turn_id TEXT NOT NULL,
                 scenario TEXT NOT NULL CHECK (scenario IN ('user_turn', 'tool_continuation')),
                 envelope JSON NOT NULL, created_us BIGINT NOT NULL,
                 PRIMARY KEY (session_id, turn_id, scenario));
             CREATE TABLE aptix_leases (session_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                 expires_at TIMESTAMPTZ NOT NULL);",
        )
        .await
        .unwrap();
        let old = version_1_session();
        raw.execute(
            "INSERT INTO aptix_sessions VALUES ('s', 3, $1::TEXT::JSON, 1)",
            &[&serde_json::to_string(&old).unwrap()],
        )
        .await
        .unwrap();

        let store = PgSessionStore::connect(database.url(), 2).await.unwrap();
        assert_eq!(migrations_applied(&raw).await, 4);
        check_version_1_session(&store, old).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_made_again_after_a_delete_never_takes_a_stale_commit() {
        let (_database, store) = fresh().await;
        check_no_stale_commit_after_a_delete(store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_operation_the_database_does_not_answer_fails_instead_of_waiting_forever() {
        let (database, store) = fresh().await;
        // A transaction that holds the lease row and never ends (a stuck client, or a
        // database that stopped answering): the upsert waits on it.
        let mut raw = connect_raw(&database).await;
        let holder = raw.transaction().await.unwrap();
        holder
            .execute(
                "INSERT INTO aptix_leases VALUES ('stuck', 'other', now() + interval '1 hour')",
                &[],
            )
            .await
            .unwrap();
        let error = store
            .acquire_lease("stuck", "me", Duration::from_secs(60))
            .await
            .unwrap_err();
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert!(
            matches!(error, OrchestratorError::Store { .. })
                && text.contains("did not answer within 10 s"),
            "{text}"
        );
        holder.rollback().await.unwrap();
        // The store goes on once the database answers.
        assert!(
            store
                .acquire_lease("stuck", "me", Duration::from_secs(60))
                .await
                .unwrap()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_role_not_granted_the_tables_is_told_to_grant_them_not_to_migrate() {
        // The schema is up to date; what the role lacks is the right to read it. It was
        // told to start Aptix with the owner's role, which had been done already.
        let (database, owner_store) = fresh().await;
        drop(owner_store);
        let raw = connect_raw(&database).await;
        let role = format!("nogrant_{}", std::process::id());
        raw.batch_execute(&format!(
            "DROP ROLE IF EXISTS {role};
             CREATE ROLE {role} LOGIN;
             REVOKE CREATE ON SCHEMA public FROM PUBLIC;
             GRANT USAGE ON SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
        let error = PgSessionStore::connect(&database.url_as(&role), 1)
            .await
            .err()
            .unwrap();
        let text = aptix_model::error_chain(&error);
        assert!(
            text.contains("grant it USAGE on their schema and SELECT, INSERT, UPDATE, DELETE")
                && !text.contains("create or alter"),
            "{text}"
        );
        raw.batch_execute(&format!(
            "REVOKE USAGE ON SCHEMA public FROM {role};
             DROP ROLE {role};"
        ))
        .await
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_runtime_role_that_cannot_create_tables_uses_an_up_to_date_database() {
        // Operators migrate with an owner role and run replicas with one that may only
        // read and write rows; the store used to create its migrations table on every
        // start, and such a role could not start at all.
        let (database, owner_store) = fresh().await;
        drop(owner_store);
        let raw = connect_raw(&database).await;
        let role = format!("rt_{}", std::process::id());
        raw.batch_execute(&format!(
            "DROP ROLE IF EXISTS {role};
             CREATE ROLE {role} LOGIN;
             REVOKE CREATE ON SCHEMA public FROM PUBLIC;
             GRANT USAGE ON SCHEMA public TO {role};
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
        let url = database.url_as(&role);
        let store = PgSessionStore::connect(&url, 2)
            .await
            .unwrap_or_else(|error| panic!("{error}: {:?}", std::error::Error::source(&error)));
        store
            .commit(
                state("s", None),
                None,
                turn("t1", Scenario::UserTurn, "a"),
                "test-holder",
            )
            .await
            .unwrap();
        assert_eq!(store.load("s").await.unwrap().unwrap().version, 1);
        // Its connections are named, for whoever reads pg_stat_activity.
        let named: i64 = raw
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = 'aptix' AND datname = current_database()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(named >= 1);
        drop(store);
        // The password can come apart from the URL (the test server trusts, so any is
        // taken; what this checks is that the store connects and works with one given).
        let store = PgSessionStore::connect_with_password(&url, 2, "from-PGPASSWORD")
            .await
            .unwrap();
        assert_eq!(store.load("s").await.unwrap().unwrap().version, 1);
        assert!(!format!("{store:?}").contains("from-PGPASSWORD"));
        drop(store);
        raw.batch_execute(&format!(
            "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role};
             REVOKE USAGE ON SCHEMA public FROM {role};
             DROP ROLE {role};"
        ))
        .await
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_role_that_logs_in_with_a_password_connects_with_it_and_only_with_it() {
        // The test server asks members of `aptix_password_auth` for a password over TCP
        // (scram-sha-256, as a deployed server does; scripts/test-postgres.sh), where
        // every other role is trusted. The password has the characters a URL must escape.
        let (database, owner_store) = fresh().await;
        drop(owner_store);
        let raw = connect_raw(&database).await;
        let role = format!("pw_{}", std::process::id());
        let password = format!("p@ss:w/rd %{}", std::process::id());
        raw.batch_execute(&format!(
            "DROP ROLE IF EXISTS {role};
             CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE aptix_password_auth;
             GRANT USAGE ON SCHEMA public TO {role};
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
        let bare = database.url_as(&role);

        let chain = |error: &aptix_orchestrator::OrchestratorError| {
            let mut text = format!("{error} {error:?}");
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(&format!(" | {cause}"));
                source = cause.source();
            }
            text
        };
        // No password: refused, and the error says it was the password, and where one
        // goes.
        let error = PgSessionStore::connect(&bare, 1).await.unwrap_err();
        let text = chain(&error);
        assert!(text.contains("password"), "{text}");
        assert!(text.contains("PGPASSWORD"), "{text}");
        // A wrong one: refused, and never printed.
        let error = PgSessionStore::connect_with_password(&bare, 1, "wrong-secret-xyz")
            .await
            .unwrap_err();
        let text = chain(&error);
        assert!(text.contains("password"), "{text}");
        assert!(!text.contains("wrong-secret-xyz"), "{text}");

        // The right one, given apart (PGPASSWORD's way) ...
        let store = PgSessionStore::connect_with_password(&bare, 2, &password)
            .await
            .unwrap_or_else(|error| panic!("{}", chain(&error)));
        store
            .commit(
                state("s", None),
                None,
                turn("t1", Scenario::UserTurn, "a"),
                "test-holder",
            )
            .await
            .unwrap();
        assert!(!format!("{store:?}").contains(&password));
        drop(store);
        // ... or in the URL, percent-encoded; it wins over one given apart.
        let encoded: String = password
            .bytes()
            .map(|byte| match byte {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (byte as char).to_string(),
                other => format!("%{other:02X}"),
            })
            .collect();
        let with_password = database.url_as(&format!("{role}:{encoded}"));
        let store = PgSessionStore::connect_with_password(&with_password, 2, "wrong-secret-xyz")
            .await
            .unwrap_or_else(|error| panic!("{}", chain(&error)));
        assert_eq!(store.load("s").await.unwrap().unwrap().version, 1);
        assert!(!format!("{store:?}").contains(&encoded));
        drop(store);

        raw.batch_execute(&format!(
            "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role};
             REVOKE USAGE ON SCHEMA public FROM {role};
             DROP ROLE {role};"
        ))
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_password_never_shows_in_errors_or_debug() {
        // Nothing listens on port 1: connecting fails, and neither the error chain nor
        // Debug names the password.
        let url = "postgres://aptix:hunter2-secret@127.0.0.1:1/aptix?connect_timeout=2";
        let error = PgSessionStore::connect(url, 1).await.unwrap_err();
        let mut text = format!("{error} {error:?}");
        let mut source = std::error::Error::source(&error);
        let mut innermost: Option<&(dyn std::error::Error + 'static)> = None;
        while let Some(cause) = source {
            text.push_str(&format!(" {cause} {cause:?}"));
            innermost = Some(cause);
            source = cause.source();
        }
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("aptix:***@127.0.0.1:1"), "{text}");
        // The refusal stays an I/O error at the bottom of the chain: the service's
        // `/readyz`, open to anyone, names such a plain cause and no database's words.
        let io = innermost
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .unwrap_or_else(|| panic!("no I/O error at the bottom: {text}"));
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused, "{text}");

        for mode in ["require", "verify-ca", "VERIFY-FULL"] {
            let url = format!("postgres://a:hunter2@db/x?sslmode={mode}");
            let error = PgSessionStore::connect(&url, 1).await.unwrap_err();
            let text = format!("{error:?}");
            assert!(
                !text.contains("hunter2") && text.contains("TLS"),
                "{mode}: {text}"
            );
        }
    }
}
