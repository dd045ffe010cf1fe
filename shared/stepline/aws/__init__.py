"""AWS adapters: the only modules that import boto3 (DynamoDB store, S3 blobs, Step Functions)."""
