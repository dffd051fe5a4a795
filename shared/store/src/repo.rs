use std::marker::PhantomData;

use async_nats::jetstream::kv;
use bytes::Bytes;
use futures_util::TryStreamExt;
use serde::{Serialize, de::DeserializeOwned};

use crate::settled::Settled;
use crate::{StoreError, nats};
use ferry_model as m;
use ferry_protocol::resources::buckets;

/// A record kept in a KV bucket under `<org>.<id>`.
pub trait Record: Serialize + DeserializeOwned + Send + Sync {
    const BUCKET: &'static str;
    fn org(&self) -> &str;
    fn id(&self) -> &str;
    /// Whether this record, as read, can never change again: it is then read from the hub once
    /// per process (`settled.rs`). Only for records nothing rewrites or deletes once they say so.
    fn settled(&self) -> bool {
        false
    }
}

macro_rules! record {
    ($t:ty, $bucket:expr, $id:ident) => {
        record!($t, $bucket, $id, |_r| false);
    };
    ($t:ty, $bucket:expr, $id:ident, $settled:expr) => {
        impl Record for $t {
            const BUCKET: &'static str = $bucket;
            fn org(&self) -> &str {
                &self.org
            }
            fn id(&self) -> &str {
                &self.$id
            }
            fn settled(&self) -> bool {
                let settled: fn(&$t) -> bool = $settled;
                settled(self)
            }
        }
    };
}

record!(m::App, buckets::APPS, name);
record!(m::AppConfigVersion, buckets::APP_CONFIGS, id);
record!(m::Build, buckets::BUILDS, id, m::Build::is_settled);
record!(m::Install, buckets::INSTALLS, name);
record!(m::Workflow, buckets::WORKFLOWS, id);
record!(m::OpenWorkflow, buckets::OPEN_WORKFLOWS, id);
record!(m::Job, buckets::JOBS, id);
record!(m::RunnerRecord, buckets::RUNNERS, id);
record!(m::Approval, buckets::APPROVALS, id);
record!(m::ApiToken, buckets::TOKENS, id);
record!(m::BootstrapToken, buckets::BOOTSTRAP_TOKENS, id);
record!(m::IssuedCert, buckets::CERTIFICATES, serial);
record!(m::RunnerAccess, buckets::RUNNER_ACCESS, install);
record!(m::CronMark, buckets::CRON_MARKS, id);
record!(m::GrantMark, buckets::GRANT_MARKS, id);
record!(m::DashboardSession, buckets::SESSIONS, id);
record!(m::Release, buckets::RELEASES, id);
record!(m::OpenRelease, buckets::OPEN_RELEASES, id);

/// A record with the revision it was read at: the revision a compare-and-swap must name.
#[derive(Debug, Clone)]
pub struct Versioned<T> {
    pub value: T,
    pub revision: u64,
}

pub struct Repo<T> {
    /// Shared: a `kv::Store` carries its stream's whole info, and the services make a `Repo` for
    /// nearly every read, so cloning one cost allocations per read (2.6% of the server's CPU
    /// in `loadtest release`).
    kv: std::sync::Arc<kv::Store>,
    settled: Settled,
    _t: PhantomData<T>,
}

impl<T> Clone for Repo<T> {
    fn clone(&self) -> Self {
        Repo {
            kv: self.kv.clone(),
            settled: self.settled.clone(),
            _t: PhantomData,
        }
    }
}

pub(crate) fn key(org: &str, id: &str) -> String {
    format!("{org}.{id}")
}

/// How many times `modify` re-reads and re-applies after losing a compare-and-swap race.
const MAX_CAS_RETRIES: usize = 50;

impl<T: Record> Repo<T> {
    pub(crate) fn new(kv: std::sync::Arc<kv::Store>, settled: Settled) -> Self {
        Repo {
            kv,
            settled,
            _t: PhantomData,
        }
    }

    pub async fn get(&self, org: &str, id: &str) -> Result<Option<Versioned<T>>, StoreError> {
        let k = key(org, id);
        if let Some((bytes, revision)) = self.settled.get(T::BUCKET, &k) {
            let value = decode(&k, &bytes)?;
            return Ok(Some(Versioned { value, revision }));
        }
        let Some(entry) = self.kv.entry(k.clone()).await.map_err(nats)? else {
            return Ok(None);
        };
        if entry.operation != kv::Operation::Put {
            return Ok(None);
        }
        let value: T = decode(&k, &entry.value)?;
        if value.settled() {
            self.settled
                .put(T::BUCKET, &k, entry.value.clone(), entry.revision);
        }
        Ok(Some(Versioned {
            value,
            revision: entry.revision,
        }))
    }

