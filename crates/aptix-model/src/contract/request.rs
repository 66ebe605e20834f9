//! The validated AGN-034 request: a user turn or a tool continuation.
//!
//! See [`AgentExecuteRequest`] for how values are built and encoded.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::attachment::{FileInput, ImageInput};
use super::limits::MAX_REQUEST_BYTES;
use super::scope::ScopeCondition;
use super::strict_json::{self, StrictError};
use super::text::{Instruction, SessionId, TurnId};
use super::tool_result::ToolResult;
use super::validator::validate;
use super::violation::{RequestRejection, Violation, ViolationCode};

/// The wire description of [`AgentExecuteRequest`]: the first part of its doc comment and
/// its schema's description, so the two cannot drift.
macro_rules! request_doc {
    () => {
        "An AGN-034 request, by scenario. The scenario is decided by field presence: a request
with `toolResults` is a tool continuation, any other a user turn.

Field names are camelCase; each may also be spelt in PascalCase (`SessionId`), as the
original server accepted, but not both ways in one object. A field whose value is `null`
is read as absent, whatever its name. Any other field is a violation (`unknown_field`,
or `server_owned` for state the server owns, such as `mode` or `model`), and the `400
invalid_request` answer lists every violation with its path. Rules between fields are
the server's, not this schema's: a user turn needs an `instruction` or a file or image
input; a file input has `content` or `contentBase64`, not both; a tool result has
exactly one of `resultJson` and `errorMessage`, and no two answer one `toolCallId`;
ids hold no control character and no invisible or direction-changing one (`invalid_id`); inline attachments total at most 48 MiB."
    };
}

#[doc = request_doc!()]
///
/// Values of these types come from [`validate`] (or
/// [`AgentExecuteRequest::from_json_slice`]), so code receiving one can rely on every
/// rule of the contract. The fields are public so that tests and clients can build
/// requests in code; the checked newtypes keep each field's own rules, while the rules
/// between fields (a user turn has some input, tool call ids are unique, count and size
/// limits) are what `validate` adds, so a hand-built value should be sent through it.
///
/// Encoding writes canonical camelCase JSON and leaves out what is unset (no instruction,
/// no inputs, `stream: false`), so any valid request survives encode then decode unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentExecuteRequest {
    /// A new turn: an instruction and/or inputs (AGN-034 section 2.1).
    UserTurn(UserTurnRequest),
    /// Results of client tool calls for a turn in progress (AGN-034 section 2.2).
    ToolContinuation(ToolContinuationRequest),
}

impl AgentExecuteRequest {
    /// Parses and validates a request body. Total over arbitrary bytes: a body that is not
    /// JSON, not UTF-8 or over [`MAX_REQUEST_BYTES`] is one violation at the root path;
    /// otherwise see [`validate`]. A leading UTF-8 byte order mark is skipped, as RFC 8259
    /// allows (Windows tools such as PowerShell's `Out-File` write one). An object that
    /// names a member twice is [`ViolationCode::DuplicateField`] at that member, where a
    /// JSON parser would keep one of the two without a word.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, RequestRejection> {
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(Violation::new(
                "",
                ViolationCode::TooLarge,
                format!(
                    "the request body is {} bytes; the limit is {MAX_REQUEST_BYTES} bytes",
                    bytes.len()
                ),
            )
            .into());
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let value = strict_json::parse(bytes).map_err(|error| match error {
            StrictError::NotJson(error) => Violation::new(
                "",
                ViolationCode::InvalidJson,
                // "Could not be read": `1e400` is JSON, but no number it can be read as.
                format!("the request body could not be read as JSON: {error}"),
            ),
            StrictError::Duplicate { path, member } => Violation::new(
                path,
                ViolationCode::DuplicateField,
                format!("{member} is given twice in one object; send it once"),
            ),
        })?;
        validate(&value)
    }

    /// Validates a decoded JSON value; the same as [`validate`].
    pub fn from_json_value(value: &Value) -> Result<Self, RequestRejection> {
        validate(value)
    }

    /// A user turn asking `instruction`, checked by the rules a decoded body meets (an
    /// id with a control character, a blank instruction, ... are the same violations,
    /// at the same paths). Set its other fields afterwards through
    /// [`AgentExecuteRequest::UserTurn`], then check it again with
    /// [`ValidatedRequest::new`].
    ///
    /// ```
    /// use aptix_model::contract::AgentExecuteRequest;
    ///
    /// let request = AgentExecuteRequest::user_turn("s-1", "t-1", "Explain the parser")?;
    /// assert_eq!(request.turn_id().as_str(), "t-1");
    /// let rejection = AgentExecuteRequest::user_turn("s-1", "", "Explain").unwrap_err();
    /// assert_eq!(rejection.violations()[0].path, "turnId");
    /// # Ok::<(), aptix_model::contract::RequestRejection>(())
    /// ```
    pub fn user_turn(
        session_id: impl Into<String>,
        turn_id: impl Into<String>,
        instruction: impl Into<String>,
    ) -> Result<Self, RequestRejection> {
        validate(&serde_json::json!({
            "sessionId": session_id.into(),
            "turnId": turn_id.into(),
            "instruction": instruction.into(),
        }))
    }

    /// The session the request belongs to.
    pub fn session_id(&self) -> &SessionId {
        match self {
            AgentExecuteRequest::UserTurn(request) => &request.session_id,
            AgentExecuteRequest::ToolContinuation(request) => &request.session_id,
        }
    }

    /// The turn the request starts or continues.
    pub fn turn_id(&self) -> &TurnId {
        match self {
            AgentExecuteRequest::UserTurn(request) => &request.turn_id,
            AgentExecuteRequest::ToolContinuation(request) => &request.turn_id,
        }
    }

    /// Whether this is a tool continuation.
    pub fn is_tool_continuation(&self) -> bool {
        matches!(self, AgentExecuteRequest::ToolContinuation(_))
    }
}

