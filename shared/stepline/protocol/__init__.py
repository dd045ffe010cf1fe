"""The Vercel AI SDK v7 UI Message Stream protocol (pure: standard library and pydantic only).

Mirrors `ai@7.0.173` (see docs/protocol.md for where it differs from 7.0.77 and from the specs).
"""
