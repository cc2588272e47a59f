//! Errors as the API answers them: a status and a JSON body `{"error": "..."}` that says what was
//! wrong and what is accepted.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The ply the match is at, for a stale move (409).
    pub ply: Option<usize>,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), ply: None }
    }
    /// 400: the request itself is wrong (a bad spec, a bad field).
    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    /// 403: a view the asker may not have.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    /// 404: no such match or file.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    /// 409: the request does not fit the match as it is now (a stale ply, the game is over).
    pub fn conflict(message: impl Into<String>, ply: usize) -> Self {
        ApiError { ply: Some(ply), ..Self::new(StatusCode::CONFLICT, message) }
    }
    /// 422: a well-formed move the rules refuse.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }
    /// 408: the request did not arrive in time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, message)
    }
    /// 413: the body is larger than the route takes.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, message)
    }
    /// 415: a command that is not JSON.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, message)
    }
    /// 421: a `Host` that is not this server's (DNS rebinding, a misconfigured proxy).
    pub fn misdirected(message: impl Into<String>) -> Self {
        Self::new(StatusCode::MISDIRECTED_REQUEST, message)
    }
    /// 429: this client holds its share.
    pub fn too_many(message: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, message)
    }
    /// 503: the server is at one of its limits.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

impl From<meeple_game::Error> for ApiError {
    fn from(e: meeple_game::Error) -> Self {
        ApiError::bad(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = match self.ply {
            Some(ply) => json!({ "error": self.message, "ply": ply }),
            None => json!({ "error": self.message }),
        };
        (self.status, axum::Json(body)).into_response()
    }
}