/// A request that passed AGN-034 validation ([`validate`]). Only validation makes one,
/// and it gives read access only (`Deref` to [`AgentExecuteRequest`]), so the request
/// that runs is the request that was checked, and running it does not check it again.
///
/// A service decodes the body once with [`ValidatedRequest::from_json_slice`] (every
/// violation listed on failure) and hands the result to the orchestrator; a request
/// built in code goes through [`ValidatedRequest::new`], which applies the same rules.
///
/// ```
/// use aptix_model::contract::{AgentExecuteRequest, ValidatedRequest};
///
/// let body = br#"{"sessionId": "s-1", "turnId": "t-1", "instruction": "Explain the parser"}"#;
/// let request = ValidatedRequest::from_json_slice(body)?;
/// assert_eq!(request.session_id().as_str(), "s-1");
///
/// // A hand-built user turn with no instruction and no inputs breaks AGN-034.
/// let AgentExecuteRequest::UserTurn(mut turn) = request.into_inner() else { unreachable!() };
/// turn.instruction = None;
/// let rejection = ValidatedRequest::new(AgentExecuteRequest::UserTurn(turn)).unwrap_err();
/// assert!(!rejection.violations().is_empty());
/// # Ok::<(), aptix_model::contract::RequestRejection>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedRequest(AgentExecuteRequest);

impl ValidatedRequest {
    /// Parses and validates a request body: [`AgentExecuteRequest::from_json_slice`].
    pub fn from_json_slice(bytes: &[u8]) -> Result<ValidatedRequest, RequestRejection> {
        AgentExecuteRequest::from_json_slice(bytes).map(ValidatedRequest)
    }

    /// Checks a request built in code exactly as a decoded one: the typed fields hold
    /// their own rules, but the rules between fields (a user turn has some input, tool
    /// call ids are unique, counts and sizes) are [`validate`]'s, applied to the
    /// request's JSON encoding.
    pub fn new(request: AgentExecuteRequest) -> Result<ValidatedRequest, RequestRejection> {
        let value = serde_json::to_value(&request).map_err(|error| {
            Violation::new(
                "",
                ViolationCode::WrongType,
                format!("the request could not be encoded for validation: {error}"),
            )
        })?;
        validate(&value)?;
        Ok(ValidatedRequest(request))
    }

    /// The request, to own or change (changing it means validating it again).
    pub fn into_inner(self) -> AgentExecuteRequest {
        self.0
    }
}

impl std::ops::Deref for ValidatedRequest {
    type Target = AgentExecuteRequest;

    fn deref(&self) -> &AgentExecuteRequest {
        &self.0
    }
}

impl TryFrom<AgentExecuteRequest> for ValidatedRequest {
    type Error = RequestRejection;

