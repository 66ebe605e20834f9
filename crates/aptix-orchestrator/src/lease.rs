//! Who holds a session lease, and whether that holder still exists.
//!
//! A holder id names its host and process: `aptix:<host>@<space>:<pid>:<start>:<n>-<nanos>`,
//! where `<start>` is the process's start time in clock ticks since boot (Linux
//! `/proc/<pid>/stat`, field 22; `-` elsewhere) so that a reused pid is not mistaken for
//! the holder, and `<space>` names the process space the pid is a number of: the boot
//! (`/proc/sys/kernel/random/boot_id`) and the PID namespace (`/proc/self/ns/pid`). Two
//! machines can share a host name, and two containers a host name and a boot, each
//! with its own pid 2: only a holder of this very process space is looked up. A lease
//! whose holder ran in it and whose process is gone (killed with `kill -9`, crashed) is
//! taken over at once instead of waiting for its TTL. Any other holder (another host,
//! another container, a platform that cannot tell, an id of an older Aptix without a
//! space) is waited for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest a lease lasts: a longer TTL (`Duration::MAX` for "never", a lease for
/// one process) is this long, which every store's clock can hold.
pub(crate) const LONGEST_LEASE: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// A session's lease as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The holder id.
    pub holder: String,
    /// How long until the lease expires (zero when it has).
    pub expires_in: Duration,
}

/// The error for a session whose lease `current` keeps a caller out, saying who holds
/// it and for how long when that is known.
pub(crate) fn busy(session_id: &str, current: Option<LeaseInfo>) -> crate::OrchestratorError {
    crate::OrchestratorError::SessionBusy {
        session_id: session_id.to_owned(),
        holder: current.as_ref().map(|lease| {
            Holder::parse(&lease.holder)
                .map_or_else(|| lease.holder.clone(), |holder| holder.describe())
        }),
        expires_in: current.map(|lease| lease.expires_in),
    }
}

/// Deletes a session and its turns, as `DELETE /v1/sessions/{id}` and `aptix sessions
/// delete` do: `Ok(false)` when there is no such session.
///
/// A session with a turn running is not deleted ([`OrchestratorError::SessionBusy`],
/// naming the lease's holder and when it expires). A lease left by a process of this
/// host that is gone (a killed `aptix ask`) does not count: it is taken over and
/// dropped first, as a turn takes such a lease over instead of waiting for its TTL.
///
/// [`OrchestratorError::SessionBusy`]: crate::OrchestratorError::SessionBusy
pub async fn delete_session(
    store: &dyn crate::SessionStore,
    session_id: &str,
) -> Result<bool, crate::OrchestratorError> {
    match store.delete_session(session_id).await {
        Err(crate::OrchestratorError::SessionBusy { .. }) => {}
        done => return done,
    }
    let current = store.lease(session_id).await?;
    if let Some(lease) = &current
        && holder_is_gone(&lease.holder)
    {
        let me = new_holder_id();
        // Held for as long as a delete takes; if this process dies in between, this
        // very rule clears it again.
        if store
            .take_over_lease(session_id, &lease.holder, &me, Duration::from_secs(60))
            .await?
        {
            tracing::info!(
                session = %session_id,
                holder = %lease.holder,
                "deleting a session whose lease a process that is gone left"
            );
            store.release_lease(session_id, &me).await?;
            return match store.delete_session(session_id).await {
                // Another process took the session in between: busy, with its lease.
                Err(crate::OrchestratorError::SessionBusy { .. }) => {
                    Err(busy(session_id, store.lease(session_id).await?))
                }
                done => done,
            };
        }
        // Another process took it over first.
        return Err(busy(session_id, store.lease(session_id).await?));
    }
    Err(busy(session_id, current))
}

/// A holder id, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) host: String,
    /// The process space of its pid; `None` in an id of an older Aptix.
    pub(crate) space: Option<String>,
    pub(crate) pid: u32,
    pub(crate) start: Option<u64>,
}

impl Holder {
    /// Parses `aptix:<host>[@<space>]:<pid>:<start>:<rest>`; `None` for any other id (a
    /// holder of another library).
    pub(crate) fn parse(id: &str) -> Option<Holder> {
        let mut parts = id.split(':');
        if parts.next()? != "aptix" {
            return None;
        }
        let named = parts.next()?;
        let (host, space) = match named.split_once('@') {
            Some((host, space)) => (host.to_owned(), Some(space.to_owned())),
            None => (named.to_owned(), None),
        };
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok();
        parts.next()?;
        Some(Holder {
            host,
            space,
            pid,
            start,
        })
    }

    /// "pid 1234 on build-box", for messages.
    pub(crate) fn describe(&self) -> String {
        format!("pid {} on {}", self.pid, self.host)
    }
}

