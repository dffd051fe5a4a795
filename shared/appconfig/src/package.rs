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
    #[error("{path}: the file is larger than {limit} bytes")]
    FileTooLarge { path: String, limit: u64 },
    #[error(
        "{path}: a link to {target}, outside the repository that holds the package ({boundary}); \
         links are followed only inside it"
    )]
    LinkOutside {
        path: String,
        target: PathBuf,
        boundary: PathBuf,
    },
    #[error("{path}: a link whose target does not exist")]
    BrokenLink { path: String },
    #[error(
        "{path}: not a regular file or directory ({kind}); packages hold only files and directories"
    )]
    SpecialFile { path: String, kind: &'static str },
    #[error("{path}: a link back into a directory it is inside of")]
    LinkLoop { path: String },
    #[error("not a package bundle: {0}")]
    Bundle(String),
}

/// Packages are configuration and scripts; anything larger is almost certainly a mistake (a vendored
/// `node_modules`, a build output) and would be slow to upload on every sync.
pub const MAX_PACKAGE_BYTES: u64 = 32 * 1024 * 1024;
/// One file of a package: TOML, scripts, charts, modules. Larger is a mistake or an attack.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Directories skipped when reading a package: version control, tool caches, editors.
const SKIPPED_DIRS: &[&str] = &[".git", ".terraform", "node_modules", ".idea", ".vscode"];

impl Package {
    /// Reads every file below `dir`, skipping version-control and editor directories.
    ///
    /// A package is untrusted input. Links are followed (packages in monorepos link shared folders)
    /// only while their target stays inside the repository holding the package: the nearest
    /// enclosing git work tree, or the package directory when there is none. Anything that is not a
    /// regular file or directory (a FIFO, a device, a socket) is refused before it is opened, so
    /// reading can neither block nor run out of memory.
    pub fn from_dir(dir: &Path) -> Result<Package, PackageError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PackageError::Io { path, source }
        };
        if !dir.is_dir() {
            return Err(PackageError::NotADirectory(dir.to_path_buf()));
        }
        let root = std::fs::canonicalize(dir).map_err(io(dir))?;
        let boundary = repository_root(&root);
        let mut reader = Reader {
            boundary,
            pkg: Package::default(),
            total: 0,
        };
        let mut stack = vec![Walk {
            dir: root.clone(),
            rel: String::new(),
            chain: vec![root],
        }];
        while let Some(w) = stack.pop() {
            for entry in std::fs::read_dir(&w.dir).map_err(io(&w.dir))? {
                let entry = entry.map_err(io(&w.dir))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if w.rel.is_empty() {
                    name.clone()
                } else {
                    format!("{}/{name}", w.rel)
                };
                if let Some(sub) = reader.entry(&entry.path(), &name, rel, &w.chain)? {
                    stack.push(sub);
                }
            }
        }
        Ok(reader.pkg)
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
        if let Some((path, _)) = files.iter().find(|(_, b)| b.len() as u64 > MAX_FILE_BYTES) {
            return Err(PackageError::FileTooLarge {
                path: path.clone(),
                limit: MAX_FILE_BYTES,
            });
        }
        if files.values().map(|b| b.len() as u64).sum::<u64>() > MAX_PACKAGE_BYTES {
            return Err(PackageError::TooLarge {
                limit: MAX_PACKAGE_BYTES,
            });
        }
        Ok(Package { files })
    }

    /// `sha256:<hex>` over every file's path and content.
    pub fn content_hash(&self) -> String {
        hash_files(self.files.iter())
    }
}

/// The nearest directory at or above `dir` holding `.git` (a work tree), or `dir` itself: the
/// boundary that links and `file://` references of a package must stay inside.
pub fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

struct Reader {
    boundary: PathBuf,
    pkg: Package,
    total: u64,
}

/// A directory still to be read.
struct Walk {
    /// Where it really is (a link's target).
    dir: PathBuf,
    /// Its path in the package.
    rel: String,
    /// The real directories from the root down to it: a link to one of them would loop.
    chain: Vec<PathBuf>,
}

impl Reader {
    /// Reads one directory entry: a file is added, a directory is returned to be walked.
    fn entry(
        &mut self,
        path: &Path,
        name: &str,
        rel: String,
        chain: &[PathBuf],
    ) -> Result<Option<Walk>, PackageError> {
        let io = |source| PackageError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        let (real, meta) = if meta.file_type().is_symlink() {
            let Ok(target) = std::fs::canonicalize(path) else {
                return Err(PackageError::BrokenLink { path: rel });
            };
            if !target.starts_with(&self.boundary) {
                return Err(PackageError::LinkOutside {
                    path: rel,
                    target,
                    boundary: self.boundary.clone(),
                });
            }
            let meta = std::fs::metadata(&target).map_err(io)?;
            (target, meta)
        } else {
            (path.to_path_buf(), meta)
        };
        if meta.is_dir() {
            if SKIPPED_DIRS.contains(&name) {
                return Ok(None);
            }
            let canonical = std::fs::canonicalize(&real).map_err(io)?;
            if chain.contains(&canonical) {
                return Err(PackageError::LinkLoop { path: rel });
            }
            let mut chain = chain.to_vec();
            chain.push(canonical);
            return Ok(Some(Walk {
                dir: real,
                rel,
                chain,
            }));
        }
        if name == ".git" {
            // A linked work tree's `.git` is a file naming the real repository.
            return Ok(None);
        }
        if !meta.is_file() {
            return Err(PackageError::SpecialFile {
                path: rel,
                kind: special_kind(&meta),
            });
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(PackageError::FileTooLarge {
                path: rel,
                limit: MAX_FILE_BYTES,
            });
        }
        let bytes = read_bounded(&real, MAX_FILE_BYTES).map_err(io)?;
        let Some(bytes) = bytes else {
            return Err(PackageError::FileTooLarge {
                path: rel,
                limit: MAX_FILE_BYTES,
            });
        };
        self.total += bytes.len() as u64;
        if self.total > MAX_PACKAGE_BYTES {
            return Err(PackageError::TooLarge {
                limit: MAX_PACKAGE_BYTES,
            });
        }
        self.pkg.files.insert(rel, bytes);
        Ok(None)
    }
}

/// Reads at most `limit` bytes, checking on the opened handle that it is still a regular file
/// (the path may have been swapped since it was looked at). `None` when the file is larger.
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "a special file"
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
