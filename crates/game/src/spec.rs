use crate::Error;
use crate::limits::{MAX_MOVE_TIME, MAX_SPEC_LEN, MAX_SPEC_NESTING};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A game or agent spec: `name` or `name:key=value,key=value`.
///
/// Values may themselves hold commas inside brackets (`playout=(mcts:iters=10,c=1)`), so agents
/// can take other agents as options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The registered name.
    pub name: String,
    /// Options in the order given.
    pub options: Vec<(String, String)>,
}

impl Spec {
    /// A spec with a name and no options.
    pub fn new(name: impl Into<String>) -> Self {
        Spec { name: name.into(), options: Vec::new() }
    }

    /// Adds an option (builder style).
    pub fn with(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.options.push((key.into(), value.to_string()));
        self
    }

    /// The value given for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Checks the options against `params` and returns them for typed reading. `subject` names
    /// the thing in error messages (`game connect4`, `agent mcts`).
    pub fn options<'a>(&'a self, subject: &str, params: &'static [ParamInfo]) -> Result<Options<'a>, Error> {
        for (i, (key, _)) in self.options.iter().enumerate() {
            if !params.iter().any(|p| p.name == key) {
                return Err(Error::UnknownOption {
                    subject: subject.to_string(),
                    key: key.clone(),
                    accepted: accepted_list(params),
                });
            }
            if self.options[..i].iter().any(|(k, _)| k == key) {
                return Err(Error::BadSpec { spec: self.to_string(), reason: format!("option '{key}' given twice") });
            }
        }
        Ok(Options { spec: self, subject: subject.to_string(), params })
    }
}

fn accepted_list(params: &[ParamInfo]) -> String {
    if params.is_empty() {
        return "none (this takes no options)".to_string();
    }
    params.iter().map(|p| format!("{} ({})", p.name, p.accepts)).collect::<Vec<_>>().join(", ")
}

impl FromStr for Spec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::BadSpec { spec: shorten(text), reason: reason.to_string() };
        if text.len() > MAX_SPEC_LEN {
            return Err(bad(&format!("longer than {MAX_SPEC_LEN} bytes")));
        }
        let text_trim = text.trim();
        let (name, rest) = match text_trim.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (text_trim, None),
        };
        if name.is_empty() {
            return Err(bad("missing name (expected name or name:key=value,...)"));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad("names use letters, digits, '-' and '_'"));
        }
        let mut spec = Spec::new(name);
        if let Some(rest) = rest {
            for part in split_top_level(rest).map_err(|r| bad(&r))? {
                let part = part.trim();
                if part.is_empty() {
                    return Err(bad("empty option (two commas, or a trailing comma or colon)"));
                }
                let Some((k, v)) = part.split_once('=') else {
                    return Err(bad(&format!("option '{part}' is not key=value")));
                };
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() || v.is_empty() {
                    return Err(bad(&format!("option '{part}' needs both a key and a value")));
                }
                let v = v.strip_prefix('(').and_then(|v| v.strip_suffix(')')).unwrap_or(v);
                spec.options.push((k.to_string(), v.to_string()));
            }
        }
        Ok(spec)
    }
}

/// A spec for an error message: long ones cut to their start and end.
fn shorten(text: &str) -> String {
    const KEEP: usize = 60;
    if text.len() <= 2 * KEEP + 5 {
        return text.to_string();
    }
    let head = text.char_indices().take_while(|&(i, _)| i < KEEP).map(|(_, c)| c).collect::<String>();
    let tail_start = text.char_indices().map(|(i, _)| i).find(|&i| i >= text.len() - KEEP).unwrap_or(text.len());
    format!("{head} ... {}", &text[tail_start..])
}

/// Splits on commas outside brackets. Brackets nest at most [`MAX_SPEC_NESTING`] deep: every
/// level is an agent or evaluator built inside another, and deeper nesting only ever comes from
/// a generated or corrupted spec (and would exhaust the stack building it).
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => {
                depth += 1;
                if depth as usize > MAX_SPEC_NESTING {
                    return Err(format!("brackets nested more than {MAX_SPEC_NESTING} deep"));
                }
            }
            ')' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced brackets".to_string());
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets".to_string());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            let sep = if i == 0 { ':' } else { ',' };
            if v.contains(',') {
                write!(f, "{sep}{k}=({v})")?;
            } else {
                write!(f, "{sep}{k}={v}")?;
            }
        }
        Ok(())
    }
}