/// This host's name, as the kernel reports it; `None` when unknown.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())?;
    let name = name.trim().replace(':', "_");
    (!name.is_empty()).then_some(name)
}

/// The process space this process's pids are numbers of: the boot's id and the PID
/// namespace's inode, e.g. `3f2a9c1b4d5e6f70-4026531836`; `None` where either is
/// unknown (no `/proc`).
fn process_space() -> Option<String> {
    let boot: String = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()?
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    // `pid:[4026531836]`
    let inode: String = namespace
        .to_str()?
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    (!boot.is_empty() && !inode.is_empty()).then(|| format!("{boot}-{inode}"))
}

/// The start time of process `pid` in clock ticks since boot (Linux), `None` when the
/// process does not exist, has ended (a zombie its parent has not reaped yet holds its
/// pid, and a lease, until then), or the platform has no `/proc`.
fn start_time(pid: u32) -> Option<u64> {
    let (state, start) = stat_of(pid)?;
    (!matches!(state, 'Z' | 'X')).then_some(start)
}

/// The state letter and start time of process `pid`, from `/proc/PID/stat`.
fn stat_of(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count fields
    // after its closing parenthesis. The state (field 3) is the first after it, the
    // start time (field 22) the 20th.
    let mut after = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = after.next()?.chars().next()?;
    Some((state, after.nth(18)?.parse().ok()?))
}

/// A holder id for this process, unique per call.
pub(crate) fn new_holder_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let pid = std::process::id();
    let start = start_time(pid).map_or_else(|| "-".to_owned(), |ticks| ticks.to_string());
    let host = host_name().unwrap_or_else(|| "unknown-host".to_owned());
    let named = match process_space() {
        Some(space) => format!("{host}@{space}"),
        None => host,
    };
    format!(
        "aptix:{named}:{pid}:{start}:{}-{nanos:x}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether the holder is a process of this host that no longer exists (or whose pid
/// now belongs to a newer process). `false` whenever that cannot be known.
pub(crate) fn holder_is_gone(id: &str) -> bool {
    let Some(holder) = Holder::parse(id) else {
        return false;
    };
    if host_name().as_deref() != Some(holder.host.as_str()) || holder.host == "unknown-host" {
        return false;
    }
    // Its pid is a number of this process space, or it cannot be looked up here.
    if holder.space.is_none() || holder.space != process_space() {
        return false;
    }
    if !std::path::Path::new("/proc/self/stat").exists() {
        return false; // No /proc: cannot tell.
    }
    match (start_time(holder.pid), holder.start) {
        (None, _) => true,
        (Some(now), Some(then)) => now != then,
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_holds_its_own_ids_and_a_dead_pid_is_gone() {
        let id = new_holder_id();
        let holder = Holder::parse(&id).unwrap();
        assert_eq!(holder.pid, std::process::id());
        assert!(!holder_is_gone(&id), "{id}");
        if let (Some(_), Some(space)) = (start_time(holder.pid), process_space()) {
            assert_eq!(holder.space.as_deref(), Some(space.as_str()));
            let here = format!("{}@{space}", holder.host);
            // A pid above the kernel's maximum (4194304) never exists.
            let dead = format!("aptix:{here}:4999999:1:0-0");
            assert!(holder_is_gone(&dead));
            // Our pid with another start time: the pid was reused.
            let reused = format!("aptix:{here}:{}:1:0-0", holder.pid);
            assert!(holder_is_gone(&reused));
            // The same host name in another PID namespace (a container on the host's
            // network) or another machine: its pid 4999999 is not ours to look up.
            let other_space = format!("aptix:{}@0-1:4999999:1:0-0", holder.host);
            assert!(!holder_is_gone(&other_space));
            // An id of an older Aptix, without its space: waited for.
            let older = format!("aptix:{}:4999999:1:0-0", holder.host);
            assert!(!holder_is_gone(&older));
        }
        assert!(!holder_is_gone("aptix:elsewhere:4999999:1:0-0"));
        assert!(!holder_is_gone("someone-else"));
        assert_eq!(
            Holder::parse("aptix:box:12:-:0-0").map(|h| h.describe()),
            Some("pid 12 on box".to_owned())
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_holder_that_ended_but_is_not_reaped_yet_is_gone() {
        let space = process_space().expect("Linux has /proc");
        let holder = Holder::parse(&new_holder_id()).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for: once it exits it is a zombie, its pid still taken.
        let mut zombie = None;
        for _ in 0..500 {
            if let Some(('Z', start)) = stat_of(pid) {
                zombie = Some(start);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let start = zombie.expect("the child never became a zombie");
        let id = format!("aptix:{}@{space}:{pid}:{start}:0-0", holder.host);
        assert!(holder_is_gone(&id), "{id}");
        child.wait().unwrap();
    }
}