    /// Every record of every org as it is now, then each change as it is written (deletions
    /// skipped), for as long as the caller reads.
    pub async fn watch(
        &self,
    ) -> Result<impl futures_util::Stream<Item = Result<T, StoreError>> + use<T>, StoreError> {
        use futures_util::StreamExt;
        let watch = self.kv.watch_with_history(">").await.map_err(nats)?;
        Ok(watch.filter_map(|entry| async move {
            match entry {
                Err(e) => Some(Err(nats(e))),
                Ok(e) if e.operation != kv::Operation::Put => None,
                Ok(e) => {
                    Some(
                        serde_json::from_slice(&e.value).map_err(|err| StoreError::Corrupt {
                            bucket: T::BUCKET,
                            key: e.key.clone(),
                            reason: err.to_string(),
                        }),
                    )
                }
            }
        }))
    }

    pub async fn require(&self, org: &str, id: &str) -> Result<Versioned<T>, StoreError> {
        self.get(org, id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                bucket: T::BUCKET,
                key: key(org, id),
            })
    }

    /// Stores a new record; fails with `AlreadyExists` if the key is taken.
    pub async fn create(&self, value: &T) -> Result<u64, StoreError> {
        let k = key(value.org(), value.id());
        match self.kv.create(&k, encode(value)).await {
            Ok(rev) => Ok(rev),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                Err(StoreError::AlreadyExists {
                    bucket: T::BUCKET,
                    key: k,
                })
            }
            Err(e) => Err(nats(e)),
        }
    }

    /// Stores a new record unless the key is taken; returns whether it stored it. This is the
    /// idempotent create every retried side effect relies on.
    pub async fn create_if_absent(&self, value: &T) -> Result<bool, StoreError> {
        match self.create(value).await {
            Ok(_) => Ok(true),
            Err(StoreError::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Replaces the record if it is still at `revision`; fails with `Conflict` otherwise.
    pub async fn update(&self, value: &T, revision: u64) -> Result<u64, StoreError> {
        let k = key(value.org(), value.id());
        match self.kv.update(&k, encode(value), revision).await {
            Ok(rev) => Ok(rev),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                Err(StoreError::Conflict {
                    bucket: T::BUCKET,
                    key: k,
                })
            }
            Err(e) => Err(nats(e)),
        }
    }

    /// Read-modify-write with compare-and-swap, retried on conflict. `f` returns `Ok(false)` to leave
    /// the record as it is (no write). Returns the record as stored (or as found, when unchanged).
    pub async fn modify<E>(
        &self,
        org: &str,
        id: &str,
        f: impl FnMut(&mut T) -> Result<bool, E>,
    ) -> Result<Result<T, E>, StoreError> {
        Ok(self.modify_from(None, org, id, f).await?.map(|v| v.value))
    }

    /// [`Repo::modify`] starting from a copy the caller already holds (saving the first read when it
    /// is still current; a stale copy costs one lost compare-and-swap), returning the stored
    /// revision too.
    pub async fn modify_from<E>(
        &self,
        mut known: Option<Versioned<T>>,
        org: &str,
        id: &str,
        mut f: impl FnMut(&mut T) -> Result<bool, E>,
    ) -> Result<Result<Versioned<T>, E>, StoreError> {
        for _ in 0..MAX_CAS_RETRIES {
            let Versioned {
                mut value,
                revision,
            } = match known.take() {
                Some(v) => v,
                None => self.require(org, id).await?,
            };
            match f(&mut value) {
                Err(e) => return Ok(Err(e)),
                Ok(false) => return Ok(Ok(Versioned { value, revision })),
                Ok(true) => {}
            }
            match self.update(&value, revision).await {
                Ok(revision) => return Ok(Ok(Versioned { value, revision })),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict {
            bucket: T::BUCKET,
            key: key(org, id),
        })
    }

    /// [`Repo::modify`] of a record that may not exist yet: `absent` makes it, `f` changes it, and
    /// it is created (a create that loses to another is retried as a modify).
    pub async fn upsert<E>(
        &self,
        org: &str,
        id: &str,
        absent: impl Fn() -> T,
        mut f: impl FnMut(&mut T) -> Result<bool, E>,
    ) -> Result<Result<T, E>, StoreError> {
        for _ in 0..MAX_CAS_RETRIES {
            if let Some(v) = self.get(org, id).await? {
                return Ok(self
                    .modify_from(Some(v), org, id, &mut f)
                    .await?
                    .map(|v| v.value));
            }
            let mut value = absent();
            if let Err(e) = f(&mut value) {
                return Ok(Err(e));
            }
            match self.create(&value).await {
                Ok(_) => return Ok(Ok(value)),
                Err(StoreError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict {
            bucket: T::BUCKET,
            key: key(org, id),
        })
    }

    /// Removes a key without a trace: its subject purged from the bucket's stream, no delete
    /// marker left (a watcher sees nothing). For the open marks, an index a sweep reads whole
    /// every few seconds: a deleted key's marker stays in the stream, so every workflow ever run
    /// would be met again by every pass. The user needs the purge of the bucket's stream
    /// (`ferry_protocol::permissions`).
    pub async fn erase(&self, org: &str, id: &str) -> Result<(), StoreError> {
        let k = key(org, id);
        self.settled.forget(T::BUCKET, &k);
        self.kv
            .stream
            .purge()
            .filter(format!("{}{k}", self.kv.prefix))
            .await
            .map(|_| ())
            .map_err(nats)
    }

    /// Removes a record (idempotent: removing one that is gone is not an error).
    pub async fn delete(&self, org: &str, id: &str) -> Result<(), StoreError> {
        self.settled.forget(T::BUCKET, &key(org, id));
        self.kv.delete(key(org, id)).await.map_err(nats)
    }

    /// Every record of one org.
    pub async fn list(&self, org: &str) -> Result<Vec<T>, StoreError> {
        self.list_prefix(&format!("{org}.")).await
    }

    /// The records of one org whose ids start with `id_prefix.` (the marks of one install).
    pub async fn list_under(&self, org: &str, id_prefix: &str) -> Result<Vec<T>, StoreError> {
        self.list_prefix(&format!("{org}.{id_prefix}.")).await
    }

    /// Every record of every org: for the control plane's own sweeps, never for a request. One
    /// streamed pass, as [`Repo::scan`]: a sweep's listing was a get per key ever written,
    /// deleted ones included (a deleted key keeps its marker in the stream), so a fleet's
    /// reconcile and gauges passes made hundreds of gets a second at rest, more with every
    /// workflow ever run (`loadtest release`).
    pub async fn list_all(&self) -> Result<Vec<T>, StoreError> {
        self.scan_subjects(format!("{}>", self.kv.prefix)).await
    }

    /// Every record of one org in one pass: an ordered consumer over the bucket's stream delivers
    /// the latest revision of each key (the server finds them through its per-subject index), so
    /// 5,000 installs are one streamed read instead of 5,000 gets (`loadtest list`). A key
    /// written again during the pass is met twice, its later revision kept; a deleted key's
    /// latest revision is its delete marker, skipped.
    pub async fn scan(&self, org: &str) -> Result<Vec<T>, StoreError> {
        self.scan_subjects(format!("{}{org}.>", self.kv.prefix))
            .await
    }

    /// The latest revision of each key under `filter` (a subject of the bucket's stream), in
    /// the order of the keys.
    ///
    /// Two streamed passes, and a check when the bucket was written meanwhile. The first pass
    /// delivers the last revision of each key as the stream held it when the pass began; but a
    /// key rewritten meanwhile can have that revision removed (only
    /// [`HISTORY`](ferry_protocol::resources::buckets::HISTORY) are kept) before it is delivered,
    /// and the server then passes over the key entirely — a busy install went missing from its
    /// org's listing, and `ferry dev` took it for deleted. The second pass reads the writes made
    /// since the first began, in order (the newest of each key wins). The server's count of what
    /// is left to deliver is not to be trusted while revisions are removed under it (a key still
    /// went missing, once in about a thousand busy scans), so when the second pass met any write,
    /// the keys the stream holds now (one snapshot of its subjects) are compared with those read,
    /// and any missing one is read by itself.
    async fn scan_subjects(&self, filter: String) -> Result<Vec<T>, StoreError> {
        use async_nats::jetstream::consumer::DeliverPolicy;
        let before = self
            .kv
            .stream
            .get_info()
            .await
            .map_err(nats)?
            .state
            .last_sequence;
        let mut latest = self
            .scan_pass(filter.clone(), DeliverPolicy::LastPerSubject)
            .await?;
        let since = DeliverPolicy::ByStartSequence {
            start_sequence: before + 1,
        };
        let written = self.scan_pass(filter.clone(), since).await?;
        let busy = !written.is_empty();
        latest.extend(written);
        if busy {
            self.read_missing(&filter, &mut latest).await?;
        }
        let mut out = Vec::with_capacity(latest.len());
        for (key, payload) in latest {
            let Some(payload) = payload else { continue };
            out.push(
                serde_json::from_slice(&payload).map_err(|e| StoreError::Corrupt {
                    bucket: T::BUCKET,
                    key,
                    reason: e.to_string(),
                })?,
            );
        }
        Ok(out)
    }

    /// Reads each key under `filter` that the stream holds and `latest` lacks.
    async fn read_missing(
        &self,
        filter: &str,
        latest: &mut std::collections::BTreeMap<String, Option<bytes::Bytes>>,
    ) -> Result<(), StoreError> {
        let mut subjects = self
            .kv
            .stream
            .info_with_subjects(filter)
            .await
            .map_err(nats)?;
        let mut missing = Vec::new();
        while let Some((subject, _count)) = subjects.try_next().await.map_err(nats)? {
            if let Some(k) = subject.strip_prefix(self.kv.prefix.as_str())
                && !latest.contains_key(k)
            {
                missing.push(k.to_string());
            }
        }
        for k in missing {
            let value = self.kv.get(&k).await.map_err(nats)?;
            latest.insert(k, value);
        }
        Ok(())
    }

    /// One pass of a scan: what an ordered consumer from `from` on `filter` delivers until it has
    /// nothing pending, the latest payload of each key (`None`: deleted).
    async fn scan_pass(
        &self,
        filter: String,
        from: async_nats::jetstream::consumer::DeliverPolicy,
    ) -> Result<std::collections::BTreeMap<String, Option<bytes::Bytes>>, StoreError> {
        let consumer = self
            .kv
            .stream
            .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
                filter_subject: filter,
                deliver_policy: from,
                ..Default::default()
            })
            .await
            .map_err(nats)?;
        let pending = consumer.cached_info().num_pending;
        // Deleted once read, not left for the server to drop 30 s after its last use: a
        // thousand listings in that time (a dashboard's polls, `ferry dev`'s) reached the
        // stream's consumer limit and every listing failed until they went.
        let name = consumer.cached_info().name.clone();
        let latest = self.scan_read(consumer, pending).await;
        let _ = self.kv.stream.delete_consumer(&name).await;
        latest
    }

    /// The latest payload of each key a scan's consumer delivers (`None`: deleted), until it
    /// has none pending.
    async fn scan_read(
        &self,
        consumer: async_nats::jetstream::consumer::Consumer<
            async_nats::jetstream::consumer::pull::OrderedConfig,
        >,
        mut pending: u64,
    ) -> Result<std::collections::BTreeMap<String, Option<bytes::Bytes>>, StoreError> {
        let mut latest = std::collections::BTreeMap::new();
        if pending == 0 {
            return Ok(latest);
        }
        let mut messages = consumer.messages().await.map_err(nats)?;
        while let Some(msg) = messages.try_next().await.map_err(nats)? {
            let info = msg.info().map_err(|e| StoreError::Corrupt {
                bucket: T::BUCKET,
                key: msg.subject.to_string(),
                reason: e.to_string(),
            })?;
            pending = info.pending;
            let key = msg
                .subject
                .strip_prefix(self.kv.prefix.as_str())
                .unwrap_or(&msg.subject)
                .to_string();
            let deleted = msg
                .headers
                .as_ref()
                .and_then(|h| h.get("KV-Operation"))
                .is_some();
            latest.insert(key, (!deleted).then(|| msg.payload.clone()));
            if pending == 0 {
                break;
            }
        }
        Ok(latest)
    }

    /// The records whose keys start with `prefix`. The keys come from the bucket stream's subject
    /// state, one snapshot the server takes at once, not from `kv.keys()`: that walks the stream with
    /// a consumer, and a key written again while it walks (a runner's heartbeat, with only
    /// [`HISTORY`](ferry_protocol::resources::buckets::HISTORY) revisions kept) can be passed over
    /// entirely or met twice.
    async fn list_prefix(&self, prefix: &str) -> Result<Vec<T>, StoreError> {
        let filter = format!("{}{prefix}>", self.kv.prefix);
        let mut subjects = self
            .kv
            .stream
            .info_with_subjects(&filter)
            .await
            .map_err(nats)?;
        let mut keys = Vec::new();
        while let Some((subject, _count)) = subjects.try_next().await.map_err(nats)? {
            if let Some(k) = subject.strip_prefix(self.kv.prefix.as_str()) {
                keys.push(k.to_string());
            }
        }
        keys.sort();
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            // A deleted key keeps its marker in the stream: `get` reads it as absent.
            if let Some((org, id)) = k.split_once('.')
                && let Some(v) = self.get(org, id).await?
            {
                out.push(v.value);
            }
        }
        Ok(out)
    }
}

fn decode<T: Record>(key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        bucket: T::BUCKET,
        key: key.to_string(),
        reason: e.to_string(),
    })
}

fn encode<T: Serialize>(value: &T) -> Bytes {
    // Our records are plain data with string keys: serde_json cannot fail on them.
    Bytes::from(
        serde_json::to_vec(value)
            .unwrap_or_else(|e| unreachable!("record does not serialize: {e}")),
    )
}
