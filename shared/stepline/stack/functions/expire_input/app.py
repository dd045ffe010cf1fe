"""An approval or client tool result that never came: expired, the run goes on without it.

Lambda entry point of CodeUri `functions/expire_input/` in template.yaml;
its code is in the shared layer, `stepline.runtime.handle_expire_input`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler
from stepline.runtime.handle_expire_input import expire_input_handler

handler = worker_handler("stepline-expire-input", expire_input_handler)
