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
    /// The token budget of the `[CONTEXT]` block; a turn uses at most a quarter of the
    /// model's context window ([`context_window`](Self::context_window)), whatever this
    /// says.
    pub context_token_budget: usize,
    /// The most chunks the retriever considers.
    pub max_chunks: usize,
    /// Replay the session's history instead of chaining `previous_response_id`, whatever
    /// the provider claims (for servers that keep no state).
    pub stateless: bool,
    /// Send the tools again on continuations (they are not inherited through
    /// `previous_response_id`).
    pub resend_tools_on_continuation: bool,
    /// How long a session lease lasts before another request may take it over; at most
    /// ten years (a longer one, `Duration::MAX` for "never", is ten years). Zero is
    /// refused by [`build`](crate::OrchestratorBuilder::build): a lease that expires at
    /// once would let two turns run on one session.
    pub lease_ttl: std::time::Duration,
    /// How a streamed model call recovers from a cut stream.
    pub stream_recovery: StreamRecovery,
    /// Send streamed model calls in background mode (`background: true`, `store: true`)
    /// so that a cut stream is resumed after its last event instead of being sent
    /// again. Only for servers that keep responses (OpenAI); off by default.
    pub background: bool,
    /// The model's context window in tokens, for any server; `None` takes it from the
    /// model id ([`context_window_for`]).
    pub context_window: Option<u64>,
    /// The share of the context window (above 0, at most 1) a request may reach before
    /// the session is compacted first; default 0.85.
    pub compact_threshold: f64,
}

/// How a streamed model call recovers when its stream is cut: the connection lost
/// mid-body, a stall past the client's idle timeout, or a body that ended without a
/// terminal event.
///
/// Recovery is tried only while it is safe: no hosted tool (web search, code
/// interpreter, ...) has started in the cut attempt, since sending the request again
/// would run it again. A background response (`background: true` in the request's
/// extra fields, `store` not `false`) is resumed where it stopped instead of being sent
/// again. Defaults follow codex's stream retries: 5 attempts, backoff from 0.5 s
/// doubling to 8 s, with jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRecovery {
    /// The most attempts of one model call, the first included (1 turns recovery off).
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub initial_backoff: std::time::Duration,
    /// The longest computed wait (before jitter).
    pub max_backoff: std::time::Duration,
    /// Add up to one more wait at random, so clients cut together do not return together.
    pub jitter: bool,
}

impl Default for StreamRecovery {
    fn default() -> StreamRecovery {
        StreamRecovery {
            max_attempts: 5,
            initial_backoff: std::time::Duration::from_millis(500),
            max_backoff: std::time::Duration::from_secs(8),
            jitter: true,
        }
    }
}

impl StreamRecovery {
    /// No recovery: a cut stream ends the turn with an error envelope.
    pub fn never() -> StreamRecovery {
        StreamRecovery {
            max_attempts: 1,
            ..StreamRecovery::default()
        }
    }

    /// The wait before `attempt` (2 for the first retry): the backoff doubled per
    /// retry, capped, plus the jitter (`random` in `0.0..1.0` of one more wait; a value
    /// outside it is clamped, and NaN is no jitter).
    pub fn wait_before(&self, attempt: u32, random: f64) -> std::time::Duration {
        let doublings = attempt.saturating_sub(2).min(30);
        let base = self
            .initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff);
        if self.jitter && random > 0.0 {
            let jitter =
                std::time::Duration::try_from_secs_f64(base.as_secs_f64() * random.min(1.0))
                    .unwrap_or(base);
            base.saturating_add(jitter)
        } else {
            base
        }
    }
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
            stream_recovery: StreamRecovery::default(),
            background: false,
            context_window: None,
            compact_threshold: DEFAULT_COMPACT_THRESHOLD,
        }
    }
}

impl OrchestratorConfig {
    /// The mode called `name`, if configured.
    pub fn mode(&self, name: &str) -> Option<&Mode> {
        self.modes.iter().find(|mode| mode.name == name)
    }

