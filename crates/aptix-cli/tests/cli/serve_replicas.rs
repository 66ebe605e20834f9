//! Two `aptix serve` processes on one PostgreSQL database (`--store postgres://…`), as
//! replicas behind a load balancer: each has its own workspace and its own upstream
//! model server, and they share only the database. A turn running on A makes B answer
//! busy; a turn retried on B after A stored it is answered from the database; A killed
//! with `kill -9` mid-turn leaves nothing recorded and B takes the session; 200
//! concurrent turns over 20 sessions spread across both are each recorded once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aptix_testkit::fault_server::{FaultServer, Reply, Step};
use aptix_testkit::postgres::TestDatabase;
use serde_json::{Value, json};

use crate::served::{Served, serve};
use crate::support::Sandbox;

fn answer(id: &str, text: &str) -> Value {
    json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    })
}

/// One `aptix serve` replica, on its own workspace and upstream, sharing `store`.
struct Replica {
    served: Served,
    base: String,
    _sandbox: Sandbox,
}

impl Replica {
    async fn start(store: &str, upstream: &FaultServer) -> Replica {
        let sandbox = Sandbox::new();
        let (served, base) = serve(
            &sandbox,
            upstream,
            // The URL through the environment, as a deployment passes it.
            &[("APTIX_STORE_URL", store)],
            &["--max-concurrent-turns", "256", "--lease-ttl", "30s"].map(std::ffi::OsStr::new),
        )
        .await;
        Replica {
            served,
            base,
            _sandbox: sandbox,
        }
    }

