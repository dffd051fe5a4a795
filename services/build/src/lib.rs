//! The build service: turns a component's source (its directory in the app package) into an OCI
//! artifact in the vendor store and records the artifact's digest on the build record.
//!
//! Builds are keyed by the component's content hash, so an unchanged component is built once and
//! reused by every later config version and install. The vendor store is the `artifacts` JetStream
//! object store (the embedded default) or an OCI registry (`vendor.rs`). A `helm_chart` is packed
//! as Helm's own OCI chart (`helm pull oci://` takes it from a registry); every other component as
//! Ferry's component artifact (its files in one `tar+gzip` layer).

mod serve;
mod vendor;

pub use vendor::Vendor;

use ferry_artifacts::{ArtifactConfig, NatsObjectStore, pack, pack_helm_chart, push};
use ferry_aws::RegistrySite;
use ferry_model as m;
use ferry_protocol::resources::{consumers, objects};
use ferry_protocol::{Control, subjects};
use ferry_store::{Handled, Store, StoreError, consume_messages};
use tracing::{Instrument, info, info_span, warn};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Opening the vendor artifact store failed; the source keeps its kind.
    #[error("NATS: {0}")]
    Nats(#[source] async_nats::Error),
}

#[derive(Clone)]
pub struct BuildService {
    store: Store,
    vendor: Vendor,
    allowed: serve::Allowed,
    blobs: serve::Recent,
    /// The tasks answering artifact reads; stopping waits for them.
    tasks: ferry_store::Tasks,
}

/// What a build made: where, what, how large.
struct Built {
    digest: String,
    size: u64,
    media_type: String,
    repository: String,
}

impl BuildService {
    /// A build service pushing to `registry`, or to the hub's `artifacts` object store.
    pub async fn new(store: Store, registry: Option<RegistrySite>) -> Result<Self, BuildError> {
        let vendor = match registry {
            Some(r) => Vendor::Registry(r),
            None => Vendor::Nats(Box::new(NatsObjectStore::new(
                store
                    .js
                    .get_object_store(objects::ARTIFACTS)
                    .await
                    .map_err(|e| BuildError::Nats(Box::new(e)))?,
            ))),
        };
        Ok(BuildService {
            store,
            vendor,
            allowed: serve::Allowed::default(),
            blobs: serve::Recent::default(),
            tasks: ferry_store::Tasks::default(),
        })
    }

    /// Stops (after the artifact reads in flight are answered) when `stop` is cancelled.
    pub fn with_stop(mut self, stop: ferry_store::CancellationToken) -> Self {
        self.tasks = ferry_store::Tasks::stopped_by(stop);
        self
    }

    /// Builds on request, and serves the artifacts to installs (`serve.rs`), until an
    /// unrecoverable error or until it is asked to stop.
    pub async fn run(self) -> Result<(), BuildError> {
        let tasks = self.tasks.clone();
        let serving = self.clone().serve_artifacts();
        let building = self.build_requests();
        tasks
            .serve("build", async {
                tokio::try_join!(serving, building)?;
                Ok(())
            })
            .await
    }

    async fn build_requests(self) -> Result<(), BuildError> {
        let consumer = self
            .store
            .bus()
            .durable(
                "CONTROL",
                consumers::BUILD_CONTROL,
                vec![subjects::control_topic(subjects::topic::BUILD)],
            )
            .await?;
        info!("build service started");
        consume_messages(consumer, consumers::BUILD_CONTROL, move |_, c: Control| {
            let s = self.clone();
            async move {
                let Control::BuildRequested {
                    org,
                    build_id,
                    workflow_id,
                    step,
                } = c
                else {
                    return Handled::Done;
                };
                let span =
                    info_span!("build", org = %org, build = %build_id, workflow = %workflow_id);
                match s
                    .handle(&org, &build_id, &workflow_id, step)
                    .instrument(span)
                    .await
                {
                    Ok(()) => Handled::Done,
                    Err(e) => Handled::Retry(e.to_string()),
                }
            }
        })
        .await?;
        Ok(())
    }