/// One option a game or agent accepts, with its default and what values it takes.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// Key in the spec.
    pub name: &'static str,
    /// Value used when the key is absent ("" = no default: the option is off).
    pub default: &'static str,
    /// Accepted values, for error messages and listings (`integer 4..=9`).
    pub accepts: &'static str,
    /// What the option does.
    pub help: &'static str,
}

/// A spec's options checked against its [`ParamInfo`] list, read with typed getters.
#[derive(Debug)]
pub struct Options<'a> {
    spec: &'a Spec,
    subject: String,
    params: &'static [ParamInfo],
}

impl Options<'_> {
    fn raw(&self, key: &str) -> &str {
        if let Some(v) = self.spec.get(key) {
            return v;
        }
        match self.params.iter().find(|p| p.name == key) {
            Some(p) => p.default,
            None => panic!("option '{key}' read by {} but not declared", self.subject),
        }
    }

    fn info(&self, key: &str) -> &'static ParamInfo {
        self.params.iter().find(|p| p.name == key).expect("declared option")
    }

    /// Whether the user gave `key`.
    pub fn given(&self, key: &str) -> bool {
        self.spec.get(key).is_some()
    }

    /// The error for a bad value of `key`.
    pub fn bad_value(&self, key: &str, value: &str) -> Error {
        Error::BadValue {
            subject: self.subject.clone(),
            key: key.to_string(),
            value: value.to_string(),
            expected: self.info(key).accepts.to_string(),
        }
    }

    /// Reads `key` as any `FromStr` type, falling back to its default.
    pub fn get<T: FromStr>(&self, key: &str) -> Result<T, Error> {
        let raw = self.raw(key);
        raw.parse().map_err(|_| self.bad_value(key, raw))
    }

    /// Reads `key` as a number within `range`.
    pub fn get_in<T>(&self, key: &str, range: std::ops::RangeInclusive<T>) -> Result<T, Error>
    where
        T: FromStr + PartialOrd,
    {
        let raw = self.raw(key);
        match raw.parse::<T>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(self.bad_value(key, raw)),
        }
    }

    /// Reads `key` as an optional value: `None` when absent and without default.
    pub fn get_opt<T: FromStr>(&self, key: &str) -> Result<Option<T>, Error> {
        let raw = self.raw(key);
        if raw.is_empty() { Ok(None) } else { raw.parse().map(Some).map_err(|_| self.bad_value(key, raw)) }
    }

    /// Reads `key` as a duration (`500ms`, `2s`, `1.5s`, `100us`, `1m`, `1h`) of at most
    /// [`MAX_MOVE_TIME`]; `None` when unset.
    pub fn get_duration(&self, key: &str) -> Result<Option<Duration>, Error> {
        let raw = self.raw(key);
        if raw.is_empty() {
            return Ok(None);
        }
        match parse_duration(raw) {
            Some(d) if d <= MAX_MOVE_TIME => Ok(Some(d)),
            Some(_) => Err(Error::BadValue {
                subject: self.subject.clone(),
                key: key.to_string(),
                value: raw.to_string(),
                expected: format!("{}, at most {}", self.info(key).accepts, DURATION_LIMIT),
            }),
            None => Err(self.bad_value(key, raw)),
        }
    }

    /// Reads `key` as a size in bytes (`64mb`, `512kb`, `1gb`, `4096`).
    pub fn get_size(&self, key: &str) -> Result<u64, Error> {
        let raw = self.raw(key);
        parse_size(raw).ok_or_else(|| self.bad_value(key, raw))
    }

    /// Reads `key` as a boolean (`true/false`, `yes/no`, `on/off`, `1/0`).
    pub fn get_bool(&self, key: &str) -> Result<bool, Error> {
        let raw = self.raw(key);
        match raw {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(self.bad_value(key, raw)),
        }
    }
}

/// Parses a size: `64mb`, `512kb`, `1gb`, `1.5mb` or a number of bytes (binary units: 1kb = 1024).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().ok()?;
    let scale = match unit.trim() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * scale;
    (bytes.is_finite() && bytes < 1e15).then_some(bytes as u64)
}

/// [`MAX_MOVE_TIME`] as people write it.
pub const DURATION_LIMIT: &str = "7 days (168h)";

