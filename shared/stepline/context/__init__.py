"""Managing what a model call sees: token counts, context windows, compaction and offloaded outputs.

`tokens` counts (tiktoken's encodings shipped offline, or a bounded estimate), `windows` knows each
model's context window and output reserve, `policy` is the agent's `ContextPolicy`, `groups` cuts a
conversation only where nothing is separated (a tool call from its result), `history` builds the
next turn's history by tokens, and `compaction` summarizes the oldest part when a call would not fit.
"""
