"""The store's operations, written once against a unit of work (`unit.Unit`).

Each function reads what it needs, checks every condition, and only then stages its writes; the
backend commits them atomically. Nothing here knows whether it runs in memory or on DynamoDB.

    common      the transition check, the reads that must find their record, shared staging
    runs        a turn's start, its run's life and end
    approvals   requesting, deciding once, settling and expiring approvals
    tool_calls  claiming a tool call once, its start, outcome and a client's answer
"""
