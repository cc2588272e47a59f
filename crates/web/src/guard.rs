//! What every request passes before a route sees it, against a hostile page in the same
//! browser: the `Host` must be one of the server's own names (so a page that rebinds its DNS name
//! to this machine is refused), a foreign `Origin` is refused, commands must be JSON (a
//! cross-site form or a `text/plain` fetch cannot send one without the browser asking first),
//! bodies arrive within a time limit, no token is taken from an address (a proxy's log would
//! keep it), and every answer forbids framing and sniffing.

use crate::error::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;

/// The names a request may give as its `Host`, and how long a body may take to arrive.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Host names (without port), lower case: loopback names, the bound address, `--allow-host`.
    pub hosts: Vec<String>,
    pub body_timeout: Duration,
}

impl Policy {
    pub fn new(extra: &[String], body_timeout: Duration) -> Self {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"].iter().map(|s| s.to_string()).collect();
        hosts.extend(extra.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()));
        Policy { hosts, body_timeout }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        self.hosts.iter().any(|h| *h == name || h.trim_matches(['[', ']']) == name.trim_matches(['[', ']']))
    }
}

/// `example.org:8080` → `example.org`; `[::1]:8080` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The route that reads its own body as it streams: a records upload, as JSON lines.
const UPLOAD: &str = "/api/replays";

pub async fn check(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    let mut response = match admit(&policy, request).await {
        Ok(request) => next.run(request).await,
        Err(e) => e.into_response(),
    };
    let h = response.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn admit(policy: &Policy, request: Request) -> Result<Request, ApiError> {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
        .ok_or_else(|| ApiError::misdirected("the request names no Host"))?;
    if !policy.host_allowed(&host) {
        return Err(ApiError::misdirected(format!(
            "Host '{host}' is not a name of this server (it answers to {}; start it with --allow-host NAME to add one)",
            policy.hosts.join(", ")
        )));
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = [format!("http://{host}"), format!("https://{host}")];
        if !own.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return Err(ApiError::forbidden(format!(
                "requests from another site (Origin '{origin}') are refused; use the page this server serves"
            )));
        }
    }
    if let Some(q) = request.uri().query()
        && q.split('&').any(|pair| pair.split('=').next().is_some_and(|k| k.eq_ignore_ascii_case("token")))
    {
        return Err(ApiError::bad(
            "a token in the address is refused (proxies and browsers keep addresses): send it in the X-Meeple-Token header; an event stream opens with a ticket (POST /api/matches/ID/ticket)",
        ));
    }
    let command = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if command
        && request.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok()).is_some_and(|v| v == "cross-site")
    {
        return Err(ApiError::forbidden("requests from another site are refused"));
    }
    if *request.method() == Method::OPTIONS {
        // No cross-site request is allowed, so there is nothing to pre-approve.
        return Err(ApiError::forbidden("cross-origin requests are not allowed"));
    }
    if *request.method() != Method::POST {
        return Ok(request);
    }
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let json = content_type.split(';').next().is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    let upload = request.uri().path() == UPLOAD;
    // JSON lines are no simple request either (a page elsewhere cannot send them without the
    // browser asking first); the upload reads them itself, with its budget and time limit.
    if upload && crate::upload::is_lines(content_type) {
        return Ok(request);
    }
    if !json {
        return Err(ApiError::unsupported(if upload {
            "a replay is asked for as JSON (Content-Type: application/json), or a records file uploaded as JSON lines (application/x-ndjson)"
        } else {
            "commands must be sent as JSON with Content-Type: application/json"
        }));
    }
    let limit = crate::MAX_BODY;
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(policy.body_timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => {
            return Err(ApiError::timeout(format!(
                "the request body did not arrive within {} s",
                policy.body_timeout.as_secs()
            )));
        }
        Ok(Err(_)) => {
            return Err(ApiError::too_large(format!(
                "the request body is larger than {} KB, or was cut off",
                limit >> 10
            )));
        }
        Ok(Ok(b)) => b,
    };
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_read_without_their_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("example.org"), "example.org");
        let p = Policy::new(&["Play.Example.org".into()], Duration::from_secs(1));
        for ok in ["localhost:1", "127.0.0.1:8080", "[::1]:9", "play.example.org", "PLAY.example.org:443"] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "127.0.0.1.evil.example", "localhost.evil:80", "example.org", ""] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
    }
}
