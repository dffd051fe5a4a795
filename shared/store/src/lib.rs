//! Typed access to the hub's state of record: repositories over JetStream KV buckets (every write a
//! compare-and-swap on the revision it read), the object stores, and the helpers every service uses to
//! publish to and consume from the streams.
//!
//! Records are org-scoped at this layer: every key is `<org>.<id>`, every read names the org, so no
//! query can see another org's data by forgetting a filter.

mod archive;
mod audit;
mod bus;
pub mod events;
mod feed;
mod limits;
mod logs;
mod packages;
mod recent;
mod repo;
pub mod serve;
mod settled;
mod tasks;
mod written;

pub use archive::{ArchiveError, BoxFuture, LogArchive};
pub use bus::{
    Bus, Handled, consume, consume_messages, consume_messages_by_install,
    consume_messages_in_lanes, lane_key,
};
pub use limits::StreamLimits;
pub use logs::accepted_batch;
pub use packages::{VALIDATE_DEADLINE, ValidateError, deploy_stages, validate_package};
pub use recent::Recent;
pub use repo::{Record, Repo, Versioned};
use settled::Settled;
pub use tasks::{STOP_GRACE, Tasks};
pub use tokio_util::sync::CancellationToken;
pub use written::LastWritten;

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv, object_store, stream};
use ferry_protocol::resources::{self, Retention, StreamDef};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A NATS or JetStream operation failed; the source keeps its kind (retries depend on it).
    #[error("NATS: {0}")]
    Nats(#[source] async_nats::Error),
    /// Creating or opening a stream, bucket or object store failed.
    #[error("setting up {what}: {source}")]
    Setup {
        what: String,
        #[source]
        source: async_nats::Error,
    },
    /// The hub's JetStream store is smaller than the byte caps of the streams: nats-server
    /// reserves each capped stream's `max_bytes` when it is made and refuses one that does not
    /// fit. Apart from [`StoreError::Setup`] because the fix is the operator's, and named.
    #[error(
        "setting up {what}: the hub's JetStream store cannot hold the streams' byte caps ({} MiB together, docs/security.md): raise max_file_store in the hub's config or lower the caps (ferry-server --logs-max-bytes and the like)",
        reserved >> 20
    )]
    StoreTooSmall {
        what: String,
        reserved: i64,
        #[source]
        source: async_nats::Error,
    },
    #[error("timed out {0}")]
    Timeout(&'static str),
    /// A subscription a service serves on ended (its connection closed for good).
    #[error("the {0} subscription ended")]
    SubscriptionEnded(&'static str),
    /// A stream that must never lose a message (`AUDIT`) is gone or was reconfigured.
    #[error(
        "the {stream} stream {problem}: refusing to start (an operator must restore it with the hub's admin credentials)"
    )]
    Protected {
        stream: &'static str,
        problem: String,
    },
    #[error("{bucket}/{key} was changed by someone else (stale revision)")]
    Conflict { bucket: &'static str, key: String },
    #[error("{bucket}/{key} already exists")]
    AlreadyExists { bucket: &'static str, key: String },
    #[error("{bucket}/{key} not found")]
    NotFound { bucket: &'static str, key: String },
    #[error("{bucket}/{key} holds an unreadable record: {reason}")]
    Corrupt {
        bucket: &'static str,
        key: String,
        reason: String,
    },
    /// A stored package that cannot be used (no longer validates, or validation did not finish).
    #[error("app config {config_id}: {reason}")]
    Package { config_id: String, reason: String },
    /// The external job log archive failed (`archive.rs`).
    #[error("job log archive: {0}")]
    Archive(#[from] ArchiveError),
    /// NATS failed reading or writing an object; the source keeps its kind, so that a put cut
    /// by a hub's failover is retried like any other NATS error, not taken for a bad object.
    #[error("object {bucket}/{name}: {source}")]
    ObjectNats {
        bucket: &'static str,
        name: String,
        #[source]
        source: async_nats::Error,
    },
    #[error("object {bucket}/{name}: {reason}")]
    Object {
        bucket: &'static str,
        name: String,
        reason: String,
    },
}

pub(crate) fn nats<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    StoreError::Nats(Box::new(e))
}

/// [`StoreError::ObjectNats`] for object `name` of `bucket`.
fn object_nats<E: std::error::Error + Send + Sync + 'static>(
    bucket: &'static str,
    name: &str,
) -> impl FnOnce(E) -> StoreError {
    let name = name.to_string();
    move |e| StoreError::ObjectNats {
        bucket,
        name,
        source: Box::new(e),
    }
}

fn setup<E: std::error::Error + Send + Sync + 'static>(
    what: String,
) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError::Setup {
        what,
        source: Box::new(e),
    }
}

