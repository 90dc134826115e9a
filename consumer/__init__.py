"""Consumer variants: plain AWS Lambda handlers for SQS -> DynamoDB.

Each module is deployable on its own (zip the file, handler ``module.handler``):
it depends on boto3 only, reads ``TABLE_NAME`` from the environment and lets
boto3 take the endpoint from its standard ``AWS_ENDPOINT_URL`` setting. Nothing
here imports ``loadtest``.
"""
