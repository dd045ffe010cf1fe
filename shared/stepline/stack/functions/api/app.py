"""The HTTP API: one FastAPI app for both API functions of template.yaml.

`ApiFunction` (Handler `app.handler`) serves the buffered routes through Mangum; `StreamFunction`
(Handler `run.sh`) runs `app:app` under uvicorn behind the Lambda Web Adapter, which streams the
SSE routes. The code is in the shared layer, `stepline.api`, bound to services from the environment.
"""

from stepline.aws.api import api_app, buffered_handler

app = api_app()
handler = buffered_handler(app)