/// Parses `500ms`, `2s`, `1.5s`, `250us`, `1m`, `2h`; a bare number is seconds. `None` if malformed,
/// negative or not finite; [`Duration::MAX`] beyond it.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().ok()?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return None,
    };
    // Beyond what a Duration holds is still a (too) long time, for the caller's limit to refuse.
    Duration::try_from_secs_f64(seconds)
        .ok()
        .or_else(|| (seconds.is_finite() && seconds > 0.0).then_some(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[ParamInfo] = &[
        ParamInfo { name: "rows", default: "6", accepts: "integer 4..=8", help: "rows" },
        ParamInfo { name: "time", default: "", accepts: "duration like 500ms", help: "time" },
        ParamInfo { name: "fast", default: "false", accepts: "true or false", help: "fast" },
    ];

    #[test]
    fn parses_names_and_options() {
        let s: Spec = "connect4:rows=5, cols=7".parse().unwrap();
        assert_eq!(s.name, "connect4");
        assert_eq!(s.options, vec![("rows".into(), "5".into()), ("cols".into(), "7".into())]);
        assert_eq!(s.to_string(), "connect4:rows=5,cols=7");
        let nested: Spec = "mcts:playout=(alphabeta:depth=2,tt=1mb),iters=10".parse().unwrap();
        assert_eq!(nested.get("playout"), Some("alphabeta:depth=2,tt=1mb"));
        assert_eq!(nested.to_string().parse::<Spec>().unwrap(), nested);
        assert_eq!("random".parse::<Spec>().unwrap(), Spec::new("random"));
    }

    #[test]
    fn rejects_malformed_specs() {
        for bad in ["", ":rows=5", "c4:rows", "c4:rows=", "c4:=5", "c4:a=1,,b=2", "c4:", "c 4", "c4:p=(x", "c4:p=x)"] {
            let err = bad.parse::<Spec>().unwrap_err();
            assert!(matches!(err, Error::BadSpec { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn nesting_and_length_are_limited() {
        let nest = |n: usize| {
            let mut s = "random".to_string();
            for _ in 0..n {
                s = format!("mcts:iters=1,playout=({s})");
            }
            s
        };
        assert!(nest(MAX_SPEC_NESTING).parse::<Spec>().is_ok());
        let err = nest(700).parse::<Spec>().unwrap_err().to_string();
        assert!(err.contains("nested more than 8 deep"), "{err}");
        assert!(err.len() < 300, "a long spec is shortened in the message: {err}");
        let err = format!("g:k={}", "x".repeat(MAX_SPEC_LEN)).parse::<Spec>().unwrap_err().to_string();
        assert!(err.contains("longer than 65536 bytes"), "{err}");
    }

    #[test]
    fn options_are_validated_and_typed() {
        let s: Spec = "g:rows=5,time=250ms".parse().unwrap();
        let o = s.options("game g", PARAMS).unwrap();
        assert_eq!(o.get_in::<u8>("rows", 4..=8).unwrap(), 5);
        assert_eq!(o.get_duration("time").unwrap(), Some(Duration::from_millis(250)));
        assert!(!o.get_bool("fast").unwrap());

        let s: Spec = "g:rows=9".parse().unwrap();
        let err = s.options("game g", PARAMS).unwrap().get_in::<u8>("rows", 4..=8).unwrap_err();
        assert_eq!(err.to_string(), "game g: bad value '9' for 'rows'; expected integer 4..=8");

        let s: Spec = "g:colz=9".parse().unwrap();
        let err = s.options("game g", PARAMS).unwrap_err();
        assert!(err.to_string().contains("unknown option 'colz'"), "{err}");
        assert!(err.to_string().contains("rows (integer 4..=8)"), "{err}");

        let s: Spec = "g:rows=5,rows=6".parse().unwrap();
        assert!(s.options("game g", PARAMS).unwrap_err().to_string().contains("given twice"));
    }

    #[test]
    fn durations_beyond_the_limit_are_refused_with_it() {
        let s: Spec = "g:time=9300000000000000000s".parse().unwrap();
        let err = s.options("agent g", PARAMS).unwrap().get_duration("time").unwrap_err().to_string();
        assert_eq!(
            err,
            "agent g: bad value '9300000000000000000s' for 'time'; expected duration like 500ms, at most 7 days (168h)"
        );
        let s: Spec = "g:time=168h".parse().unwrap();
        assert_eq!(s.options("agent g", PARAMS).unwrap().get_duration("time").unwrap(), Some(MAX_MOVE_TIME));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64mb"), Some(64 << 20));
        assert_eq!(parse_size("1GB"), Some(1 << 30));
        assert_eq!(parse_size("512kb"), Some(512 << 10));
        assert_eq!(parse_size("100"), Some(100));
        for bad in ["", "mb", "-1mb", "12 parsecs", "1e99gb"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("10us"), Some(Duration::from_micros(10)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        for bad in ["", "ms", "-1s", "5 parsecs", "1.2.3s", "inf"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
