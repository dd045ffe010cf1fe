"""One agent step: the model call and the tools that need no human.

Lambda entry point of CodeUri `functions/model_step/` in template.yaml;
its code is in the shared layer, `stepline.runtime.handle_model_step`, bound to services from the environment.
"""

from stepline.aws.wiring import worker_handler
from stepline.runtime.handle_model_step import model_step_handler

handler = worker_handler("stepline-model-step", model_step_handler)
