"""Every AWS quota the scale simulation models, with its default value and where it comes from.

One table (`LIMITS`) is the source for both `bench/scale_sim.py` and docs/scale.md. `checked` says
how the value was obtained in the session that wrote it:

- `doc`: read in the AWS documentation (the page named in `source`) during that session;
- `recalled`: a published default quoted from memory, not re-read then: confirm it in the Service
  Quotas console (or the page in `source`) before relying on it.

`Quotas` is the set of values one simulated configuration runs against: `DEFAULT_QUOTAS` are the
defaults of a fresh account in us-east-1, `RECOMMENDED_QUOTAS` the increases docs/scale.md asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["DEFAULT_QUOTAS", "LIMITS", "RECOMMENDED_QUOTAS", "Limit", "Quotas"]


@dataclass(frozen=True)
class Limit:
    key: str
    name: str
    default: str
    adjustable: str
    source: str
    checked: str


_SFN = "AWS Step Functions Developer Guide, 'Step Functions service quotas' (docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html)"
_LAMBDA_SCALING = (
    "AWS Lambda Developer Guide, 'Lambda scaling behavior' (docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html)"
)
_LAMBDA_QUOTAS = (
    "AWS Lambda Developer Guide, 'Lambda quotas' (docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)"
)
_DDB_QUOTAS = "Amazon DynamoDB Developer Guide, 'Service, account, and table quotas' (docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html)"
_DDB_PARTITIONS = "Amazon DynamoDB Developer Guide, 'Best practices for designing and using partition keys effectively' (docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html)"
_DDB_ONDEMAND = "Amazon DynamoDB Developer Guide, 'On-demand capacity mode' / 'Warm throughput' (docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html)"
_APIGW = "Amazon API Gateway Developer Guide, 'Amazon API Gateway quotas' (docs.aws.amazon.com/apigateway/latest/developerguide/limits.html)"
_APPSYNC = (
    "AWS General Reference, 'AWS AppSync endpoints and quotas' (docs.aws.amazon.com/general/latest/gr/appsync.html)"
)
_SSM = "AWS Systems Manager User Guide, 'Increasing or resetting Parameter Store throughput' (docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-throughput.html)"
_SECRETS = "AWS Secrets Manager User Guide, 'Secrets Manager quotas' (docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html)"
_EVENTS = "Amazon EventBridge User Guide, 'Amazon EventBridge quotas' (docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html)"

LIMITS: tuple[Limit, ...] = (
    Limit("sfn_start", "Step Functions Standard StartExecution (token bucket, per account and region)",
          "bucket 1,300, refill 300/s (us-east-1, us-west-2, eu-west-1; 800 and 150/s elsewhere)", "yes", _SFN, "doc"),
    Limit("sfn_transition", "Step Functions Standard StateTransition (token bucket; throttled transitions wait, metric ExecutionThrottled)",
          "bucket 5,000, refill 1,500/s (us-east-1, us-west-2, eu-west-1; 800 and 500/s elsewhere); new accounts lower", "yes", _SFN, "doc"),
    Limit("sfn_send_task", "Step Functions SendTaskSuccess (token bucket)", "bucket 3,000, refill 500/s (the three large regions)", "yes", _SFN, "doc"),
    Limit("sfn_open", "Step Functions open executions per account and region", "1,000,000 (ExecutionLimitExceeded past it)", "yes", _SFN, "doc"),
    Limit("sfn_history", "Step Functions execution history", "25,000 events per execution", "no", _SFN, "doc"),
    Limit("lambda_concurrency", "Lambda concurrent executions per account and region (all functions)", "1,000 (new accounts may start lower)", "yes (tens of thousands)", _LAMBDA_QUOTAS, "recalled"),
    Limit("lambda_scaling", "Lambda concurrency scaling rate, per function", "1,000 new execution environments every 10 s, refilled continuously, unused rate not carried over", "no", _LAMBDA_SCALING, "doc"),
    Limit("apigw_throttle", "API Gateway account throttle per region (REST, HTTP, WebSocket together)", "10,000 requests/s steady, 5,000 burst (token bucket)", "yes (the rate; the burst follows it)", _APIGW, "doc"),
    Limit("apigw_stream", "API Gateway REST response streaming", "15 min per stream, 5 min idle (Regional); a stream counts once, at its request", "no", "shared/reference/aws-serverless-facts.md 1.3 (API Gateway 'Response transfer mode')", "doc"),
    Limit("ddb_table", "DynamoDB on-demand throughput per table (the table and its GSIs together)", "40,000 read request units/s and 40,000 write request units/s", "yes", _DDB_QUOTAS, "doc"),
    Limit("ddb_partition", "DynamoDB per partition (base table or GSI)", "3,000 read units/s and 1,000 write units/s", "no (split for heat spreads a key's sort-key range over partitions, not one item or one growing end)", _DDB_PARTITIONS, "recalled"),
    Limit("ddb_ondemand_start", "DynamoDB on-demand table without warm throughput", "serves up to 4,000 writes/s and 12,000 reads/s at once; up to double the previous peak within 30 min", "yes (warm throughput, set per table and GSI)", _DDB_ONDEMAND, "recalled"),
    Limit("appsync_publish", "AppSync Events inbound publish rate per API", "not confirmed this session: modelled as 10,000 events/s", "yes", _APPSYNC, "recalled"),
    Limit("appsync_connections", "AppSync Events WebSocket connections", "not confirmed this session: not modelled as a cap", "yes", _APPSYNC, "recalled"),
    Limit("ssm_get", "SSM Parameter Store GetParameter throughput (the model step's provider key, read once per cold start)", "40 transactions/s standard; up to 10,000/s with higher throughput (billed per call)", "yes (a setting)", _SSM, "recalled"),
    Limit("secrets_get", "Secrets Manager GetSecretValue (the approval-link key, once per cold start of ModelStep, AwaitInput, Api)", "10,000 requests/s (with DescribeSecret)", "no", _SECRETS, "recalled"),
    Limit("eventbridge_put", "EventBridge PutEvents (lifecycle events: start, waits, end)", "10,000 entries/s in us-east-1 (lower in smaller regions)", "yes", _EVENTS, "recalled"),
)  # fmt: skip


@dataclass(frozen=True)
class Quotas:
    """The limits one simulated configuration runs against (rates per second)."""

    sfn_start_bucket: float = 1_300
    sfn_start_rate: float = 300
    sfn_transition_bucket: float = 5_000
    sfn_transition_rate: float = 1_500
    sfn_send_task_bucket: float = 3_000
    sfn_send_task_rate: float = 500
    lambda_concurrency: int = 1_000
    lambda_scaling_per_10s: int = 1_000
    reserved_model_step: int | None = None
    """Reserved concurrency of ModelStep (None: it shares the unreserved pool)."""
    apigw_rate: float = 10_000
    apigw_burst: float = 5_000
    ddb_table_writes: float = 4_000
    """What an on-demand table serves at once: its warm throughput (4,000 for a new table), at most `ddb_table_quota`."""
    ddb_table_reads: float = 12_000
    ddb_table_quota: float = 40_000
    ddb_partition_writes: float = 1_000
    ddb_partition_reads: float = 3_000
    appsync_publish_rate: float = 10_000
    ssm_rate: float = 40
    secrets_rate: float = 10_000
    eventbridge_rate: float = 10_000

    def table_writes(self) -> float:
        return min(self.ddb_table_writes, self.ddb_table_quota)

    def table_reads(self) -> float:
        return min(self.ddb_table_reads, self.ddb_table_quota)


DEFAULT_QUOTAS = Quotas()

RECOMMENDED_QUOTAS = replace(
    DEFAULT_QUOTAS,
    sfn_start_bucket=5_000,
    sfn_start_rate=1_000,
    sfn_transition_bucket=20_000,
    sfn_transition_rate=8_000,
    lambda_concurrency=30_000,
    ddb_table_writes=300_000,
    ddb_table_reads=300_000,
    ddb_table_quota=300_000,
    appsync_publish_rate=250_000,
    ssm_rate=10_000,
)
"""The increases docs/scale.md requests for 10,000 concurrent streaming runs (the design changes are in `Design`)."""