    /// The context window of `model` in tokens: the configured one, else the model's
    /// own ([`context_window_for`]).
    pub fn context_window(&self, model: &str) -> u64 {
        self.context_window
            .unwrap_or_else(|| context_window_for(model))
    }
}

/// The default [`OrchestratorConfig::compact_threshold`].
pub const DEFAULT_COMPACT_THRESHOLD: f64 = 0.85;

/// The context window assumed for a model this table does not know: small enough for
/// most local servers' default context, so an unknown model is compacted early rather
/// than rejected.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// The context window in tokens of an OpenAI model, by id prefix (a dated snapshot such
/// as `gpt-4o-2024-08-06` is its family's); [`DEFAULT_CONTEXT_WINDOW`] for any other.
///
/// The numbers are what a request's input may hold. For the GPT-5 family that is
/// 272,000: its 400,000-token window includes up to 128,000 output tokens, and the API
/// rejects a longer input (codex's model table uses the same figure).
pub fn context_window_for(model: &str) -> u64 {
    // Longest prefixes first: `gpt-4o-mini` before `gpt-4o`, `o4-mini` before `o4`.
    const TABLE: &[(&str, u64)] = &[
        ("gpt-5", 272_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o4-mini", 200_000),
        ("o3", 200_000),
        ("o1", 200_000),
        ("codex-mini", 200_000),
    ];
    let model = model.trim().to_ascii_lowercase();
    // A provider-qualified id (`openai/gpt-4o`) names the same model.
    let model = model.rsplit('/').next().unwrap_or_default();
    TABLE
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT_WINDOW, |&(_, window)| window)
}

/// The boot prompt used when none is configured: persona, the AGN-002 reading rules for
/// `[CONTEXT]`, and tool etiquette.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Aptix, a careful coding assistant working in the user's workspace.
Use only the code and content provided in the [CONTEXT] section when it is present; treat each chunk as authoritative for its line span; do not merge chunks from the same file unless asked; prefer incremental changes to full rewrites; reference chunks by Id or chunk number when explaining.
If the context does not contain what you need, say so instead of guessing.
Call tools only when they help answer the instruction, and read [TOOL_RESULTS] before answering.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_takes_any_random_value_and_any_backoff_without_panicking() {
        let recovery = StreamRecovery::default();
        let base = recovery.wait_before(2, 0.0);
        assert_eq!(recovery.wait_before(2, f64::NAN), base);
        assert_eq!(recovery.wait_before(2, -3.0), base);
        assert_eq!(recovery.wait_before(2, 7.0), base * 2);
        let huge = StreamRecovery {
            initial_backoff: std::time::Duration::MAX,
            max_backoff: std::time::Duration::MAX,
            ..StreamRecovery::default()
        };
        assert_eq!(huge.wait_before(9, 1.0), std::time::Duration::MAX);
    }

    #[test]
    fn context_windows_follow_the_model_family_and_unknown_models_are_small() {
        assert_eq!(context_window_for("gpt-4.1-mini"), 1_047_576);
        assert_eq!(context_window_for("gpt-4o-2024-08-06"), 128_000);
        assert_eq!(context_window_for("gpt-4o-mini"), 128_000);
        assert_eq!(context_window_for("o3"), 200_000);
        assert_eq!(context_window_for("o4-mini"), 200_000);
        assert_eq!(context_window_for("gpt-5-mini"), 272_000);
        assert_eq!(context_window_for("openai/GPT-5"), 272_000);
        assert_eq!(
            context_window_for("qwen2.5-coder-7b"),
            DEFAULT_CONTEXT_WINDOW
        );
        let mut config = OrchestratorConfig::default();
        assert_eq!(config.context_window("gpt-4o"), 128_000);
        config.context_window = Some(8_000);
        assert_eq!(config.context_window("gpt-4o"), 8_000);
    }
}
