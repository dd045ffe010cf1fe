"""Durable state: the store port (`ports`), its records, and the in-memory backend.

The DynamoDB/S3 backend lives in `stepline.aws` (the only modules that import boto3).
"""
