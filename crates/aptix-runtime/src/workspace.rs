//! A workspace and its settings, wired: the provider, the session store, the index and
//! the orchestrator every front end runs its turns on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aptix_client::{Capabilities, ResponsesProvider};
use aptix_model::wire::CreateResponseRequest;
use aptix_orchestrator::{
    ClientTool, InMemorySessionStore, Orchestrator, ServerTool, SessionStore,
};
use aptix_tools::FileReader;

use crate::index::{Reporter, open_index, shared_index, turn_parts};
use crate::provider::{self, WireRequest};
use crate::settings::{ApiKind, Env, ServeLayer, Settings, SettingsLayer, WORKSPACE_FILE};
use crate::store::{self, ConfiguredStore, StoreLocation};
use crate::{APTIX_DIR, Error};

/// A workspace folder (where `aptix.toml`, the index and the sessions live) with the
/// settings in force for it: the one place where settings become a provider, a session
/// store, a retriever, tools and an [`Orchestrator`].
///
/// The session store and the index are opened once, by the first orchestrator made, and
/// shared by every orchestrator made after from the same `Workspace` or its clones: a
/// front end that serves many sessions of one workspace (an editor's threads in `aptix
/// acp`) holds one store and one index, however many sessions it opens.
#[derive(Clone)]
pub struct Workspace {
    root: PathBuf,
    settings: Settings,
    /// `PGPASSWORD` when [`load`](Self::load) found one: the PostgreSQL store's password
    /// for a URL that names none (libpq's variable, so the password stays off command
    /// lines and out of config files).
    store_password: Option<Arc<secrecy::SecretString>>,
    /// Files of the workspace that hold secrets under names the index's rules cannot
    /// know (see [`with_secret_file`](Self::with_secret_file)), canonical.
    secret_files: Vec<PathBuf>,
    /// Why a request may not go to the configured base URL with the key the environment
    /// holds (see `provider::untrusted_base_url`), when [`load`](Self::load) found so: a
    /// dry run refuses what the call would.
    base_url_refusal: Option<String>,
    opened: Arc<Opened>,
}

/// What the orchestrators of one workspace share once opened.
#[derive(Default)]
struct Opened {
    store: tokio::sync::OnceCell<Arc<dyn SessionStore>>,
    index: std::sync::Mutex<Option<aptix_index::WorkspaceIndex>>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// The workspace at `root` with these settings.
    pub fn new(root: impl Into<PathBuf>, settings: Settings) -> Workspace {
        Workspace {
            root: root.into(),
            settings,
            store_password: None,
            secret_files: Vec::new(),
            base_url_refusal: None,
            opened: Arc::default(),
        }
    }

    /// Keeps `file` out of the workspace's index and out of the tools' reach (never
    /// indexed, searched, listed or read), as the files whose names say they hold
    /// secrets are: `aptix serve` names its bearer tokens file here, which its
    /// operator may keep in the workspace. A file outside the workspace, or missing,
    /// changes nothing. Takes effect for the index when the first orchestrator opens it.
    pub fn with_secret_file(mut self, file: &Path) -> Workspace {
        let inside = file.canonicalize().ok().filter(|file| {
            self.root
                .canonicalize()
                .is_ok_and(|root| file.starts_with(root))
        });
        if let Some(file) = inside
            && !self.secret_files.contains(&file)
        {
            self.secret_files.push(file);
        }
        self
    }

    /// The workspace at `root` with its settings loaded: `flags` over `env` over
    /// `root/aptix.toml` over the user's file (see [`Settings::load`]).
    pub fn load(root: &Path, flags: &SettingsLayer, env: Env<'_>) -> Result<Workspace, Error> {
        let mut workspace = Workspace::new(root, Settings::load(root, flags, env)?);
        let key_set = env("OPENAI_API_KEY").is_some_and(|key| !key.trim().is_empty());
        workspace.base_url_refusal = key_set
            .then(|| provider::untrusted_base_url(&workspace.settings, env))
            .flatten();
        workspace.store_password = env("PGPASSWORD")
            .filter(|password| !password.is_empty())
            .map(|password| Arc::new(secrecy::SecretString::from(password)));
        // `aptix serve`'s tokens file, when a config file or `APTIX_TOKENS_FILE` names
        // it, is kept from every front end's index and tools, not only the service's:
        // `aptix ask` in the same workspace would otherwise send the team's tokens to
        // the provider as context. (The serve settings' own errors are `aptix serve`'s
        // to report.)
        if let Ok(ServeLayer {
            tokens_file: Some(file),
            ..
        }) = ServeLayer::load(root, &ServeLayer::default(), env)
        {
            workspace = workspace.with_secret_file(&file);
        }
        Ok(workspace)
    }