/// [`setup`] for making or updating a capped stream: a refusal for want of store room becomes
/// [`StoreError::StoreTooSmall`].
fn stream_setup(
    what: String,
    limits: &StreamLimits,
) -> impl FnOnce(jetstream::context::CreateStreamError) -> StoreError {
    let reserved = limits.reserved();
    move |e| match e.kind() {
        jetstream::context::CreateStreamErrorKind::JetStream(j)
            if j.error_code() == jetstream::ErrorCode::STORAGE_RESOURCES_EXCEEDED =>
        {
            StoreError::StoreTooSmall {
                what,
                reserved,
                source: Box::new(e),
            }
        }
        _ => setup(what)(e),
    }
}

/// Handles on every bucket and object store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub js: jetstream::Context,
    /// Shared, not copied: every API request and open stream clones the store, and a copy of
    /// every bucket's handle is tens of kilobytes.
    buckets: std::sync::Arc<HashMap<&'static str, std::sync::Arc<kv::Store>>>,
    objects: std::sync::Arc<HashMap<&'static str, object_store::ObjectStore>>,
    /// Objects of the immutable stores read lately (`recent.rs`).
    recent: Recent,
    /// Records read that can no longer change (`settled.rs`), shared by every clone.
    settled: Settled,
    /// Where job logs are archived, when not in the hub (`archive.rs`).
    log_archive: Option<std::sync::Arc<dyn LogArchive>>,
    /// Bytes of text a whole job log is read up to (`logs.rs`).
    job_log_limit: usize,
}

impl Store {
    /// Creates (or updates) every stream, bucket and object store, then opens them. Idempotent: every
    /// service runs it at start-up, concurrently with its replicas.
    pub async fn ensure(js: jetstream::Context, replicas: usize) -> Result<Store, StoreError> {
        Store::ensure_with(js, replicas, &StreamLimits::default()).await
    }

