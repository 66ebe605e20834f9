//! Wire types of the real OpenAI `POST /v1/responses` API.
