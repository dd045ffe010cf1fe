"""One OpenTelemetry trace per run, across every process and every wait (`docs/architecture.md`, "Tracing")."""
