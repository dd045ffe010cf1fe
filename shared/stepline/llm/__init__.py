"""Language models: the provider-neutral port (`base`), the scripted model, and provider adapters.

`base`, `errors` and `scripted` are pure. Each provider has its own subpackage (`openai/`,
`anthropic/`) holding its request conversion, stream state machine, options and errors; each
imports its official SDK and is loaded only when a model of its own is asked for
(`registry.resolve_model`).
"""
