//! Orchestrator configuration: modes, model settings and loop bounds.

use crate::session::ModelSettings;

/// An agent mode (`QA`, `CODE_EDIT`, ...): server-owned since AGN-034.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode {
    /// The name shown in `[MODE: ...]`.
    pub name: String,
    /// Text appended to the base system prompt for this mode (AGN-003's per-request
    /// system prompt).
    pub system_prompt: Option<String>,
    /// The tools (server and client) this mode may use; `None` means all of them.
    pub allowed_tools: Option<Vec<String>>,
}

impl Mode {
    /// A mode with no extra prompt and every tool allowed.
    pub fn new(name: impl Into<String>) -> Mode {
        Mode {
            name: name.into(),
            system_prompt: None,
            allowed_tools: None,
        }
    }

    /// Whether a tool may be offered in this mode.
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|name| name == tool))
    }
}

/// How the orchestrator runs turns.
#[derive(Debug, Clone, PartialEq)]
pub struct OrchestratorConfig {
    /// The canonical boot prompt (AGN-003 `ConversationContext.System`).
    pub base_system_prompt: String,
    /// The modes sessions can be in.
    pub modes: Vec<Mode>,
    /// The mode of a new session.
    pub default_mode: String,
    /// Model settings of a new session.
    pub model: ModelSettings,
    /// The most model calls one turn may make while running server tools; a turn that
    /// reaches it ends with a warning and the last response.
    pub max_model_calls_per_turn: usize,
    /// The token budget of the `[CONTEXT]` block.
    pub context_token_budget: usize,
    /// The most chunks the retriever considers.
    pub max_chunks: usize,
    /// Replay the session's history instead of chaining `previous_response_id`, whatever
    /// the provider claims (for servers that keep no state).
    pub stateless: bool,
    /// Send the tools again on continuations (they are not inherited through
    /// `previous_response_id`).
    pub resend_tools_on_continuation: bool,
    /// How long a session lease lasts before another request may take it over.
    pub lease_ttl: std::time::Duration,
}

impl Default for OrchestratorConfig {
    fn default() -> OrchestratorConfig {
        OrchestratorConfig {
            base_system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            modes: vec![Mode::new("QA"), Mode::new("CODE_EDIT")],
            default_mode: "QA".to_owned(),
            model: ModelSettings {
                model: "gpt-5-mini".to_owned(),
                ..ModelSettings::default()
            },
            max_model_calls_per_turn: 8,
            context_token_budget: 12_000,
            max_chunks: 40,
            stateless: false,
            resend_tools_on_continuation: true,
            lease_ttl: std::time::Duration::from_secs(300),
        }
    }
}

impl OrchestratorConfig {
    /// The mode called `name`, if configured.
    pub fn mode(&self, name: &str) -> Option<&Mode> {
        self.modes.iter().find(|mode| mode.name == name)
    }
}

/// The boot prompt used when none is configured: persona, the AGN-002 reading rules for
/// `[CONTEXT]`, and tool etiquette.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Aptix, a careful coding assistant working in the user's workspace.
Use only the code and content provided in the [CONTEXT] section when it is present; treat each chunk as authoritative for its line span; do not merge chunks from the same file unless asked; prefer incremental changes to full rewrites; reference chunks by Id or chunk number when explaining.
If the context does not contain what you need, say so instead of guessing.
Call tools only when they help answer the instruction, and read [TOOL_RESULTS] before answering.";
