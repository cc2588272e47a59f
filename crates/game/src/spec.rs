use crate::Error;
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
        let bad = |reason: &str| Error::BadSpec { spec: text.to_string(), reason: reason.to_string() };
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

/// Splits on commas outside brackets.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
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

    /// Reads `key` as a duration (`500ms`, `2s`, `1.5s`, `100us`, `1m`); `None` when unset.
    pub fn get_duration(&self, key: &str) -> Result<Option<Duration>, Error> {
        let raw = self.raw(key);
        if raw.is_empty() {
            return Ok(None);
        }
        parse_duration(raw).map(Some).ok_or_else(|| self.bad_value(key, raw))
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

/// Parses `500ms`, `2s`, `1.5s`, `250us`, `1m`; a bare number is seconds. `None` if malformed,
/// negative or not finite.
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
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
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
        for bad in ["", "ms", "-1s", "5 parsecs", "1.2.3s", "inf"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
