"""Every AWS quota the scale simulation models, with its default value and where it comes from.

One table (`LIMITS`) is the source for both `bench/scale_sim.py` and docs/scale.md. `checked` says
how the value was obtained in the session that wrote it:

- `doc`: read in the AWS documentation (the page named in `source`) during that session;
- `recalled`: a published default quoted from memory, not re-read then: confirm it in the Service
  Quotas console (or the page in `source`) before relying on it;
- `searched`: found in a later session by a search of the AWS documentation (or of an AWS page
  quoting it), the page named in `source`; still to be confirmed in the Service Quotas console.

`Quotas` is the set of values one simulated configuration runs against: `DEFAULT_QUOTAS` are the
defaults of a fresh account in us-east-1, `RECOMMENDED_QUOTAS` the increases docs/scale.md asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["DEFAULT_QUOTAS", "LAUNCH_QUOTAS", "LIMITS", "RECOMMENDED_QUOTAS", "Limit", "Quotas"]


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
_DDB_ONDEMAND = "Amazon DynamoDB Developer Guide, 'Understanding DynamoDB warm throughput in different scenarios' (docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html): a new on-demand table starts at 12,000 reads and 4,000 writes a second, each partition is limited to 1,000 write and 3,000 read units a second"
_APIGW = "Amazon API Gateway Developer Guide, 'Amazon API Gateway quotas' (docs.aws.amazon.com/apigateway/latest/developerguide/limits.html)"
_APPSYNC = (
    "AWS General Reference, 'AWS AppSync endpoints and quotas' (docs.aws.amazon.com/general/latest/gr/appsync.html)"
)
_SSM = "AWS Systems Manager endpoints and quotas (docs.aws.amazon.com/general/latest/gr/ssm.html), as quoted by dev.classmethod.jp (2022): 40 TPS default, 3,000 with higher throughput for GetParameter and GetParameters; the API reference's GetParameter page (higher throughput is a setting)"
_SECRETS = "AWS Secrets Manager User Guide, 'Secrets Manager quotas' (docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html); AWS What's New, 2025-03-04: GetSecretValue 10,000 requests a second, DescribeSecret 40,000"
_EVENTS = "Amazon EventBridge User Guide, 'Amazon EventBridge quotas' (docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html), as quoted on AWS re:Post: 'PutEvents throttle limit in transactions per second: us-east-1: 10,000 per second', per account"

LIMITS: tuple[Limit, ...] = (
    Limit("sfn_start", "Step Functions Standard StartExecution (token bucket, per account and region)",
          "bucket 1,300, refill 300/s (us-east-1, us-west-2, eu-west-1; 800 and 150/s elsewhere)", "yes", _SFN, "doc"),
    Limit("sfn_transition", "Step Functions Standard StateTransition (token bucket; throttled transitions wait, metric ExecutionThrottled)",
          "bucket 5,000, refill 1,500/s (us-east-1, us-west-2, eu-west-1; 800 and 500/s elsewhere); new accounts lower", "yes", _SFN, "doc"),
    Limit("sfn_send_task", "Step Functions SendTaskSuccess (token bucket)", "bucket 3,000, refill 500/s (the three large regions)", "yes", _SFN, "doc"),
    Limit("sfn_open", "Step Functions open executions per account and region", "1,000,000 (ExecutionLimitExceeded past it)", "yes", _SFN, "doc"),
    Limit("sfn_history", "Step Functions execution history", "25,000 events per execution", "no", _SFN, "doc"),
    Limit("lambda_concurrency", "Lambda concurrent executions per account and region (all functions)", "1,000 (new accounts start lower; AWS raises them with use)", "yes (tens of thousands)", _LAMBDA_QUOTAS, "searched"),
    Limit("lambda_provisioned", "Lambda provisioned concurrency (per function version or alias; counts against the account's concurrency)",
          "0 unless configured; billed per GB-s configured: arm64 $0.0000033334 per GB-s in us-east-1", "yes (a setting)", "aws.amazon.com/lambda/pricing", "recalled"),
    Limit("lambda_scaling", "Lambda concurrency scaling rate, per function", "1,000 new execution environments every 10 s, refilled continuously, unused rate not carried over", "no", _LAMBDA_SCALING, "doc"),
    Limit("apigw_throttle", "API Gateway account throttle per region (REST, HTTP, WebSocket together)", "10,000 requests/s steady, 5,000 burst (token bucket)", "yes (the rate; the burst follows it)", _APIGW, "doc"),
    Limit("apigw_stream", "API Gateway REST response streaming", "15 min per stream, 5 min idle (Regional); a stream counts once, at its request", "no", "shared/reference/aws-serverless-facts.md 1.3 (API Gateway 'Response transfer mode')", "doc"),
    Limit("ddb_table", "DynamoDB on-demand throughput per table (the table and its GSIs together)", "40,000 read request units/s and 40,000 write request units/s", "yes", _DDB_QUOTAS, "doc"),
    Limit("ddb_partition", "DynamoDB per partition (base table or GSI)", "3,000 read units/s and 1,000 write units/s", "no (split for heat spreads a key's sort-key range over partitions, not one item or one growing end)", _DDB_ONDEMAND, "searched"),
    Limit("ddb_ondemand_start", "DynamoDB on-demand table without warm throughput", "serves up to 4,000 writes/s and 12,000 reads/s at once (searched); then adjusts to higher values as traffic exceeds them, at a rate not given there (double the previous peak within 30 min: recalled)", "yes (warm throughput, set per table and GSI)", _DDB_ONDEMAND, "searched"),
    Limit("appsync_publish", "AppSync Events inbound publish rate per API", "not confirmed (searched, not found in the stored documentation): modelled as 10,000 events/s", "yes", _APPSYNC, "recalled"),
    Limit("appsync_connections", "AppSync Events WebSocket connections", "not confirmed (searched, not found in the stored documentation): not modelled as a cap", "yes", _APPSYNC, "recalled"),
    Limit("ssm_get", "SSM Parameter Store GetParameter throughput (the model step's provider key, read once per cold start)", "40 transactions/s standard; 3,000/s with higher throughput (billed per call)", "yes (a setting)", _SSM, "searched"),
    Limit("secrets_get", "Secrets Manager GetSecretValue (the approval-link key, once per cold start of ModelStep, AwaitInput, Api)", "10,000 requests/s (DescribeSecret 40,000)", "no", _SECRETS, "searched"),
    Limit("eventbridge_put", "EventBridge PutEvents (lifecycle events: start, waits, end)", "10,000 requests/s in us-east-1, per account (lower in smaller regions)", "yes", _EVENTS, "searched"),
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
    provisioned_model_step: int = 0
    """Provisioned concurrency of ModelStep: environments initialised before the load, no scaling token needed."""
    provisioned_stream: int = 0
    """The same for StreamFunction."""
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
    ddb_table_reads=400_000,
    ddb_table_quota=400_000,
    ssm_rate=3_000,
)
"""The increases docs/scale.md requests for 10,000 concurrent streaming runs (the design changes are in `Design`)."""

LAUNCH_QUOTAS = replace(RECOMMENDED_QUOTAS, provisioned_model_step=10_000, provisioned_stream=9_000)
"""The recommended quotas and provisioned concurrency for a standing start at the peak rate (a launch):
what each function's scaling rate (1,000 environments per 10 s, not adjustable) cannot create in time."""
