//! sprig's `semver` returns Masterminds/semver's `*Version`, which templates print (`1.2.0` for
//! `v1.2`) and read with methods (`(semver .v).Minor`). Masterminds parses loosely (a `v`
//! prefix, missing minor and patch) where the semver crate is strict, so the parse is its own.

use std::sync::OnceLock;

/// A parsed version and the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct GoVersion {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

/// What a version's method returns.
pub enum Field {
    Int(u64),
    Str(String),
}

impl GoVersion {
    /// Masterminds' `NewVersion`, with its error texts.
    pub fn parse(v: &str) -> Result<GoVersion, String> {
        static RE: OnceLock<regex::Regex> = OnceLock::new();
        let re = RE.get_or_init(|| {
            regex::Regex::new(concat!(
                r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?",
                r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?",
                r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
            ))
            .unwrap_or_else(|_| unreachable!("the pattern is a constant"))
        });
        let m = re.captures(v).ok_or("Invalid Semantic Version")?;
        let segment = |i: usize| -> Result<u64, String> {
            m.get(i).map_or(Ok(0), |s| {
                s.as_str()
                    .trim_start_matches('.')
                    .parse()
                    .map_err(|e| format!("Error parsing version segment: {e}"))
            })
        };
        let pre = m.get(5).map_or("", |s| s.as_str()).to_string();
        for part in pre.split('.').filter(|p| !p.is_empty()) {
            if part.len() > 1 && part.starts_with('0') && part.bytes().all(|c| c.is_ascii_digit()) {
                return Err("Version segment starts with 0".into());
            }
        }
        Ok(GoVersion {
            major: segment(1)?,
            minor: segment(2)?,
            patch: segment(3)?,
            pre,
            metadata: m.get(8).map_or("", |s| s.as_str()).to_string(),
            original: v.to_string(),
        })
    }

    /// `Version.String()`: the canonical form.
    pub fn go_string(&self) -> String {
        let mut s = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            s.push('-');
            s.push_str(&self.pre);
        }
        if !self.metadata.is_empty() {
            s.push('+');
            s.push_str(&self.metadata);
        }
        s
    }

    /// `%#v` of the pointer: Go's struct syntax, unsigned numbers in hex.
    /// The struct's fields, in order: major, minor, patch, prerelease, metadata, original.
    pub fn fields(&self) -> (u64, u64, u64, [&str; 3]) {
        (
            self.major,
            self.minor,
            self.patch,
            [&self.pre, &self.metadata, &self.original],
        )
    }

    pub fn go_syntax(&self) -> String {
        format!(
            "&semver.Version{{major:{:#x}, minor:{:#x}, patch:{:#x}, pre:{:?}, metadata:{:?}, original:{:?}}}",
            self.major, self.minor, self.patch, self.pre, self.metadata, self.original
        )
    }

    /// The methods templates call without arguments.
    pub fn method(&self, name: &str) -> Option<Field> {
        Some(match name {
            "Major" => Field::Int(self.major),
            "Minor" => Field::Int(self.minor),
            "Patch" => Field::Int(self.patch),
            "Prerelease" => Field::Str(self.pre.clone()),
            "Metadata" => Field::Str(self.metadata.clone()),
            "Original" => Field::Str(self.original.clone()),
            "String" => Field::Str(self.go_string()),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_masterminds_does() {
        assert_eq!(GoVersion::parse("v1.2").unwrap().go_string(), "1.2.0");
        let v = GoVersion::parse("1.2.3-beta.1+b5").unwrap();
        assert_eq!(v.go_string(), "1.2.3-beta.1+b5");
        assert!(matches!(v.method("Minor"), Some(Field::Int(2))));
        assert!(GoVersion::parse("x1").is_err());
        assert!(GoVersion::parse("1.2.3-01").is_err());
    }
}