    async fn handle(
        &self,
        org: &str,
        build_id: &str,
        workflow_id: &str,
        step: u32,
    ) -> Result<(), BuildError> {
        let builds = self.store.repo::<m::Build>();
        let build = builds.require(org, build_id).await?.value;
        let (ok, error) = match build.status {
            m::BuildStatus::Succeeded => (true, None),
            m::BuildStatus::Failed => (false, build.error.clone()),
            m::BuildStatus::Building => {
                let result = self.build(&build).await;
                let r = builds
                    .modify(org, build_id, |b| {
                        if b.status != m::BuildStatus::Building {
                            return Ok::<bool, ()>(false);
                        }
                        match &result {
                            Ok(built) => {
                                b.status = m::BuildStatus::Succeeded;
                                b.digest = Some(built.digest.clone());
                                b.size = built.size;
                                b.media_type = Some(built.media_type.clone());
                                b.repository = built.repository.clone();
                            }
                            Err(e) => {
                                b.status = m::BuildStatus::Failed;
                                b.error = Some(e.clone());
                            }
                        }
                        b.finished_at = Some(m::now());
                        Ok(true)
                    })
                    .await?;
                let b = r.unwrap_or(build);
                match &result {
                    Ok(b) => {
                        info!(digest = %b.digest, size = b.size, repository = %b.repository, "build succeeded")
                    }
                    Err(e) => warn!(error = %e, "build failed"),
                }
                (b.status == m::BuildStatus::Succeeded, b.error)
            }
        };
        self.store
            .bus()
            .control(&Control::BuildFinished {
                org: org.into(),
                build_id: build_id.into(),
                workflow_id: workflow_id.into(),
                step,
                ok,
                error,
            })
            .await?;
        Ok(())
    }

    /// Packs and pushes the artifact; the error is the user-facing reason the build failed.
    async fn build(&self, build: &m::Build) -> Result<Built, String> {
        let (_, pkg, cfg) = self
            .store
            .config(&build.org, &build.config_id)
            .await
            .map_err(|e| e.to_string())?;
        let component = cfg
            .component(&build.component)
            .ok_or_else(|| format!("component `{}` not in config", build.component))?;
        if !component.kind.deployable() {
            return Err(format!(
                "component `{}` is a `{}`, which this version of Ferry validates but does not \
                 deploy: {} (it deploys {})",
                component.name,
                component.kind.as_str(),
                component.kind.why_not_deployed(),
                ferry_appconfig::ComponentType::deployable_names().join(", ")
            ));
        }
        let directory = match component.directory.as_deref() {
            Some(d) => Some(d),
            None if !component.builds_from_directory() => None,
            None => {
                return Err(format!(
                    "component `{}` has no local `directory`: git sources are not fetched by this version of Ferry",
                    component.name
                ));
            }
        };
        let prefix = format!("{}/", directory.unwrap_or_default().trim_end_matches('/'));
        let files: Vec<(&str, &[u8], bool)> = directory
            .into_iter()
            .flat_map(|d| pkg.under(d))
            .map(|(path, bytes)| {
                (
                    &path[prefix.len()..],
                    bytes.as_slice(),
                    bytes.starts_with(b"#!"),
                )
            })
            .collect();
        let art =
            if component.kind == ferry_appconfig::ComponentType::HelmChart && directory.is_some() {
                pack_helm_chart(files)
            } else {
                pack(
                    &ArtifactConfig {
                        component: component.name.clone(),
                        kind: component.kind.as_str().into(),
                        content_hash: component.content_hash.clone(),
                    },
                    files,
                )
            }
            .map_err(|e| format!("packing `{}`: {e}", component.name))?;
        let vendor = self
            .vendor
            .of(&build.org, &build.app, &build.component)
            .await
            .map_err(|e| format!("the vendor registry: {e}"))?;
        push(&vendor, &art)
            .await
            .map_err(|e| format!("pushing to the vendor store: {e}"))?;
        Ok(Built {
            digest: art.manifest_digest,
            size: art.size,
            media_type: art.media_type,
            repository: self
                .vendor
                .location(&build.org, &build.app, &build.component),
        })
    }
}