    /// The store's password from `PGPASSWORD`, when there was one.
    fn store_password(&self) -> Option<&str> {
        self.store_password
            .as_deref()
            .map(secrecy::ExposeSecret::expose_secret)
    }

    /// The workspace folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The HTTP provider the settings describe (`/v1/responses`, or the Chat
    /// Completions bridge), with the key, organization and project read from `env`
    /// only. No key for a host that needs one is [`Error::MissingApiKey`].
    pub fn provider(&self, env: Env<'_>) -> Result<Arc<dyn ResponsesProvider>, Error> {
        provider::provider(&self.settings, env)
    }

    /// What the configured provider reports about itself (without making it).
    pub fn capabilities(&self) -> Capabilities {
        provider::capabilities(&self.settings)
    }

    /// The workspace's index as turns retrieve from it: opened (created when missing,
    /// under `.aptix/`) by the first call and shared by every later one and by the
    /// workspace's orchestrators, and refreshed first when stale each time (a first
    /// build is noted, and a refresh that fails is a warning, the index used as it is).
    /// The secret files ([`with_secret_file`](Self::with_secret_file), and `aptix
    /// serve`'s tokens file named in the settings) are never in it.
    pub fn index(&self, reporter: &dyn Reporter) -> Result<aptix_index::WorkspaceIndex, Error> {
        shared_index(&self.root, &self.secret_files, &self.opened.index, reporter)
    }

    /// The workspace's index opened as it is, not refreshed (`aptix index` refreshes it
    /// with [`refresh_index`](crate::refresh_index), whether stale or not), with the
    /// secret files kept out of it as [`index`](Self::index) does.
    pub fn open_index(&self) -> Result<aptix_index::WorkspaceIndex, Error> {
        open_index(&self.root, &self.secret_files)
    }

    /// Where the sessions are kept (`store`; the workspace's `.aptix/sessions.db` by
    /// default). A URL of an unknown scheme is a settings error.
    pub fn store_location(&self) -> Result<StoreLocation, Error> {
        StoreLocation::of(&self.root, &self.settings)
    }

    /// The configured session store (creating `.aptix/` for the default one), with the
    /// configured mode and model settings applied to every session it loads: what is
    /// configured now applies to a continued session, and what is not keeps the
    /// session's stored value. Opened by the first call, and shared by every later one
    /// and by the workspace's orchestrators.
    pub async fn open_store(&self) -> Result<Arc<dyn SessionStore>, Error> {
        // As for the provider's key and base_url: a folder's own file cannot send the
        // user's database password to a server of its choosing.
        if let Some(store) = self.settings.workspace_store()
            && self.store_password().is_some()
        {
            return Err(Error::config(format!(
                "the workspace's aptix.toml sets store to {}, a database on another machine, \
                 and PGPASSWORD would be sent to it: a folder's own file may only name a \
                 database on this machine while PGPASSWORD is set. If you trust that \
                 server, set it with --store, APTIX_STORE_URL or in your user config",
                aptix_model::redact_url(store)
            )));
        }
        let store = self
            .opened
            .store
            .get_or_try_init(|| async {
                let inner = store::open(&self.root, &self.settings, self.store_password()).await?;
                Ok::<_, Error>(Arc::new(ConfiguredStore::new(inner, self.settings.clone()))
                    as Arc<dyn SessionStore>)
            })
            .await?;
        Ok(Arc::clone(store))
    }

    /// The configured session store for looking into it (a dry run, a listing):
    /// [`open_store`](Self::open_store)'s when it exists, else an empty one in memory,
    /// so that looking makes no file (a SQLite store not made yet holds no session).
    pub async fn existing_store(&self) -> Result<Arc<dyn SessionStore>, Error> {
        match self.store_location()? {
            StoreLocation::Sqlite(path) if !path.is_file() => Ok(Arc::new(ConfiguredStore::new(
                Arc::new(InMemorySessionStore::new()),
                self.settings.clone(),
            ))),
            _ => self.open_store().await,
        }
    }

