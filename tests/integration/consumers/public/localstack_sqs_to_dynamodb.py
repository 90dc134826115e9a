# ruff: noqa
# mypy: ignore-errors
# fmt: off
# Copied unchanged (below this header) from localstack-samples/sample-sqs-lambda-dynamodb,
# sqs_blog/lambda/SQSToDynamoDBFunction.py
# (commit c3f22d3c91fbfd62cc7bb0142c10e6ba27ac1785).
#
# MIT No Attribution
#
# Copyright 2023 Amazon.com, Inc. or its affiliates. All Rights Reserved.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of
# this software and associated documentation files (the "Software"), to deal in
# the Software without restriction, including without limitation the rights to
# use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
# the Software, and to permit persons to whom the Software is furnished to do so.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
# FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
# COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
# IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
# CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
#
# Copyright 2023 LocalStack. All Rights Reserved.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of
# this software and associated documentation files (the "Software"), to deal in
# the Software without restriction, including without limitation the rights to
# use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
# the Software, and to permit persons to whom the Software is furnished to do so.
import json
import os
import boto3
import uuid

def lambda_handler(event, context):
    # Retrieve the messages from the SQS event
    messages = event['Records']

    print(messages)
    
    # Initialize the DynamoDB client
    dynamodb_client = boto3.client('dynamodb')
    table_name = os.environ['DYNAMODB_TABLE_NAME']

    # Process each message in the batch
    for message in messages:
        # Retrieve the JSON message body
        message_body = json.loads(message['body'])

        # Generate UUID for the record
        record_id = str(uuid.uuid4())

        # Prepare the item to be inserted into DynamoDB
        item = {
            'id': {'S': record_id},
            'product_id': {'S': message_body['product_id']},
            'location': {'S': message_body['location']},
            'quantity': {'N': str(message_body['quantity'])},
            'update_date': {'S': message_body['update_date']}
        }

        # Insert the item into DynamoDB
        dynamodb_client.put_item(TableName=table_name, Item=item)
