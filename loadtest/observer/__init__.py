"""The observer: what ships in the Lambda layer and runs inside the consumer's process.

Owns the layer's entry point (``lambda_entry``), the write observer (``write_observer``,
with ``plans`` and ``answers``), record marks, point faults, the runtime's marshalling of a
handler's answer (``runtime_marshal``), the layer's environment interface
(``layer_environment``, written by ``fault_env``) and the layer artifact (``layer``).
The layer carries only the modules its entries import (``layer.layer_modules``).
"""
