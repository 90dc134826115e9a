"""The Lambda path: a scenario's consumer deployed as a function behind an SQS event source mapping.

Owns the plan of what a deploy creates (``deploy_plan``, pure), creating and
deleting it (``lambda_deploy``), attaching to an already deployed function
and restoring it exactly (``lambda_attach``), deleting what is tagged
``loadtest:run`` (``lambda_cleanup``) and reading a deployed mapping's
settings for ``loadtest lint`` (``lint_aws``). The observer's entry point that
runs inside the function lives with the emulation (``observer.lambda_entry``).
"""
