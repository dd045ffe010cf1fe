"""Posts the signed callbacks of runs started with a `callbackUrl` (an SQS queue of lifecycle events).

Lambda entry point of CodeUri `shared/stepline/stack/functions/callback_sender/` in template.yaml; its code is in the
shared layer, `stepline.aws.unattended`.
"""

from stepline.aws.unattended_wiring import callback_handler

handler = callback_handler()
