//! An OCI distribution registry as an artifact store, through `oci-client` (the distribution
//! protocol, its token dance and chunked pushes are that crate's; Ferry adds only the digest checks).
//!
//! A [`Registry`] is one repository of one registry (`host[:port]/path/name`). Blobs and manifests
//! are addressed by digest; every read is verified here, whatever the registry says.

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use reqwest::header::HeaderValue;

use crate::format::{DOCKER_LIST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE, INDEX_MEDIA_TYPE};
use crate::{ArtifactError, BlobStore, MANIFEST_MEDIA_TYPE, verify};

/// How to authenticate to a registry. Bearer tokens are what a registry's own token service (and
/// ECR's `GetAuthorizationToken`, as basic credentials) hands out.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    Anonymous,
    Basic { user: String, password: String },
    Bearer(String),
}

impl Auth {
    /// From what an operator gives: a token wins, then a user (with its password, empty if none),
    /// else anonymous.
    pub fn from_parts(
        user: Option<String>,
        password: Option<String>,
        token: Option<String>,
    ) -> Auth {
        match (token, user) {
            (Some(t), _) if !t.is_empty() => Auth::Bearer(t),
            (_, Some(user)) if !user.is_empty() => Auth::Basic {
                user,
                password: password.unwrap_or_default(),
            },
            _ => Auth::Anonymous,
        }
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a credential.
        f.write_str(match self {
            Auth::Anonymous => "Anonymous",
            Auth::Basic { .. } => "Basic(***)",
            Auth::Bearer(_) => "Bearer(***)",
        })
    }
}

const ACCEPTED: &[&str] = &[
    MANIFEST_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    DOCKER_MANIFEST_MEDIA_TYPE,
    DOCKER_LIST_MEDIA_TYPE,
];

#[derive(Clone)]
pub struct Registry {
    client: Client,
    auth: RegistryAuth,
    registry: String,
    repository: String,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registry({})", self.location())
    }
}

impl Registry {
    /// A repository: `http://host:port/path` (plain HTTP, for a registry on the host itself),
    /// `https://host/path`, or `host/path` (HTTPS).
    pub fn new(url: &str, auth: Auth) -> Result<Registry, ArtifactError> {
        let (plain, rest) = match url.split_once("://") {
            Some(("http", r)) => (true, r),
            Some(("https" | "oci", r)) => (false, r),
            Some((scheme, _)) => {
                return Err(ArtifactError::Store(format!(
                    "registry `{url}`: unknown scheme `{scheme}` (http, https or none)"
                )));
            }
            None => (false, url),
        };
        let (registry, repository) =
            rest.trim_end_matches('/').split_once('/').ok_or_else(|| {
                ArtifactError::Store(format!(
                    "registry `{url}` names no repository (`host/path`)"
                ))
            })?;
        let protocol = if plain {
            ClientProtocol::HttpsExcept(vec![registry.to_string()])
        } else {
            ClientProtocol::Https
        };
        let client = Client::new(ClientConfig {
            protocol,
            ..Default::default()
        });
        let auth = match auth {
            Auth::Anonymous => RegistryAuth::Anonymous,
            Auth::Basic { user, password } => RegistryAuth::Basic(user, password),
            Auth::Bearer(t) => RegistryAuth::Bearer(t),
        };
        Ok(Registry {
            client,
            auth,
            registry: registry.to_string(),
            repository: repository.to_string(),
        })
    }

    /// Another repository of the same registry, under this one (`<repository>/<name>`).
    pub fn child(&self, name: &str) -> Registry {
        Registry {
            repository: format!("{}/{name}", self.repository),
            ..self.clone()
        }
    }

    /// The repository's path in its registry.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// `host[:port]/repository`, as `helm pull oci://` and image references write it.
    pub fn location(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    fn at(&self, digest_or_tag: &str) -> Reference {
        if digest_or_tag.starts_with("sha256:") {
            Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest_or_tag.to_string(),
            )
        } else {
            Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                digest_or_tag.to_string(),
            )
        }
    }

    fn err(&self, e: oci_client::errors::OciDistributionError) -> ArtifactError {
        ArtifactError::Registry {
            registry: self.location(),
            source: Box::new(e),
        }
    }

    async fn login(&self) {
        self.client
            .store_auth_if_needed(&self.registry, &self.auth)
            .await;
    }

    /// The digest a tag names (its manifest's).
    pub async fn resolve(&self, tag: &str) -> Result<String, ArtifactError> {
        self.login().await;
        let (bytes, _) = self
            .client
            .pull_manifest_raw(&self.at(tag), &self.auth, ACCEPTED)
            .await
            .map_err(|e| self.err(e))?;
        Ok(crate::sha256_digest(&bytes))
    }
}

fn not_found(e: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::OciDistributionError as E;
    match e {
        E::ImageManifestNotFoundError(_) => true,
        E::ServerError { code, .. } => *code == 404,
        E::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                oci_client::errors::OciErrorCode::ManifestUnknown
                    | oci_client::errors::OciErrorCode::BlobUnknown
            )
        }),
        _ => false,
    }
}

impl BlobStore for Registry {
    async fn has_blob(&self, digest: &str) -> Result<bool, ArtifactError> {
        crate::digest_hex(digest)?;
        self.login().await;
        self.client
            .blob_exists(&self.at(digest), digest)
            .await
            .map_err(|e| self.err(e))
    }

    async fn get_blob(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        crate::digest_hex(digest)?;
        self.login().await;
        let desc = OciDescriptor {
            digest: digest.to_string(),
            ..Default::default()
        };
        let mut out = Vec::new();
        match self
            .client
            .pull_blob(&self.at(digest), &desc, &mut out)
            .await
        {
            Ok(()) => {}
            Err(e) if not_found(&e) => return Err(ArtifactError::NotFound(digest.into())),
            Err(e) => return Err(self.err(e)),
        }
        verify(digest, &out)?;
        Ok(out)
    }

    async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        verify(digest, bytes)?;
        self.login().await;
        self.client
            .push_blob(&self.at(digest), bytes.to_vec(), digest)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn has_manifest(&self, digest: &str) -> Result<bool, ArtifactError> {
        match self.get_manifest(digest).await {
            Ok(_) => Ok(true),
            Err(ArtifactError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn get_manifest(&self, digest: &str) -> Result<Vec<u8>, ArtifactError> {
        crate::digest_hex(digest)?;
        self.login().await;
        match self
            .client
            .pull_manifest_raw(&self.at(digest), &self.auth, ACCEPTED)
            .await
        {
            Ok((bytes, _)) => {
                verify(digest, &bytes)?;
                Ok(bytes.to_vec())
            }
            Err(e) if not_found(&e) => Err(ArtifactError::NotFound(digest.into())),
            Err(e) => Err(self.err(e)),
        }
    }

    async fn put_manifest(
        &self,
        digest: &str,
        bytes: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<(), ArtifactError> {
        verify(digest, bytes)?;
        self.login().await;
        let content_type = HeaderValue::from_str(media_type)
            .map_err(|e| ArtifactError::Store(format!("media type `{media_type}`: {e}")))?;
        for at in std::iter::once(digest).chain(tag) {
            self.client
                .push_manifest_raw(&self.at(at), bytes.to_vec(), content_type.clone())
                .await
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }
}
