"""Stepline: durable AI agent conversations on AWS serverless.

The importable core shared by every Lambda function (it becomes the Lambda layer).
`stepline.protocol` is the Vercel AI SDK v7 UI Message Stream protocol; it imports only the
standard library and pydantic.
"""

__version__ = "0.1.0"
