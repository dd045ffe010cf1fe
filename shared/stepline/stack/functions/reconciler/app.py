"""Closes runs whose execution ended without closing them.

Stopped, timed out, failed outside a Catch, or a continuation that never started: on each Step
Functions status change EventBridge sends, and on a schedule (the sweep).

Lambda entry point of CodeUri `functions/reconciler/` in template.yaml; its code is in the shared
layer, `stepline.runtime.reconcile`, bound to the store and executions from the environment.
"""

from stepline.aws.wiring import reconciler_handler

handler = reconciler_handler()
