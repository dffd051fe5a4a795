//! Diagnostics: what validation says, each located at a file, line and column.
//!
//! Locating is linear in the package size: each file's line starts are indexed once (on its first
//! diagnostic) and every further diagnostic finds its line by binary search. Computing line and
//! column by scanning from the file's start made a 3 MB file with 100k unknown keys quadratic.

use std::collections::HashMap;
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

#[derive(Debug, Clone, Default, Serialize, thiserror::Error)]
#[serde(transparent)]
pub struct Diagnostics(pub Vec<Diagnostic>, #[serde(skip)] LineIndex);

/// Diagnostics kept per file; past that they are counted, and one closing diagnostic says how many
/// more there were. A file with 100k misspelled keys gives a readable report, fast.
pub const MAX_PER_FILE: usize = 200;

impl PartialEq for Diagnostics {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Diagnostics {}

/// Line starts of each file diagnostics were pushed for, keyed by file name and length (a file of
/// the same name but other content gets a fresh index).
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    starts: HashMap<(String, usize), Vec<usize>>,
    /// Per file: diagnostics kept, and errors and warnings past the cap.
    counts: HashMap<String, (usize, usize, usize)>,
}

impl LineIndex {
    fn locate(&mut self, file: &str, src: &str, offset: usize) -> (usize, usize) {
        let starts = self
            .starts
            .entry((file.to_string(), src.len()))
            .or_insert_with(|| {
                std::iter::once(0)
                    .chain(src.match_indices('\n').map(|(i, _)| i + 1))
                    .collect()
            });
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = starts.partition_point(|&s| s <= offset);
        let line_start = starts[line - 1];
        let column = src[line_start..offset].chars().count() + 1;
        (line, column)
    }
}

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
        let counts = self.1.counts.entry(file.to_string()).or_default();
        if counts.0 >= MAX_PER_FILE {
            match severity {
                Severity::Error => counts.1 += 1,
                Severity::Warning => counts.2 += 1,
            }
            return;
        }
        counts.0 += 1;
        let (line, column) = self.1.locate(file, src, offset);
        self.0.push(Diagnostic {
            file: file.to_string(),
            line,
            column,
            severity,
            message: message.into(),
        });
    }

    /// `--strict`: every warning becomes an error.
    pub fn strict(&mut self) {
        for d in &mut self.0 {
            d.severity = Severity::Error;
        }
    }

    /// Whether `file` has reached its cap: expensive messages (hints) need not be computed.
    pub(crate) fn full(&self, file: &str) -> bool {
        self.1.counts.get(file).is_some_and(|c| c.0 >= MAX_PER_FILE)
    }

    /// File, line, column order; errors before warnings at the same place; no exact repeats. Files
    /// past the cap end with one diagnostic counting what was left out.
    pub(crate) fn sort(&mut self) {
        let mut capped: Vec<(&String, &(usize, usize, usize))> = self
            .1
            .counts
            .iter()
            .filter(|(_, c)| c.1 + c.2 > 0)
            .collect();
        capped.sort();
        for (file, &(_, errors, warnings)) in capped {
            self.0.push(Diagnostic {
                file: file.clone(),
                line: usize::MAX,
                column: 1,
                severity: if errors > 0 {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                message: format!(
                    "{} more errors and {} more warnings in this file are not shown",
                    errors, warnings
                ),
            });
        }
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column, a.severity as u8).cmp(&(
                &b.file,
                b.line,
                b.column,
                b.severity as u8,
            ))
        });
        self.0.dedup();
        // The closing count sorts last in its file; it points at the file's end.
        for d in self.0.iter_mut().filter(|d| d.line == usize::MAX) {
            d.line = self
                .1
                .starts
                .iter()
                .filter(|((f, _), _)| *f == d.file)
                .map(|(_, s)| s.len())
                .max()
                .unwrap_or(1);
        }
        self.1.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn lines_and_columns() {
        let s = "ab\ncdé\nf";
        let mut index = LineIndex::default();
        let mut line_col = |offset| index.locate("f", s, offset);
        assert_eq!(line_col(0), (1, 1));
        assert_eq!(line_col(3), (2, 1));
        assert_eq!(line_col(7), (2, 4));
        assert_eq!(line_col(6), (2, 3), "inside a character: its start");
        assert_eq!(line_col(8), (3, 1));
        assert_eq!(line_col(999), (3, 2));
    }
}
