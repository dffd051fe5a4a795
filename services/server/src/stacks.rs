//! Where install stack templates are published for customers (`--stack-bucket`): an S3 bucket
//! of the vendor's, adapted here to `ferry_api::StackBucket`. `ferry installs stack --upload`
//! puts an install's template there and gets the AWS console's quick-create link for it.

use std::sync::Arc;

use anyhow::{Context, Result};
use ferry_aws::s3::{Bucket, S3Config};
use ferry_store::ArchiveError;

#[derive(clap::Args, Debug)]
pub struct StackBucketArgs {
    /// Publish install stack templates (`ferry installs stack --upload`) in this S3 bucket, as
    /// `<prefix><org>/<install>/<checksum>.json`. The customer's CloudFormation fetches them by
    /// their https URL: let the customers' accounts read that prefix (a bucket policy), as for
    /// any published template; they hold no secret. Credentials as the AWS SDK finds them.
    #[arg(long, env = "FERRY_STACK_BUCKET")]
    pub stack_bucket: Option<String>,
    /// Key prefix of the templates in the bucket.
    #[arg(
        long,
        env = "FERRY_STACK_BUCKET_PREFIX",
        default_value = "ferry/stacks/"
    )]
    pub stack_bucket_prefix: String,
    /// The bucket's region (and the console links' unless a publish names another).
    #[arg(long, env = "FERRY_STACK_BUCKET_REGION", default_value = "us-east-1")]
    pub stack_bucket_region: String,
    /// Another S3 endpoint than AWS's to write through (a VPC endpoint, an emulator); the
    /// templates' URLs stay AWS's.
    #[arg(long, env = "FERRY_STACK_BUCKET_ENDPOINT")]
    pub stack_bucket_endpoint: Option<String>,
}

impl StackBucketArgs {
    /// The configured bucket, checked (it answers to these credentials); `None` without one.
    pub async fn open(&self) -> Result<Option<Arc<dyn ferry_api::StackBucket>>> {
        let Some(bucket) = &self.stack_bucket else {
            return Ok(None);
        };
        let mut prefix = self.stack_bucket_prefix.clone();
        if !prefix.is_empty() && !prefix.ends_with('/') {
            prefix.push('/');
        }
        let bucket = Bucket::new(S3Config {
            bucket: bucket.clone(),
            prefix,
            region: self.stack_bucket_region.clone(),
            endpoint: self.stack_bucket_endpoint.clone(),
            path_style: false,
        })
        .await;
        bucket
            .check()
            .await
            .with_context(|| format!("the install stack bucket {}", bucket.describe()))?;
        Ok(Some(Arc::new(S3Stacks(bucket))))
    }
}

struct S3Stacks(Bucket);

impl ferry_api::StackBucket for S3Stacks {
    fn publish<'a>(&'a self, name: &'a str, body: Vec<u8>) -> ferry_api::stacks::Published<'a> {
        Box::pin(async move {
            self.0.put(name, body).await.map_err(|e| ArchiveError {
                what: format!("publishing {name}"),
                source: Box::new(e),
            })?;
            Ok(self.0.https_url(name))
        })
    }

    fn region(&self) -> &str {
        self.0.region()
    }
}