    async fn execute(&self, client: &reqwest::Client, session: &str, turn: &str) -> (u16, Value) {
        let response = client
            .post(format!("{}/v1/agent/execute", self.base))
            .header("content-type", "application/json")
            .body(json!({"sessionId": session, "turnId": turn, "instruction": "Go"}).to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

async fn database_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

async fn until_requested(upstream: &FaultServer, n: usize) {
    for _ in 0..400 {
        if upstream.requests().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the upstream never received request {n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_is_busy_on_both_replicas_and_a_retried_turn_is_answered_from_the_database()
{
    let database = TestDatabase::create();
    // A's model takes its time over the one turn it answers.
    let mut slow = Reply::json(200, &answer("resp_a1", "From A."));
    slow.steps.insert(0, Step::Sleep(Duration::from_secs(2)));
    let upstream_a = FaultServer::start(vec![slow]).await;
    let upstream_b =
        FaultServer::start(vec![Reply::json(200, &answer("resp_b1", "From B."))]).await;
    let a = Replica::start(database.url(), &upstream_a).await;
    let b = Replica::start(database.url(), &upstream_b).await;
    let client = reqwest::Client::new();

    let running = {
        let client = client.clone();
        let base = a.base.clone();
        tokio::spawn(async move {
            let response = client
                .post(format!("{base}/v1/agent/execute"))
                .header("content-type", "application/json")
                .body(json!({"sessionId": "s-1", "turnId": "t-1", "instruction": "Go"}).to_string())
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        })
    };
    until_requested(&upstream_a, 1).await;
    let (status, body) = b.execute(&client, "s-1", "t-2").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "session_busy", "{body}");
    // When it frees, but not which process on which host holds it: that is the
    // operator's, in the log.
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("lease expires in"), "{body}");
    assert!(!message.contains("pid "), "{body}");

    let (status, first) = running.await.unwrap();
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["text"], "From A.");
    // The client retries t-1 (its answer was lost on the way, say) and the balancer sends
    // it to B: answered from the database, B's model not called.
    let (status, retried) = b.execute(&client, "s-1", "t-1").await;
    assert_eq!(status, 200, "{retried}");
    assert_eq!(retried, first);
    assert_eq!(upstream_b.requests().len(), 0);
    assert_eq!(upstream_a.requests().len(), 1);
    // And B continues A's session from where A left it.
    let (status, next) = b.execute(&client, "s-1", "t-2").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(
        upstream_b.requests()[0].json().unwrap()["previous_response_id"],
        "resp_a1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_turn_records_nothing_and_the_other_takes_the_session() {
    let database = TestDatabase::create();
    let upstream_a = FaultServer::start(vec![Reply::stall_before_head()]).await;
    let upstream_b =
        FaultServer::start(vec![Reply::json(200, &answer("resp_b1", "From B."))]).await;
    let mut a = Replica::start(database.url(), &upstream_a).await;
    let b = Replica::start(database.url(), &upstream_b).await;
    let client = reqwest::Client::new();

    let stranded = {
        let client = client.clone();
        let base = a.base.clone();
        tokio::spawn(async move {
            client
                .post(format!("{base}/v1/agent/execute"))
                .header("content-type", "application/json")
                .body(json!({"sessionId": "s-k", "turnId": "t-1", "instruction": "Go"}).to_string())
                .send()
                .await
        })
    };
    until_requested(&upstream_a, 1).await;
    let (status, body) = b.execute(&client, "s-k", "t-1").await;
    assert_eq!(status, 409, "busy while A runs the turn: {body}");

    a.served.kill();
    assert!(
        stranded.await.unwrap().is_err(),
        "A's client lost its connection"
    );

    // B takes the session: at once when it can see that A's process is gone (the same
    // host), else when A's lease expires (--lease-ttl). The turn A never finished is
    // run again, not answered from the database.
    let mut answered = None;
    for _ in 0..200 {
        let (status, body) = b.execute(&client, "s-k", "t-1").await;
        if status == 200 {
            answered = Some(body);
            break;
        }
        assert_eq!(status, 409, "{body}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let answered = answered.expect("B took the session within the lease TTL");
    assert_eq!(answered["text"], "From B.");
    assert_eq!(upstream_b.requests().len(), 1);

    let db = database_client(database.url()).await;
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM aptix_turns WHERE session_id = 's-k'"
        )
        .await,
        1,
        "only B's turn is recorded"
    );
    assert_eq!(
        count(
            &db,
            "SELECT version FROM aptix_sessions WHERE session_id = 's-k'"
        )
        .await,
        1
    );
    assert_eq!(count(&db, "SELECT count(*) FROM aptix_leases").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_turns_over_twenty_sessions_are_each_recorded_once() {
    let database = TestDatabase::create();
    let replies = |replica: &str| {
        (0..200)
            .map(|n| Reply::json(200, &answer(&format!("resp_{replica}{n}"), "Done.")))
            .collect::<Vec<_>>()
    };
    let upstream_a = FaultServer::start(replies("a")).await;
    let upstream_b = FaultServer::start(replies("b")).await;
    let a = Replica::start(database.url(), &upstream_a).await;
    let b = Replica::start(database.url(), &upstream_b).await;
    let replicas = Arc::new([a, b]);
    let client = reqwest::Client::new();
    let busy = Arc::new(AtomicUsize::new(0));

    let mut tasks = Vec::new();
    for n in 0..200usize {
        let replicas = replicas.clone();
        let client = client.clone();
        let busy = busy.clone();
        tasks.push(tokio::spawn(async move {
            let (session, turn) = (format!("s-{}", n % 20), format!("t-{n}"));
            // A client behind a load balancer: a busy answer is retried, on whichever
            // replica the balancer picks next.
            for attempt in 0..2000usize {
                let replica = &replicas[(n + attempt) % 2];
                let (status, body) = replica.execute(&client, &session, &turn).await;
                match status {
                    200 => return body,
                    409 if body["error"]["code"] == "session_busy" => {
                        busy.fetch_add(1, Ordering::SeqCst);
                        let pause = 5 + (n * 7 + attempt * 13) % 20;
                        tokio::time::sleep(Duration::from_millis(pause as u64)).await;
                    }
                    other => panic!("turn {n}: {other} {body}"),
                }
            }
            panic!("turn {n} was busy 2000 times");
        }));
    }
    let envelopes = tokio::time::timeout(Duration::from_secs(240), async {
        let mut envelopes = Vec::new();
        for task in tasks {
            envelopes.push(task.await.unwrap());
        }
        envelopes
    })
    .await
    .expect("no deadlock: every turn finished");
    assert!(envelopes.iter().all(|envelope| envelope["text"] == "Done."));

    let (on_a, on_b) = (upstream_a.requests().len(), upstream_b.requests().len());
    assert_eq!(on_a + on_b, 200, "each turn reached a model exactly once");
    assert!(
        on_a > 20 && on_b > 20,
        "both replicas served: {on_a} / {on_b}"
    );
    let db = database_client(database.url()).await;
    assert_eq!(count(&db, "SELECT count(*) FROM aptix_turns").await, 200);
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT (session_id, turn_id)) FROM aptix_turns"
        )
        .await,
        200
    );
    assert_eq!(count(&db, "SELECT count(*) FROM aptix_sessions").await, 20);
    assert_eq!(
        count(&db, "SELECT sum(version)::BIGINT FROM aptix_sessions").await,
        200,
        "every turn committed one version"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM aptix_leases").await,
        0,
        "no session left busy"
    );
    eprintln!(
        "200 turns: {on_a} on A, {on_b} on B, {} busy answers retried",
        busy.load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_logs_in_with_the_password_from_pgpassword() {
    // The test server asks members of `aptix_password_auth` for a password
    // (scram-sha-256, scripts/test-postgres.sh): the URL names the role only, and the
    // password comes from libpq's variable, as an operator keeps it out of `ps`.
    let database = TestDatabase::create();
    let owner = database_client(database.url()).await;
    let role = format!("replica_pw_{}", std::process::id());
    let password = "s3cret with spaces & @:/";
    let name = database.url().rsplit('/').next().unwrap().to_owned();
    owner
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {role};
             CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE aptix_password_auth;
             ALTER DATABASE {name} OWNER TO {role};"
        ))
        .await
        .unwrap();
    let url = database.url_as(&role);

    let upstream =
        FaultServer::start(vec![Reply::json(200, &answer("resp_1", "Logged in."))]).await;
    let sandbox = Sandbox::new();
    let (served, base) = serve(
        &sandbox,
        &upstream,
        &[("APTIX_STORE_URL", &url), ("PGPASSWORD", password)],
        &[],
    )
    .await;
    let client = reqwest::Client::new();
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());
    let response = client
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .body(json!({"sessionId": "s-pw", "turnId": "t-1", "instruction": "Go"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["text"], "Logged in.", "{body}");
    assert_eq!(
        count(&owner, "SELECT count(*) FROM aptix_turns").await,
        1,
        "the turn is stored under the password-authenticated role"
    );
    drop(served);

    // A wrong password: the replica does not start, says why, and never prints it.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_aptix"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home.path())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("APTIX_STORE_URL", &url)
        .env("PGPASSWORD", "wrong-password-xyz")
        .args(["sessions", "--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("password"), "{stderr}");
    assert!(!stderr.contains("wrong-password-xyz"), "{stderr}");
}
