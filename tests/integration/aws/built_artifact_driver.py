"""Runs inside a clean Python 3.13 process (`python3.13 -I -S`): the built functions against moto.

Only these are importable: the `.aws-sam/build` output (each function's own folder, the shared
layer's `python/`) and a "runtime" folder standing for what Lambda adds — boto3 (the Python
runtime's) and moto (the test's AWS). No site-packages, no checkout: a module the layer forgot
fails the import here. Traces go over OTLP/HTTP to a receiver in this process (`STEPLINE_TRACING=otlp`),
so the layer's OpenTelemetry exporter is exercised too. Prints one JSON object of results.
"""

import importlib.util
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

config = json.loads(open(sys.argv[1]).read())  # noqa: SIM115 - no pathlib games before sys.path is set
sys.path[:0] = [config["runtime"], config["layer"]]

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402 - after sys.path

REGION = "us-east-1"


class Context:
    def __init__(self, name: str) -> None:
        self.function_name = name
        self.memory_limit_in_mb = 256
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:{name}"
        self.aws_request_id = f"req-{name}-{time.monotonic_ns()}"


def load(name: str, folder: str, entry: str = "app"):
    """A built function's `app` module (or another `entry`), with its own folder (its requirements) importable."""
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"built_{name}_{entry}", os.path.join(folder, f"{entry}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def proxy_event(method: str, path: str, body: "str | None" = None) -> dict:
    return {
        "resource": "/api/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": {"content-type": "application/json", "host": "api.example.com"},
        "multiValueHeaders": {"content-type": ["application/json"], "host": ["api.example.com"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.removeprefix("/api/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/api/{proxy+}",
            "httpMethod": method,
            "path": f"/dev{path}",
            "stage": "dev",
            "requestId": "request-1",
            "identity": {"sourceIp": "127.0.0.1"},
            "authorizer": {"claims": {"sub": "alice"}},
        },
        "body": body,
        "isBase64Encoded": False,
    }


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps the path and size of every export."""

    exports: list = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.exports.append((self.path, len(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main() -> dict:
    results: dict = {"python": sys.version.split()[0], "imported": []}
    receiver = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    os.environ.update(config["env"])
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.server_port}"
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        for name, definition in config["tables"].items():
            dynamodb.create_table(TableName=config["env"][name], **definition)
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=config["env"]["STEPLINE_BUCKET"])
        secret = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="link", SecretString="k" * 64)
        boto3.client("events", region_name=REGION).create_event_bus(Name=config["env"]["STEPLINE_EVENT_BUS"])
        machine = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name="agent-run",
            definition=json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Pass", "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/states",
        )["stateMachineArn"]
        os.environ["STEPLINE_STATE_MACHINE_ARN"] = machine
        os.environ["STEPLINE_APPROVAL_LINK_SECRET"] = secret["ARN"]

        modules = {name: load(name, folder) for name, folder in config["functions"].items()}
        results["imported"] = sorted(modules)
        api = modules["ApiFunction"]
        health = api.handler(proxy_event("GET", "/api/health"), Context("api"))
        results["health"] = {"status": health["statusCode"], "body": json.loads(health["body"])}
        # The stream function's app (`run.sh`: uvicorn serves `stream:app`), asked through Mangum here:
        # its health check answers, a buffered route is not there (API Gateway sends it elsewhere).
        from mangum import Mangum

        stream = Mangum(load("StreamFunction", config["stream"], "stream").app, lifespan="off")
        answers = {path: stream(proxy_event("GET", path), Context("stream")) for path in ("/api/health", "/api/agents")}
        results["stream"] = {path: answer["statusCode"] for path, answer in answers.items()}
        results["agents"] = api.handler(proxy_event("GET", "/api/agents"), Context("api"))["statusCode"]

        # The state machine's part: read the execution the chat started, run its task inputs.
        sfn = boto3.client("stepfunctions", region_name=REGION)
        tasks: dict = {}

        def run_workflow() -> None:
            deadline = time.monotonic() + 60
            while not (executions := sfn.list_executions(stateMachineArn=machine)["executions"]):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
            ids = json.loads(sfn.describe_execution(executionArn=executions[0]["executionArn"])["input"])
            task = {"userId": ids["userId"], "runId": ids["runId"]}
            tasks["ModelStepFunction"] = modules["ModelStepFunction"].handler(
                {**task, "firstStep": 0}, Context("model-step")
            )
            tasks["FinalizeRunFunction"] = modules["FinalizeRunFunction"].handler(task, Context("finalize-run"))
            # The unwatched model step (the same code, less memory) on the ended run: it says so.
            tasks["ModelStepUnwatchedFunction"] = modules["ModelStepUnwatchedFunction"].handler(
                {**task, "firstStep": 0}, Context("model-step-unwatched")
            )
            # A retried wait, expiry and failure of the ended run: each one harmless, each one run.
            tasks["AwaitInputFunction"] = modules["AwaitInputFunction"].handler(
                {**task, "taskToken": "token-of-an-ended-wait"}, Context("await-input")
            )
            tasks["ExpireInputFunction"] = modules["ExpireInputFunction"].handler(task, Context("expire-input"))
            tasks["FailRunFunction"] = modules["FailRunFunction"].handler(
                {**task, "input": {"error": {"Error": "States.Timeout", "Cause": "{}"}}}, Context("fail-run")
            )

        worker = threading.Thread(target=run_workflow)
        worker.start()
        body = {
            "id": "built-chat",
            "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
        }
        chat = api.handler(proxy_event("POST", "/api/chat", json.dumps(body)), Context("api"))
        worker.join(60)
        results["chat"] = {"status": chat["statusCode"], "body": chat["body"]}
        results["tasks"] = tasks
    results["traces"] = [size for path, size in Receiver.exports if path == "/v1/traces"]
    results["xray_sdk"] = importlib.util.find_spec("aws_xray_sdk") is not None
    results["loaded"] = sorted({m.split(".")[0] for m in sys.modules if m.startswith(("opentelemetry", "aws_xray"))})
    receiver.shutdown()
    return results


print(json.dumps(main()))