    /// [`Store::ensure`] with the operator's stream caps (an existing stream is updated to them).
    pub async fn ensure_with(
        js: jetstream::Context,
        replicas: usize,
        limits: &StreamLimits,
    ) -> Result<Store, StoreError> {
        // A hub Ferry has never set up has none of its streams yet. `JOBS` is the mark of a hub set
        // up: the protected streams are made before any other, so a process that sees `JOBS` (made by
        // another starting at the same moment: `ferry-server` and `ferry-server init`, or replicas)
        // also sees them, and never takes a stream still being made for one that was deleted.
        let fresh = js.get_stream(resources::JOBS.name).await.is_err();
        for def in resources::STREAMS.iter().filter(|d| d.deny_delete) {
            ensure_protected(&js, def, replicas, fresh).await?;
        }
        for def in resources::STREAMS.iter().filter(|d| !d.deny_delete) {
            // A process started with fewer replicas (`ferry-server init` without `--replicas`,
            // a replica of one service) never scales a cluster's streams down.
            let (have, have_cap) = replicas_and_cap(&js, def.name).await;
            let mut config = stream_config(def, replicas.max(have));
            config.max_bytes = match limits.max_bytes(def, have_cap) {
                0 => -1,
                n => n,
            };
            js.create_or_update_stream(config)
                .await
                .map_err(stream_setup(format!("stream {}", def.name), limits))?;
        }
        let mut buckets = HashMap::new();
        for &name in resources::buckets::ALL {
            let what = || format!("KV bucket {name}");
            if js.get_key_value(name).await.is_err() {
                js.create_key_value(kv::Config {
                    bucket: name.to_string(),
                    history: resources::buckets::HISTORY,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(setup(what()))?;
            }
            leader_reads(&js, &format!("KV_{name}")).await?;
            // Opened after the stream's read mode is settled: a handle keeps the mode it saw.
            let kv = js.get_key_value(name).await.map_err(setup(what()))?;
            buckets.insert(name, std::sync::Arc::new(kv));
        }
        ensure_events(&js, replicas, limits).await?;
        let mut objects = HashMap::new();
        for &name in resources::objects::ALL {
            let what = || format!("object store {name}");
            if js.get_object_store(name).await.is_err() {
                js.create_object_store(object_store::Config {
                    bucket: name.to_string(),
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(setup(what()))?;
            }
            leader_reads(&js, &format!("OBJ_{name}")).await?;
            let os = js.get_object_store(name).await.map_err(setup(what()))?;
            objects.insert(name, os);
        }
        Ok(Store {
            js,
            buckets: std::sync::Arc::new(buckets),
            objects: std::sync::Arc::new(objects),
            recent: Recent::default(),
            settled: Settled::default(),
            log_archive: None,
            job_log_limit: logs::JOB_LOG_LIMIT,
        })
    }

    /// Opens what [`Store::ensure`] set up, creating nothing: for a connection whose user may
    /// read and write records but not create streams (each service's own).
    pub async fn open(js: jetstream::Context) -> Result<Store, StoreError> {
        let mut buckets = HashMap::new();
        for &name in resources::buckets::ALL {
            let kv = js
                .get_key_value(name)
                .await
                .map_err(setup(format!("KV bucket {name}")))?;
            buckets.insert(name, std::sync::Arc::new(kv));
        }
        let mut objects = HashMap::new();
        for &name in resources::objects::ALL {
            let os = js
                .get_object_store(name)
                .await
                .map_err(setup(format!("object store {name}")))?;
            objects.insert(name, os);
        }
        Ok(Store {
            js,
            buckets: std::sync::Arc::new(buckets),
            objects: std::sync::Arc::new(objects),
            recent: Recent::default(),
            settled: Settled::default(),
            log_archive: None,
            job_log_limit: logs::JOB_LOG_LIMIT,
        })
    }

    /// This store reading a whole job log up to `bytes` of text (tests use a small one).
    pub fn with_job_log_limit(mut self, bytes: usize) -> Store {
        self.job_log_limit = bytes;
        self
    }

    /// This store with job logs archived in `archive` instead of the hub.
    pub fn with_log_archive(mut self, archive: std::sync::Arc<dyn LogArchive>) -> Store {
        self.log_archive = Some(archive);
        self
    }

    pub fn repo<T: Record>(&self) -> Repo<T> {
        // Every Record's BUCKET is one of resources::buckets::ALL, all opened by ensure().
        let kv = self
            .buckets
            .get(T::BUCKET)
            .cloned()
            .unwrap_or_else(|| unreachable!("bucket {} not opened", T::BUCKET));
        Repo::new(kv, self.settled.clone())
    }

    pub fn bus(&self) -> Bus {
        Bus::new(self.js.clone())
    }

    fn object_store(&self, bucket: &'static str) -> Result<&object_store::ObjectStore, StoreError> {
        self.objects.get(bucket).ok_or_else(|| StoreError::Object {
            bucket,
            name: String::new(),
            reason: "object store not opened".into(),
        })
    }

    pub async fn put_object(
        &self,
        bucket: &'static str,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let os = self.object_store(bucket)?;
        let mut reader = bytes;
        os.put(name, &mut reader)
            .await
            .map_err(object_nats(bucket, name))?;
        Ok(())
    }

    /// Removes an object (idempotent).
    pub async fn delete_object(&self, bucket: &'static str, name: &str) -> Result<(), StoreError> {
        let os = self.object_store(bucket)?;
        match os.delete(name).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == object_store::DeleteErrorKind::NotFound => Ok(()),
            Err(e) => Err(object_nats(bucket, name)(e)),
        }
    }

    /// The object's bytes, or `None` if there is no such object.
    pub async fn get_object(
        &self,
        bucket: &'static str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        use tokio::io::AsyncReadExt;
        let immutable = resources::objects::IMMUTABLE.contains(&bucket);
        let key = format!("{bucket}/{name}");
        if immutable && let Some(bytes) = self.recent.get(&key) {
            return Ok(Some(bytes.to_vec()));
        }
        let os = self.object_store(bucket)?;
        let mut obj = match os.get(name).await {
            Ok(o) => o,
            Err(e) if e.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(object_nats(bucket, name)(e)),
        };
        let mut buf = Vec::new();
        obj.read_to_end(&mut buf)
            .await
            .map_err(object_nats(bucket, name))?;
        if immutable {
            self.recent.put(key, std::sync::Arc::new(buf.clone()));
        }
        Ok(Some(buf))
    }

    /// The first `chunks` messages on `subject` in `stream`, joined (read by direct get), or
    /// `None` if fewer are there or they pass `limit` bytes.
    pub async fn read_chunks(
        &self,
        stream: &'static str,
        subject: &str,
        chunks: u32,
        limit: usize,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        use async_nats::jetstream::stream::DirectGetErrorKind;
        let s = self.js.get_stream_no_info(stream).await.map_err(nats)?;
        let (mut out, mut after) = (Vec::new(), 0u64);
        for _ in 0..chunks {
            match s
                .direct_get_next_for_subject(subject, Some(after + 1))
                .await
            {
                Ok(m) => {
                    after = m.sequence;
                    out.extend_from_slice(&m.payload);
                    if out.len() > limit {
                        return Ok(None);
                    }
                }
                Err(e) if e.kind() == DirectGetErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(nats(e)),
            }
        }
        Ok(Some(out))
    }

    /// Removes every message on `subject` from `stream`.
    pub async fn purge_subject(
        &self,
        stream: &'static str,
        subject: &str,
    ) -> Result<(), StoreError> {
        let s = self.js.get_stream_no_info(stream).await.map_err(nats)?;
        s.purge().filter(subject).await.map_err(nats)?;
        Ok(())
    }

    /// An app config version's record and its package files.
    pub async fn package(
        &self,
        org: &str,
        config_id: &str,
    ) -> Result<(ferry_model::AppConfigVersion, ferry_appconfig::Package), StoreError> {
        let rec = self
            .repo::<ferry_model::AppConfigVersion>()
            .require(org, config_id)
            .await?
            .value;
        let bucket = resources::objects::APP_SOURCES;
        let bytes = self
            .get_object(bucket, &rec.source_object)
            .await?
            .ok_or_else(|| StoreError::Object {
                bucket,
                name: rec.source_object.clone(),
                reason: "package files missing".into(),
            })?;
        let pkg =
            ferry_appconfig::Package::from_bundle(&bytes).map_err(|e| StoreError::Object {
                bucket,
                name: rec.source_object.clone(),
                reason: e.to_string(),
            })?;
        Ok((rec, pkg))
    }

    pub async fn object_exists(
        &self,
        bucket: &'static str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let os = self.object_store(bucket)?;
        match os.info(name).await {
            Ok(info) => Ok(!info.deleted),
            Err(e) if e.kind() == object_store::InfoErrorKind::NotFound => Ok(false),
            Err(e) => Err(object_nats(bucket, name)(e)),
        }
    }
}

/// The replicas and byte cap stream `name` has now; `(0, 0)` for a stream not made yet.
async fn replicas_and_cap(js: &jetstream::Context, name: &str) -> (usize, i64) {
    match js.get_stream(name).await {
        Ok(mut s) => s
            .info()
            .await
            .map(|i| (i.config.num_replicas, i.config.max_bytes))
            .unwrap_or((0, 0)),
        Err(_) => (0, 0),
    }
}

/// The `EVENTS` stream, sourcing every write of the watched buckets (`resources::events`). Made
/// after the buckets, which it reads from; a cluster's replica count is never lowered.
async fn ensure_events(
    js: &jetstream::Context,
    replicas: usize,
    limits: &StreamLimits,
) -> Result<(), StoreError> {
    use resources::events;
    let (have, have_cap) = replicas_and_cap(js, events::STREAM).await;
    let max_bytes = limits.events_max_bytes(have_cap);
    let sources = events::SOURCES
        .iter()
        .map(|b| stream::Source {
            name: format!("KV_{b}"),
            ..Default::default()
        })
        .collect();
    js.create_or_update_stream(stream::Config {
        name: events::STREAM.to_string(),
        sources: Some(sources),
        max_age: Duration::from_secs(events::MAX_AGE_SECS),
        max_bytes: if max_bytes > 0 { max_bytes } else { -1 },
        num_replicas: replicas.max(have),
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(stream_setup(format!("stream {}", events::STREAM), limits))?;
    Ok(())
}

/// Makes a replicated bucket's reads go to its stream's leader.
///
/// Buckets and object stores are made with `allow_direct`, so that any replica answers a read.
/// A follower may not have applied the latest write yet, and Ferry reads a record, decides, and
/// writes it back by compare-and-swap: a stale read is a decision on a state that is gone (a
/// three-node hub failed a deploy with "no build recorded" for a build step that had one). With
/// one replica there is no follower, and direct reads stay.
async fn leader_reads(js: &jetstream::Context, stream: &str) -> Result<(), StoreError> {
    let mut s = js
        .get_stream(stream)
        .await
        .map_err(setup(format!("stream {stream}")))?;
    let config = &s
        .info()
        .await
        .map_err(setup(format!("stream {stream}")))?
        .config;
    if config.num_replicas <= 1 || !config.allow_direct {
        return Ok(());
    }
    let config = stream::Config {
        allow_direct: false,
        ..config.clone()
    };
    js.update_stream(config)
        .await
        .map_err(setup(format!("stream {stream}")))?;
    Ok(())
}

/// A stream that must never lose a message is created once, on a fresh hub, and afterwards only
/// checked: were it missing or reconfigured (a `max_msgs` of 1 truncates it as surely as a purge),
/// updating it back would hide what happened, so the services refuse to start instead.
async fn ensure_protected(
    js: &jetstream::Context,
    def: &StreamDef,
    replicas: usize,
    fresh: bool,
) -> Result<(), StoreError> {
    let want = stream_config(def, replicas);
    let protected = |problem: String| StoreError::Protected {
        stream: def.name,
        problem,
    };
    let mut s = match js.get_stream(def.name).await {
        Ok(s) => s,
        Err(_) if fresh => {
            js.create_stream(want)
                .await
                .map_err(setup(format!("stream {}", def.name)))?;
            return Ok(());
        }
        Err(_) => return Err(protected("is missing (it was deleted)".into())),
    };
    let have = s
        .info()
        .await
        .map_err(setup(format!("stream {}", def.name)))?
        .config
        .clone();
    let changed = reconfigured(&want, &have);
    if changed.is_empty() {
        Ok(())
    } else {
        Err(protected(format!(
            "was reconfigured: {}",
            changed.join(", ")
        )))
    }
}

/// What of a protected stream's configuration differs from what Ferry set up.
fn reconfigured(want: &stream::Config, have: &stream::Config) -> Vec<String> {
    let mut changed = Vec::new();
    let mut differs = |what: &str, a: String, b: String| {
        if a != b {
            changed.push(format!("{what} {b} (should be {a})"));
        }
    };
    differs(
        "subjects",
        format!("{:?}", want.subjects),
        format!("{:?}", have.subjects),
    );
    differs(
        "retention",
        format!("{:?}", want.retention),
        format!("{:?}", have.retention),
    );
    differs(
        "max_age",
        format!("{:?}", want.max_age),
        format!("{:?}", have.max_age),
    );
    // 0 and -1 both mean "no limit" (the client's default and the server's).
    let limit = |n: i64| {
        if n <= 0 {
            "none".to_string()
        } else {
            n.to_string()
        }
    };
    differs(
        "max_msgs",
        limit(want.max_messages),
        limit(have.max_messages),
    );
    differs("max_bytes", limit(want.max_bytes), limit(have.max_bytes));
    differs(
        "max_msgs_per_subject",
        limit(want.max_messages_per_subject),
        limit(have.max_messages_per_subject),
    );
    differs(
        "deny_delete",
        want.deny_delete.to_string(),
        have.deny_delete.to_string(),
    );
    differs(
        "deny_purge",
        want.deny_purge.to_string(),
        have.deny_purge.to_string(),
    );
    differs(
        "storage",
        format!("{:?}", want.storage),
        format!("{:?}", have.storage),
    );
    changed
}

fn stream_config(def: &StreamDef, replicas: usize) -> stream::Config {
    stream::Config {
        name: def.name.to_string(),
        subjects: def.subjects.iter().map(|s| s.to_string()).collect(),
        retention: match def.retention {
            Retention::Limits => stream::RetentionPolicy::Limits,
            Retention::WorkQueue => stream::RetentionPolicy::WorkQueue,
        },
        max_age: Duration::from_secs(def.max_age_secs),
        duplicate_window: Duration::from_secs(def.duplicate_window_secs),
        deny_delete: def.deny_delete,
        deny_purge: def.deny_purge,
        num_replicas: replicas,
        max_consumers: def.max_consumers,
        allow_direct: def.direct.allowed(replicas),
        storage: stream::StorageType::File,
        max_bytes: if def.max_bytes > 0 { def.max_bytes } else { -1 },
        max_message_size: if def.max_msg_size > 0 {
            def.max_msg_size
        } else {
            -1
        },
        // A full stream drops its oldest messages: refusing new ones would stop every
        // install's newest work because one filled it.
        discard: stream::DiscardPolicy::Old,
        ..Default::default()
    }
}