    /// The orchestrator a front end runs turns on: `provider` (the one
    /// [`provider`](Self::provider) makes, or a wrapper of it), the configured session
    /// store, the workspace index as the retriever (refreshed first when stale) and the
    /// built-in read-only tools the settings offer, `read_file` reading through `reader`
    /// when one is given (an editor's buffers). The store and the index are the ones
    /// every orchestrator of this workspace shares (see [`Workspace`]).
    ///
    /// Blocking while the index refreshes: call it where blocking is allowed (a
    /// `block_on`, a blocking thread), not from a task on an async runtime's workers.
    pub async fn orchestrator(
        &self,
        provider: Arc<dyn ResponsesProvider>,
        reader: Option<Arc<dyn FileReader>>,
        reporter: &dyn Reporter,
    ) -> Result<Orchestrator, Error> {
        let tools = FrontEndTools {
            reader,
            ..FrontEndTools::default()
        };
        self.orchestrator_with(provider, reporter, tools).await
    }

    /// [`orchestrator`](Self::orchestrator), with what the front end adds to the tools
    /// the settings offer: where `read_file` reads, the tools a service's clients run,
    /// and more tools the orchestrator runs itself (see [`FrontEndTools`]).
    pub async fn orchestrator_with(
        &self,
        provider: Arc<dyn ResponsesProvider>,
        reporter: &dyn Reporter,
        tools: FrontEndTools,
    ) -> Result<Orchestrator, Error> {
        self.check_turn_settings()?;
        let store = self.open_store().await?;
        let orchestrator = self.build(provider, store, reporter, tools)?;
        // The o200k tables (the context budget's token counts, needed by every user
        // turn) take ~0.3 s to build in a release build: built here, off the async
        // threads, rather than inside the first turn of `serve` or `acp`, where they
        // would stall a worker thread and every request waiting on it. A failure is
        // the first turn's to report.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(aptix_rag::TokenCounter::o200k).await),
            // Driven by another executor: built here, as the first turn would.
            Err(_) => drop(aptix_rag::TokenCounter::o200k()),
        }
        Ok(orchestrator)
    }

    /// The orchestrator of a dry run: a stand-in for the configured provider that
    /// reports the same capabilities and is never called, and the configured store when
    /// it exists (so that a continued session shows its continuation), else an empty
    /// one in memory, so that nothing is written. The index is refreshed as for a real
    /// turn (it is a cache of the workspace), so the body is the one that would be sent.
    pub async fn dry_run_orchestrator(
        &self,
        reporter: &dyn Reporter,
    ) -> Result<Orchestrator, Error> {
        self.check_turn_settings()?;
        let store = self.existing_store().await?;
        self.build(
            provider::stand_in(&self.settings),
            store,
            reporter,
            FrontEndTools::default(),
        )
    }

    /// `body` (a request the orchestrator built) exactly as the configured provider
    /// would send it, `stream`ed or not: the endpoint, `stream` and background mode as
    /// the call sets them, translated for the Chat Completions bridge. What the call
    /// would refuse is refused here too (a base URL naming the endpoint; one only the
    /// workspace's file chose, on another machine, while the environment holds a key).
    pub fn wire_request(
        &self,
        body: CreateResponseRequest,
        stream: bool,
    ) -> Result<WireRequest, Error> {
        if let Some(refusal) = &self.base_url_refusal {
            return Err(Error::config(refusal.clone()));
        }
        provider::wire_request(&self.settings, body, stream)
    }

    /// Settings that turns cannot run with, whatever the front end.
    fn check_turn_settings(&self) -> Result<(), Error> {
        if self.settings.configured().background == Some(true)
            && self.settings.api() == ApiKind::Chat
        {
            return Err(Error::config(
                "background mode needs the responses api (a server that stores responses); it cannot be used with --api chat",
            ));
        }
        Ok(())
    }

    fn build(
        &self,
        provider: Arc<dyn ResponsesProvider>,
        store: Arc<dyn SessionStore>,
        reporter: &dyn Reporter,
        tools: FrontEndTools,
    ) -> Result<Orchestrator, Error> {
        let mut builder =
            Orchestrator::builder(provider, store).config(self.settings.orchestrator_config());
        let parts = turn_parts(
            &self.root,
            &self.secret_files,
            &self.settings,
            &self.opened.index,
            tools.reader,
            reporter,
        );
        if let Some(retriever) = parts.retriever {
            builder = builder.retriever(retriever);
        }
        if let Some(references) = parts.references {
            builder = builder.reference_reader(references);
        }
        for tool in parts.tools.into_iter().chain(tools.server_tools) {
            builder = builder.server_tool(tool);
        }
        for tool in tools.client_tools {
            builder = builder.client_tool(tool);
        }
        builder
            .build()
            .map_err(|error| Error::config(error.to_string()))
    }
}

