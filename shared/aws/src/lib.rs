//! Ferry's calls to AWS: Amazon ECR credentials for registries (`ecr`), job log archives in S3
//! or any S3-compatible store (`s3`), the install stack as its runner reads it (`stack`), and
//! the roles its jobs run as (`sts`), and the status of the install's secrets (`secrets`).
//!
//! One crate for the AWS SDK because it is a large build (DESIGN.md §10): only the binaries that
//! need it link it, and it uses rustls with ring like the rest of Ferry.

mod ecr;
pub mod s3;
pub mod secrets;
pub mod stack;
pub mod sts;

pub use ecr::*;

/// The SDK's shared configuration for `region`: credentials as the SDK finds them (environment,
/// profile, instance or task role), and an HTTPS client on rustls with ring (the SDK's default
/// would add aws-lc).
pub(crate) async fn sdk_config(region: &str) -> aws_config::SdkConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .region(aws_config::Region::new(region.to_string()))
        .load()
        .await
}
