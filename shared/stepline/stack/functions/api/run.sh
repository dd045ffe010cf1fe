#!/bin/bash
# StreamFunction's start script: the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap)
# runs it, waits for the readiness path, then forwards each request to this server and streams
# the response (AWS_LWA_INVOKE_MODE=response_stream).
PATH=$PATH:$LAMBDA_TASK_ROOT/bin PYTHONPATH=$PYTHONPATH:/opt/python:$LAMBDA_RUNTIME_DIR \
  exec python -m uvicorn --host 127.0.0.1 --port "$PORT" --no-access-log stream:app
