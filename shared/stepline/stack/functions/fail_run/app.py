"""Ends a run whose step failed for good: the error is recorded, nothing is lost.

Lambda entry point of CodeUri `functions/fail_run/` in template.yaml;
its code is in the shared layer, `stepline.runtime.handle_end`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler
from stepline.runtime.handle_end import fail_run_handler

handler = worker_handler("stepline-fail-run", fail_run_handler)
