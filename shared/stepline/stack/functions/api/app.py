"""The HTTP API of the buffered function (`ApiFunction`, Handler `app.handler`): the whole app through Mangum.

`StreamFunction` shares this folder: its `run.sh` runs `stream:app` (the streaming routes only,
`stream.py`) under uvicorn behind the Lambda Web Adapter. The code is in the shared layer,
`stepline.api`, bound to services from the environment.
"""

from stepline.aws.api import api_app, buffered_handler

app = api_app()
handler = buffered_handler(app)
