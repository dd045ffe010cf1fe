"""Language models: the provider-neutral port (`base`), the scripted model, and provider adapters.

`base`, `errors` and `scripted` are pure; `openai_*` and `anthropic` import the official SDKs and
are loaded only when a model of theirs is asked for (`registry.resolve_model`).
"""
