"""Consumer variants: plain AWS Lambda handlers for SQS -> DynamoDB.

Each module is deployable on its own (zip the file, handler ``module.handler``):
it depends on boto3 only, reads ``TABLE_NAME`` from the environment and lets
boto3 take the endpoint from its standard ``AWS_ENDPOINT_URL`` setting. Nothing
here imports ``loadtest``.

``mapping_probe`` is not a consumer: it is the handler ``loadtest doctor`` runs behind
an event source mapping to measure what the mapping does.
"""
