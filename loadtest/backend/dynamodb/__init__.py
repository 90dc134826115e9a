"""The embedded backend's DynamoDB: PartiQL writes, key types, legacy conditions,
transaction tokens, update operands and interned attribute names, as DynamoDB does them.
"""
