"""Ends a finished run: final message, run and conversation status.

Lambda entry point of CodeUri `functions/finalize_run/` in template.yaml;
its code is in the shared layer, `stepline.runtime.handle_end`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler
from stepline.runtime.handle_end import finalize_run_handler

handler = worker_handler("stepline-finalize-run", finalize_run_handler)
