"""Running turns durably: the step handler's core, the recorder, the tool guard, the composition root.

`worker` holds what each Lambda function does (stepline/stack/functions/*/app.py only parse and serialise);
`services` wires the store, the model, the tools and Step Functions together once per process.
"""
