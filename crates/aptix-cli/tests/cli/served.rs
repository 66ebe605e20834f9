//! `aptix serve` run as a process for a test: on a free loopback port, for a sandbox's
//! workspace, against a fault server as its model.

use std::process::{Child, Stdio};
use std::time::Duration;

use aptix_testkit::fault_server::FaultServer;

use crate::support::{SECRET_KEY, Sandbox};

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `aptix serve`; killed (SIGKILL) when dropped if still running.
pub(crate) struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `aptix serve` for `sandbox`'s workspace against `upstream`, on a free loopback port,
/// with the test key, `env` and `args`; returns it with its base URL once `/healthz`
/// answers.
pub(crate) async fn serve(
    sandbox: &Sandbox,
    upstream: &FaultServer,
    env: &[(&str, &str)],
    args: &[&std::ffi::OsStr],
) -> (Served, String) {
    let port = free_port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_aptix"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home.path())
        .env("OPENAI_API_KEY", SECRET_KEY)
        .envs(env.iter().copied())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--workspace", &sandbox.workspace_arg()])
        .args(["--base-url", &upstream.base_url()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let served = Served(child);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            return (served, base);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("aptix serve did not come up");
}

impl Served {
    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills the process (SIGKILL, as a crash would end it) and waits for it.
    pub(crate) fn kill(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }

    /// Sends SIGTERM and waits up to 10 s for the exit; returns the exit status (`None`
    /// if it did not exit) and everything it wrote on stderr.
    pub(crate) async fn stop(mut self) -> (Option<std::process::ExitStatus>, String) {
        let pid = self.0.id().to_string();
        assert!(
            std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let mut exited = None;
        for _ in 0..200 {
            if let Some(status) = self.0.try_wait().unwrap() {
                exited = Some(status);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut log = String::new();
        if exited.is_some() {
            std::io::Read::read_to_string(self.0.stderr.as_mut().unwrap(), &mut log).unwrap();
        }
        (exited, log)
    }
}
