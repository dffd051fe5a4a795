use std::fmt;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding, located in a file of the package. Lines and columns are 1-based; columns count
/// characters, as editors do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.file, self.line, self.column, sev, self.message
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(transparent)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl Diagnostics {
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Warning)
    }

    pub(crate) fn push(
        &mut self,
        file: &str,
        src: &str,
        offset: usize,
        severity: Severity,
        message: impl Into<String>,
    ) {
        let (line, column) = line_col(src, offset);
        self.0.push(Diagnostic {
            file: file.to_string(),
            line,
            column,
            severity,
            message: message.into(),
        });
    }

    /// File, line, column order; errors before warnings at the same place; no exact repeats.
    pub(crate) fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column, a.severity as u8).cmp(&(
                &b.file,
                b.line,
                b.column,
                b.severity as u8,
            ))
        });
        self.0.dedup();
    }
}

/// 1-based line and character column of a byte offset.
pub(crate) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_col;

    #[test]
    fn lines_and_columns() {
        let s = "ab\ncdé\nf";
        assert_eq!(line_col(s, 0), (1, 1));
        assert_eq!(line_col(s, 3), (2, 1));
        assert_eq!(line_col(s, 7), (2, 4));
        assert_eq!(line_col(s, 6), (2, 3), "inside a character: its start");
        assert_eq!(line_col(s, 8), (3, 1));
        assert_eq!(line_col(s, 999), (3, 2));
    }
}
