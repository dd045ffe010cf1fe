"""An approval or client tool result that never came: expired, the run goes on without it.

Lambda entry point of CodeUri `functions/expire_input/` in template.yaml;
its code is in the shared layer, `stepline.runtime.worker`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler

handler = worker_handler("stepline-expire-input")
