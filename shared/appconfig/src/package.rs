use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The files of an app package, by path relative to the package root (always `/`-separated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Package {
    pub files: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("the package is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("not a package bundle: {0}")]
    Bundle(String),
}

/// Packages are configuration and scripts; anything larger is almost certainly a mistake (a vendored
/// `node_modules`, a build output) and would be slow to upload on every sync.
pub const MAX_PACKAGE_BYTES: u64 = 32 * 1024 * 1024;

impl Package {
    /// Reads every file below `dir`, skipping version-control and editor directories.
    pub fn from_dir(dir: &Path) -> Result<Package, PackageError> {
        if !dir.is_dir() {
            return Err(PackageError::NotADirectory(dir.to_path_buf()));
        }
        let mut pkg = Package::default();
        let mut total = 0u64;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = std::fs::read_dir(&d).map_err(|source| PackageError::Io {
                path: d.clone(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| PackageError::Io {
                    path: d.clone(),
                    source,
                })?;
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let ft = entry.file_type().map_err(|source| PackageError::Io {
                    path: path.clone(),
                    source,
                })?;
                if ft.is_dir() {
                    if !matches!(
                        name.as_str(),
                        ".git" | ".terraform" | "node_modules" | ".idea" | ".vscode"
                    ) {
                        stack.push(path);
                    }
                    continue;
                }
                let bytes = std::fs::read(&path).map_err(|source| PackageError::Io {
                    path: path.clone(),
                    source,
                })?;
                total += bytes.len() as u64;
                if total > MAX_PACKAGE_BYTES {
                    return Err(PackageError::TooLarge {
                        limit: MAX_PACKAGE_BYTES,
                    });
                }
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                pkg.files.insert(rel, bytes);
            }
        }
        Ok(pkg)
    }

    pub fn text(&self, path: &str) -> Option<&str> {
        self.files
            .get(path)
            .and_then(|b| std::str::from_utf8(b).ok())
    }

    /// Files whose path starts with `dir/` (a directory of the package).
    pub fn under<'a>(
        &'a self,
        dir: &'a str,
    ) -> impl Iterator<Item = (&'a String, &'a Vec<u8>)> + 'a {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.files
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
    }

    pub fn has_dir(&self, dir: &str) -> bool {
        self.under(dir).next().is_some()
    }

    /// The package as one binary blob (postcard: a map of path to bytes), for upload and storage.
    pub fn to_bundle(&self) -> Vec<u8> {
        // A map of strings to byte vectors always serializes.
        postcard::to_stdvec(&self.files).unwrap_or_default()
    }

    pub fn from_bundle(bytes: &[u8]) -> Result<Package, PackageError> {
        let files: BTreeMap<String, Vec<u8>> =
            postcard::from_bytes(bytes).map_err(|e| PackageError::Bundle(e.to_string()))?;
        if files
            .keys()
            .any(|k| k.starts_with('/') || k.split('/').any(|p| p == ".." || p.is_empty()))
        {
            return Err(PackageError::Bundle(
                "file paths must be relative and inside the package".into(),
            ));
        }
        Ok(Package { files })
    }

    /// `sha256:<hex>` over every file's path and content.
    pub fn content_hash(&self) -> String {
        hash_files(self.files.iter())
    }
}

pub(crate) fn hash_files<'a>(files: impl Iterator<Item = (&'a String, &'a Vec<u8>)>) -> String {
    let mut h = Sha256::new();
    for (path, bytes) in files {
        // Length-prefixed so that no two different file sets hash alike.
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}
