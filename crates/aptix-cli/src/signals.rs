//! SIGINT and SIGTERM, the one way every command waits for them: `ask` drops its turn,
//! `serve` shuts down gracefully, `acp` stops its sessions' MCP servers.

/// A signal that ends a command early.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Interrupted {
    /// Ctrl-C.
    Int,
    /// `kill`, a service manager or an editor stopping us.
    Term,
}

impl Interrupted {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Interrupted::Int => "SIGINT",
            Interrupted::Term => "SIGTERM",
        }
    }

    /// 128 + the signal number, as shells report a process killed by it.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Interrupted::Int => 130,
            Interrupted::Term => 143,
        }
    }
}

/// The next SIGINT (Ctrl-C) or SIGTERM (on Unix).
pub(crate) async fn next_signal() -> Interrupted {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let interrupt = async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => {}
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = interrupt => Interrupted::Int,
        () = terminate => Interrupted::Term,
    }
}

/// Runs `work` until it finishes or SIGINT/SIGTERM arrives (then `work` is dropped).
pub(crate) async fn until_signal<T>(
    work: impl std::future::Future<Output = T>,
) -> Result<T, Interrupted> {
    tokio::select! {
        result = work => Ok(result),
        signal = next_signal() => Err(signal),
    }
}
