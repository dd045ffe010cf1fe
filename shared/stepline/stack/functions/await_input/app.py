"""Parks the run on the task token until an approval or a client tool result arrives.

Lambda entry point of CodeUri `functions/await_input/` in template.yaml;
its code is in the shared layer, `stepline.runtime.handle_await_input`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler
from stepline.runtime.handle_await_input import await_input_handler

handler = worker_handler("stepline-await-input", await_input_handler)