/// What a front end adds to the tools a workspace's settings offer, for
/// [`Workspace::orchestrator_with`].
#[derive(Default)]
pub struct FrontEndTools {
    /// Where the built-in `read_file` reads: an editor's buffers, say. `None`: the disk.
    pub reader: Option<Arc<dyn FileReader>>,
    /// Tools a service's clients run, whose calls end a turn pending the client's
    /// results (see [`read_client_tools`](crate::read_client_tools)).
    pub client_tools: Vec<ClientTool>,
    /// More tools the orchestrator runs itself, beside the built-in ones (an editor's
    /// MCP servers' tools, say).
    pub server_tools: Vec<Arc<dyn ServerTool>>,
}

impl std::fmt::Debug for FrontEndTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontEndTools")
            .field("reader", &self.reader.is_some())
            .field(
                "client_tools",
                &self
                    .client_tools
                    .iter()
                    .map(|tool| tool.definition.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field(
                "server_tools",
                &self
                    .server_tools
                    .iter()
                    .map(|tool| tool.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The entries that mark a project's root, checked in each folder going up.
const MARKERS: &[&str] = &[WORKSPACE_FILE, ".git"];

/// The workspace a front end works in: `explicit` when given (it must be a folder; a
/// leading `~/` is the home folder, as an editor's arguments are not expanded by a
/// shell), else the one [`find_workspace`] finds from `current`, made absolute. Found,
/// it is never the home folder or `/` unless an `aptix.toml` there says so
/// ([`workspace_too_wide`]): the first turn would index every file under it and send
/// what it found as context. A home folder that is a git repository (dotfiles) does not
/// make every folder under it one workspace: an index nearer `current` does.
///
/// `env` reads `HOME`. Errors are configuration errors ([`Error::is_config`]).
///
/// ```no_run
/// let current = std::env::current_dir()?;
/// let root = aptix_runtime::resolve_workspace(None, &current, &aptix_runtime::process_env)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve_workspace(
    explicit: Option<&Path>,
    current: &Path,
    env: Env<'_>,
) -> Result<PathBuf, Error> {
    if let Some(dir) = explicit {
        let expanded;
        let dir = match (dir.strip_prefix("~"), home(env)) {
            (Ok(rest), Some(home)) => {
                expanded = home.join(rest);
                expanded.as_path()
            }
            _ => dir,
        };
        if !dir.is_dir() {
            return Err(Error::config(format!(
                "workspace {} is not a folder",
                dir.display()
            )));
        }
        return std::path::absolute(dir).map_err(|source| Error::Io {
            action: "resolve the workspace",
            path: dir.to_path_buf(),
            source,
        });
    }
    let current = std::path::absolute(current).map_err(|source| Error::Io {
        action: "resolve the current folder",
        path: current.to_path_buf(),
        source,
    })?;
    let found = find_workspace(&current);
    let Some(why) = workspace_too_wide(&found, env) else {
        return Ok(found);
    };
    if let Some(indexed) = current
        .ancestors()
        .take_while(|dir| *dir != found)
        .find(|dir| dir.join(APTIX_DIR).is_dir())
    {
        return Ok(indexed.to_path_buf());
    }
    Err(Error::config(format!(
        "{why}: run aptix in a project folder, pass --workspace DIR, or create \
         aptix.toml there to mean it"
    )))
}

/// Why `dir` is too wide to be a workspace nobody named (an editor's folder, or one
/// found by default): the home folder (`HOME` as `env` reads it) or `/`, with no
/// `aptix.toml` in it; `None` for any other folder. Only an `aptix.toml` says such a
/// folder is meant: a `.git` of dotfiles, or an index an older aptix left there, does
/// not.
pub fn workspace_too_wide(dir: &Path, env: Env<'_>) -> Option<String> {
    let wide = dir.parent().is_none() || home(env).as_deref() == Some(dir);
    (wide && !dir.join(WORKSPACE_FILE).is_file()).then(|| {
        format!(
            "{} holds no aptix.toml, and is too wide a workspace",
            dir.display()
        )
    })
}

/// The home folder, when `HOME` names one.
fn home(env: Env<'_>) -> Option<PathBuf> {
    env("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// The workspace a front end started in `start` works in: the nearest folder from
/// `start` upwards that holds `aptix.toml` or `.git` (the way git finds its
/// repository); else the nearest that holds an index (`.aptix/`, a folder indexed with
/// `aptix index` that is no project's); else `start` itself.
///
/// An `.aptix/` alone does not mark a workspace inside a project: `aptix index` run on
/// a subfolder leaves one there, and it used to take the subfolder out of its project
/// (its `aptix.toml`, its sessions) for every later command.
pub fn find_workspace(start: &Path) -> PathBuf {
    let marked = |markers: &[&str]| {
        start
            .ancestors()
            .find(|dir| markers.iter().any(|marker| dir.join(marker).exists()))
    };
    marked(MARKERS)
        .or_else(|| marked(&[APTIX_DIR]))
        .unwrap_or(start)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_a_named_folder_or_a_found_one_never_the_whole_home() {
        let home = tempfile::tempdir().unwrap();
        let home_text = home.path().to_string_lossy().into_owned();
        let env = move |name: &str| (name == "HOME").then(|| home_text.clone());
        // Named: it must be a folder; `~/` is the home folder.
        let error =
            resolve_workspace(Some(&home.path().join("nope")), home.path(), &env).unwrap_err();
        assert!(error.is_config() && error.to_string().contains("is not a folder"));
        std::fs::create_dir(home.path().join("p")).unwrap();
        assert_eq!(
            resolve_workspace(Some(Path::new("~/p")), Path::new("/"), &env).unwrap(),
            home.path().join("p")
        );
        // Found from a loose folder under the home folder (dotfiles in git): refused,
        // saying how to mean it.
        std::fs::create_dir(home.path().join(".git")).unwrap();
        let error = resolve_workspace(None, &home.path().join("p"), &env).unwrap_err();
        assert!(error.is_config(), "{error}");
        assert!(
            error.to_string().contains("too wide a workspace"),
            "{error}"
        );
        assert!(workspace_too_wide(home.path(), &env).is_some());
        assert!(workspace_too_wide(Path::new("/"), &env).is_some());
        assert!(workspace_too_wide(&home.path().join("p"), &env).is_none());
        // An index nearer the current folder is the workspace; so is a home folder an
        // aptix.toml means.
        std::fs::create_dir(home.path().join("p").join(APTIX_DIR)).unwrap();
        assert_eq!(
            resolve_workspace(None, &home.path().join("p"), &env).unwrap(),
            home.path().join("p")
        );
        std::fs::write(home.path().join(WORKSPACE_FILE), "").unwrap();
        assert!(workspace_too_wide(home.path(), &env).is_none());
        assert_eq!(
            resolve_workspace(None, home.path(), &env).unwrap(),
            home.path()
        );
    }

    #[test]
    fn the_nearest_marked_folder_up_is_the_workspace() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("a/b/c");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(root.path().join("a").join(WORKSPACE_FILE), "").unwrap();
        assert_eq!(find_workspace(&nested), root.path().join("a"));
        std::fs::create_dir(root.path().join("a/b/.git")).unwrap();
        assert_eq!(find_workspace(&nested), root.path().join("a/b"));
        // An index alone (`aptix index` run on a subfolder) does not take the
        // subfolder out of its project...
        std::fs::create_dir(nested.join(APTIX_DIR)).unwrap();
        assert_eq!(find_workspace(&nested), root.path().join("a/b"));
        // ...but marks a folder that is no project's.
        let loose = tempfile::tempdir().unwrap();
        let inner = loose.path().join("x/y");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::create_dir(loose.path().join("x").join(APTIX_DIR)).unwrap();
        assert_eq!(find_workspace(&inner), loose.path().join("x"));
        assert_eq!(find_workspace(loose.path()), loose.path());
    }
}