    /// [`ValidatedRequest::new`].
    fn try_from(request: AgentExecuteRequest) -> Result<ValidatedRequest, RequestRejection> {
        ValidatedRequest::new(request)
    }
}

/// One of the two scenarios. The request objects' schemas are derived from their types,
/// then given the validator's rule for unknown fields (see
/// `openapi::unknown_fields_must_be_null`): these components exist only here.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for AgentExecuteRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::ToSchema;
        use utoipa::openapi::Ref;
        use utoipa::openapi::schema::OneOfBuilder;
        OneOfBuilder::new()
            .description(Some(request_doc!()))
            .item(Ref::from_schema_name(UserTurnRequest::name()))
            .item(Ref::from_schema_name(ToolContinuationRequest::name()))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for AgentExecuteRequest {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("AgentExecuteRequest")
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        let mut tree = vec![
            (
                UserTurnRequest::name().into_owned(),
                UserTurnRequest::schema(),
            ),
            (
                ToolContinuationRequest::name().into_owned(),
                ToolContinuationRequest::schema(),
            ),
        ];
        UserTurnRequest::schemas(&mut tree);
        ToolContinuationRequest::schemas(&mut tree);
        schemas.extend(
            tree.into_iter()
                .map(|(name, schema)| (name, crate::openapi::unknown_fields_must_be_null(schema))),
        );
    }
}

impl Serialize for AgentExecuteRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentExecuteRequest::UserTurn(request) => request.serialize(serializer),
            AgentExecuteRequest::ToolContinuation(request) => request.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AgentExecuteRequest {
    /// Decodes through [`validate`], so serde users (an axum `Json`
    /// extractor, say) get the same rules; the error then carries the rejection's text.
    /// Servers that want the violations as data use
    /// [`from_json_slice`](Self::from_json_slice).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        validate(&value).map_err(serde::de::Error::custom)
    }
}

/// A user turn: ids, at least one of instruction or inputs, and optional hints.
// Schema (feature `openapi`): derived, with the validator's limits; a field the encoding
// leaves out may be sent as `null` (read as absent), hence `nullable` on the lists and
// `stream` (an `Option` is nullable already).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UserTurnRequest {
    /// The session.
    pub session_id: SessionId,
    /// The new turn's id.
    pub turn_id: TurnId,
    /// What the developer asks, in Markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<Instruction>,
    /// File inputs, references or inline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(nullable = true, max_items = 256))]
    pub files: Vec<FileInput>,
    /// Image inputs, references or inline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(nullable = true, max_items = 64))]
    pub images: Vec<ImageInput>,
    /// Advisory retrieval scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rag_scope: Option<RagScope>,
    /// Advisory workspace hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<WorkspaceHints>,
    /// Whether the client wants the reply streamed (default `false`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "openapi", schema(nullable = true))]
    pub stream: bool,
}

impl UserTurnRequest {
    /// The scope conditions, empty when the request has no `ragScope`.
    pub fn scope_conditions(&self) -> &[ScopeCondition] {
        self.rag_scope
            .as_ref()
            .map_or(&[], |scope| scope.conditions.as_slice())
    }
}

/// A tool continuation: the ids of the turn and one result per client tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolContinuationRequest {
    /// The session.
    pub session_id: SessionId,
    /// The turn being continued.
    pub turn_id: TurnId,
    /// The results; never empty, no tool call id twice.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 128))]
    pub tool_results: Vec<ToolResult>,
}

/// AGN-034 section 4.3: retrieval conditions over chunk metadata, ANDed, advisory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RagScope {
    /// The conditions; each has a non-empty `values`. Absent means none.
    // Always encoded, but the validator reads a missing or `null` list as empty.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, nullable = true, max_items = 64)
    )]
    pub conditions: Vec<ScopeCondition>,
}

/// AGN-034 section 4.4: advisory hints about the client's workspace. Each is non-blank
/// when present; none may be relied on for correctness.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceHints {
    /// The client's id for its workspace; at most 256 bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 256, pattern = r"\S")
    )]
    pub workspace_id: Option<String>,
    /// The repository name; at most 256 bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 256, pattern = r"\S")
    )]
    pub repository: Option<String>,
    /// The main language, e.g. `rust`; at most 256 bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 256, pattern = r"\S")
    )]
    pub language: Option<String>,
}
