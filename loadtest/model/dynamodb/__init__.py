"""DynamoDB's write language as pure functions: typed attribute values, UpdateExpressions and PartiQL DML.

Owns what a write to DynamoDB means: ``attribute_values`` (typed values, item equality),
``update_expressions`` (the UpdateExpression grammar), ``updates`` (the item after an
UpdateItem) and ``partiql`` (statements, their clauses and their tokens). Shipped in the
observer's Lambda layer, so it imports nothing else of the model: not the scenario, the
history or the checker (enforced by import-linter, see pyproject.toml).
"""
