"""The stream function's app (`StreamFunction`, Handler `run.sh`: uvicorn serves `stream:app`).

Only the routes template.yaml sends to this function, streamed by the Lambda Web Adapter, and the
health check it polls: `stepline.aws.api.stream_app`. The buffered function imports `app.py`.
"""

from stepline.aws.api import stream_app

app = stream_app()
