//! A bucket (and a key prefix in it) of S3 or any S3-compatible store, for objects Ferry keeps
//! there: job log archives (`ferry-server --log-archive-s3-bucket`) and published install
//! stack templates (`--stack-bucket`). Credentials are the
//! SDK's (environment, profile, instance or task role); an endpoint other than AWS's is
//! addressed path-style (`http://host:port/bucket/key`), as S3-compatible stores expect.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;

/// Where the objects go.
#[derive(Debug, Clone)]
pub struct S3Config {
    pub bucket: String,
    /// Put before every key (`ferry/logs/`); may be empty.
    pub prefix: String,
    pub region: String,
    /// Another endpoint than AWS's (an S3-compatible store, a VPC endpoint).
    pub endpoint: Option<String>,
    /// Address the bucket in the path rather than the host name (always with `endpoint`).
    pub path_style: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    #[error("S3 {op} s3://{bucket}/{key}: {source}")]
    Call {
        op: &'static str,
        bucket: String,
        key: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A bucket and prefix, ready for calls.
#[derive(Clone)]
pub struct Bucket {
    client: aws_sdk_s3::Client,
    cfg: S3Config,
}

impl Bucket {
    pub async fn new(cfg: S3Config) -> Bucket {
        let shared = crate::sdk_config(&cfg.region).await;
        let mut config = aws_sdk_s3::config::Builder::from(&shared)
            .force_path_style(cfg.path_style || cfg.endpoint.is_some());
        if let Some(url) = &cfg.endpoint {
            config = config.endpoint_url(url);
        }
        Bucket {
            client: aws_sdk_s3::Client::from_conf(config.build()),
            cfg,
        }
    }

    /// `s3://bucket/prefix`.
    pub fn describe(&self) -> String {
        format!("s3://{}/{}", self.cfg.bucket, self.cfg.prefix)
    }

    /// The bucket's region.
    pub fn region(&self) -> &str {
        &self.cfg.region
    }

    /// The AWS URL of object `name` (virtual-hosted style), as AWS's own services fetch it: a
    /// CloudFormation template's `TemplateURL`.
    pub fn https_url(&self, name: &str) -> String {
        format!(
            "https://{}.s3.{}.amazonaws.com/{}",
            self.cfg.bucket,
            self.cfg.region,
            self.key(name)
        )
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.cfg.prefix)
    }

    fn error<E: std::error::Error + Send + Sync + 'static>(
        &self,
        op: &'static str,
        key: &str,
    ) -> impl FnOnce(E) -> S3Error {
        let (bucket, key) = (self.cfg.bucket.clone(), key.to_string());
        move |e| S3Error::Call {
            op,
            bucket,
            key,
            source: Box::new(e),
        }
    }

    /// Checks that the bucket is there and these credentials reach it: at start-up, so that a
    /// wrong setting fails then rather than on the first archive.
    pub async fn check(&self) -> Result<(), S3Error> {
        self.client
            .head_bucket()
            .bucket(&self.cfg.bucket)
            .send()
            .await
            .map(drop)
            .map_err(self.error("HeadBucket", ""))
    }

    pub async fn put(&self, name: &str, body: Vec<u8>) -> Result<(), S3Error> {
        let key = self.key(name);
        self.client
            .put_object()
            .bucket(&self.cfg.bucket)
            .key(&key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map(drop)
            .map_err(self.error("PutObject", &key))
    }

    /// The object's bytes; `None` if there is no such key.
    pub async fn get(&self, name: &str) -> Result<Option<Vec<u8>>, S3Error> {
        let key = self.key(name);
        let out = match self
            .client
            .get_object()
            .bucket(&self.cfg.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(SdkError::ServiceError(e)) if e.err().is_no_such_key() => return Ok(None),
            Err(e) => return Err(self.error("GetObject", &key)(e)),
        };
        let bytes = out
            .body
            .collect()
            .await
            .map_err(self.error("GetObject", &key))?;
        Ok(Some(bytes.into_bytes().to_vec()))
    }
}
