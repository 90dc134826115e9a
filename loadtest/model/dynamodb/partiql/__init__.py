"""PartiQL DML for DynamoDB: ``statements`` (parsing a statement into what the observer and
the backend need), ``clauses`` (SET/REMOVE, WHERE, RETURNING) and ``syntax`` (tokens and
literals). Part of the write language: imports nothing outside ``loadtest.model.dynamodb``.
"""
