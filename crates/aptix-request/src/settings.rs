//! The one rule for model settings: [`check_model_settings`].
//!
//! Every path that turns settings into a request calls it: the builder
//! ([`RequestBuilder::build`](crate::RequestBuilder::build)), the schema-constrained
//! Request of `aptix-schema`, and the CLI when it reads a flag, a variable or a config
//! file. A value one of them accepts, the others accept too, and a rejected value gets
//! the same message everywhere.

use crate::error::RequestError;
use crate::text::is_blank;

/// The API's smallest `max_output_tokens`.
pub const MIN_MAX_OUTPUT_TOKENS: u64 = 16;

/// The reasoning efforts the API names (`ReasoningEffort` in its OpenAPI description),
/// from least to most.
pub const REASONING_EFFORTS: &[&str] =
    &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// Model settings as a request would send them, for [`check_model_settings`]. Each one
/// is checked only when present, so a caller holding part of them (one layer of a
/// configuration) checks that part.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelParams<'a> {
    /// The model id: must not be blank.
    pub model: Option<&'a str>,
    /// Sampling temperature: `0..=2`.
    pub temperature: Option<f64>,
    /// Nucleus sampling: `0..=1`.
    pub top_p: Option<f64>,
    /// Upper bound on generated tokens: at least [`MIN_MAX_OUTPUT_TOKENS`].
    pub max_output_tokens: Option<u64>,
    /// Reasoning effort: one of [`REASONING_EFFORTS`], as the API spells it.
    pub reasoning_effort: Option<&'a str>,
}

/// Checks model settings against the API's rules, in the order of [`ModelParams`]'
/// fields.
///
/// # Errors
///
/// [`RequestError::BlankModel`], [`RequestError::InvalidTemperature`] (outside `0..=2`
/// or not a number), [`RequestError::InvalidTopP`] (outside `0..=1` or not a number),
/// [`RequestError::MaxOutputTokensTooSmall`] or [`RequestError::UnknownReasoningEffort`].
///
/// # Example
///
/// ```
/// use aptix_request::{ModelParams, RequestError, check_model_settings};
///
/// let settings = ModelParams { max_output_tokens: Some(15), ..ModelParams::default() };
/// let error = check_model_settings(&settings).unwrap_err();
/// assert_eq!(error, RequestError::MaxOutputTokensTooSmall { value: 15, minimum: 16 });
/// assert_eq!(error.to_string(), "max_output_tokens 15 is below the minimum of 16");
/// ```
pub fn check_model_settings(settings: &ModelParams<'_>) -> Result<(), RequestError> {
    if settings.model.is_some_and(is_blank) {
        return Err(RequestError::BlankModel);
    }
    if let Some(value) = settings.temperature
        && !(0.0..=2.0).contains(&value)
    {
        return Err(RequestError::InvalidTemperature { value });
    }
    if let Some(value) = settings.top_p
        && !(0.0..=1.0).contains(&value)
    {
        return Err(RequestError::InvalidTopP { value });
    }
    if let Some(value) = settings.max_output_tokens
        && value < MIN_MAX_OUTPUT_TOKENS
    {
        return Err(RequestError::MaxOutputTokensTooSmall {
            value,
            minimum: MIN_MAX_OUTPUT_TOKENS,
        });
    }
    if let Some(value) = settings.reasoning_effort
        && !REASONING_EFFORTS.contains(&value)
    {
        return Err(RequestError::UnknownReasoningEffort {
            value: value.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_is_checked_only_when_present() {
        assert_eq!(check_model_settings(&ModelParams::default()), Ok(()));
        let cases = [
            (
                ModelParams {
                    model: Some(" "),
                    ..ModelParams::default()
                },
                Err(RequestError::BlankModel),
            ),
            (
                ModelParams {
                    temperature: Some(f64::NAN),
                    ..ModelParams::default()
                },
                Err(RequestError::InvalidTemperature { value: f64::NAN }),
            ),
            (
                ModelParams {
                    top_p: Some(1.5),
                    ..ModelParams::default()
                },
                Err(RequestError::InvalidTopP { value: 1.5 }),
            ),
            (
                ModelParams {
                    reasoning_effort: Some("High"),
                    ..ModelParams::default()
                },
                Err(RequestError::UnknownReasoningEffort {
                    value: "High".into(),
                }),
            ),
            (
                ModelParams {
                    model: Some("m"),
                    temperature: Some(2.0),
                    top_p: Some(0.0),
                    max_output_tokens: Some(MIN_MAX_OUTPUT_TOKENS),
                    reasoning_effort: Some("xhigh"),
                },
                Ok(()),
            ),
        ];
        for (settings, expected) in cases {
            let got = check_model_settings(&settings);
            // NaN is not equal to itself: compare the messages.
            assert_eq!(
                got.as_ref().map_err(ToString::to_string),
                expected.as_ref().map_err(ToString::to_string),
                "{settings:?}"
            );
        }
    }
}
