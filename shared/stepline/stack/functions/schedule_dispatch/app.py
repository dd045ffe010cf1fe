"""Starts the due occurrences of every agent schedule (EventBridge Scheduler invokes it every minute).

Lambda entry point of CodeUri `shared/stepline/stack/functions/schedule_dispatch/` in template.yaml; its code is in the
shared layer, `stepline.aws.unattended`.
"""

from stepline.aws.unattended_wiring import dispatch_handler

handler = dispatch_handler()
