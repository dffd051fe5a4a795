//! Where finished jobs' logs are archived: the hub's `job_logs` object store (the default), or
//! an S3 bucket (`--log-archive-s3-bucket`), which this adapts to `ferry_store::LogArchive`.
//! The api (serving archived logs) and log-ingest (archiving them) get it.

use std::sync::Arc;

use anyhow::{Context, Result};
use ferry_aws::s3::{Bucket, S3Config};
use ferry_store::{ArchiveError, BoxFuture, LogArchive};

#[derive(clap::Args, Debug)]
pub struct LogArchiveArgs {
    /// Archive each finished job's log in this S3 bucket, as one gzip-compressed JSON-lines
    /// object (`<prefix><org>/<job>.jsonl.gz`), instead of the hub's object store. The API
    /// serves logs from there once the LOGS stream has dropped them. Credentials as the AWS SDK
    /// finds them: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an instance or task
    /// role.
    #[arg(long, env = "FERRY_LOG_ARCHIVE_S3_BUCKET")]
    pub log_archive_s3_bucket: Option<String>,
    /// Key prefix of the archived logs in the bucket.
    #[arg(
        long,
        env = "FERRY_LOG_ARCHIVE_S3_PREFIX",
        default_value = "ferry/job-logs/"
    )]
    pub log_archive_s3_prefix: String,
    /// The bucket's region.
    #[arg(long, env = "FERRY_LOG_ARCHIVE_S3_REGION", default_value = "us-east-1")]
    pub log_archive_s3_region: String,
    /// Another S3 endpoint than AWS's (an S3-compatible store: MinIO, SeaweedFS, Ceph…); its
    /// buckets are addressed path-style.
    #[arg(long, env = "FERRY_LOG_ARCHIVE_S3_ENDPOINT")]
    pub log_archive_s3_endpoint: Option<String>,
    /// Address the bucket path-style on AWS too (`https://s3.<region>.amazonaws.com/<bucket>`).
    #[arg(long, env = "FERRY_LOG_ARCHIVE_S3_PATH_STYLE")]
    pub log_archive_s3_path_style: bool,
}

impl LogArchiveArgs {
    /// The configured archive, checked (the bucket answers to these credentials); `None` for
    /// the hub's own store.
    pub async fn open(&self) -> Result<Option<Arc<dyn LogArchive>>> {
        let Some(bucket) = &self.log_archive_s3_bucket else {
            return Ok(None);
        };
        let mut prefix = self.log_archive_s3_prefix.clone();
        if !prefix.is_empty() && !prefix.ends_with('/') {
            prefix.push('/');
        }
        let bucket = Bucket::new(S3Config {
            bucket: bucket.clone(),
            prefix,
            region: self.log_archive_s3_region.clone(),
            endpoint: self.log_archive_s3_endpoint.clone(),
            path_style: self.log_archive_s3_path_style,
        })
        .await;
        bucket
            .check()
            .await
            .with_context(|| format!("the job log archive {}", bucket.describe()))?;
        Ok(Some(Arc::new(S3Archive(bucket))))
    }
}

struct S3Archive(Bucket);

fn failed(what: String) -> impl FnOnce(ferry_aws::s3::S3Error) -> ArchiveError {
    move |e| ArchiveError {
        what,
        source: Box::new(e),
    }
}

impl LogArchive for S3Archive {
    fn describe(&self) -> String {
        self.0.describe()
    }

    fn put<'a>(&'a self, name: &'a str, body: Vec<u8>) -> BoxFuture<'a, Result<(), ArchiveError>> {
        Box::pin(async move {
            let what = format!("storing {name} in {}", self.0.describe());
            self.0.put(name, body).await.map_err(failed(what))
        })
    }

    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, ArchiveError>> {
        Box::pin(async move {
            let what = format!("reading {name} from {}", self.0.describe());
            self.0.get(name).await.map_err(failed(what))
        })
    }
}
