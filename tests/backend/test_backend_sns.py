"""SNS on the embedded backend: a topic's SQS subscriptions deliver, raw and wrapped, a
wrapped notification signed with its subscription's one certificate; PublishBatch reports an
entry it refuses; a FIFO topic delivers a repeated deduplication id once."""

from __future__ import annotations

import base64
import json

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from loadtest.backend.sns import signing
from tests.backend.aws_clients import queue, queue_arn, sns, sqs, unique


def _receive_all(url: str, queue_url: str) -> list[str]:
    """Every body the queue holds now (each received once, then deleted)."""
    client = sqs(url)
    bodies: list[str] = []
    while True:
        got = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", [])
        if not got:
            return bodies
        for message in got:
            bodies.append(message["Body"])
            client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def test_a_publish_reaches_raw_and_wrapped_sqs_subscriptions(backend_url: str) -> None:
    client = sns(backend_url)
    topic = client.create_topic(Name=unique("backend-test"))["TopicArn"]
    with queue(backend_url) as raw, queue(backend_url) as wrapped:
        client.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn(backend_url, raw),
            Attributes={"RawMessageDelivery": "true"},
        )
        client.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn(backend_url, wrapped))
        message_id = client.publish(TopicArn=topic, Message="order-1 shipped")["MessageId"]

        assert _receive_all(backend_url, raw) == ["order-1 shipped"]
        [envelope] = [json.loads(body) for body in _receive_all(backend_url, wrapped)]
        assert envelope["Type"] == "Notification"
        assert envelope["MessageId"] == message_id
        assert envelope["TopicArn"] == topic
        assert envelope["Message"] == "order-1 shipped"
    client.delete_topic(TopicArn=topic)


def test_publish_batch_reports_the_entry_it_refuses_and_delivers_the_others(
    backend_url: str,
) -> None:
    client = sns(backend_url)
    topic = client.create_topic(Name=unique("backend-test"))["TopicArn"]
    with queue(backend_url) as subscribed:
        client.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn(backend_url, subscribed),
            Attributes={"RawMessageDelivery": "true"},
        )
        answer = client.publish_batch(
            TopicArn=topic,
            PublishBatchRequestEntries=[
                {"Id": "good", "Message": "a"},
                # A deduplication id is for FIFO topics only: this entry alone is refused.
                {"Id": "bad", "Message": "b", "MessageDeduplicationId": "d-1"},
                {"Id": "also-good", "Message": "c"},
            ],
        )
        assert sorted(entry["Id"] for entry in answer["Successful"]) == ["also-good", "good"]
        [failed] = answer["Failed"]
        assert failed["Id"] == "bad"
        assert failed["Code"] == "InvalidParameter"
        assert failed["SenderFault"] is True
        assert sorted(_receive_all(backend_url, subscribed)) == ["a", "c"]
    client.delete_topic(TopicArn=topic)


def test_a_fifo_topic_delivers_a_repeated_deduplication_id_once(backend_url: str) -> None:
    client = sns(backend_url)
    topic = client.create_topic(
        Name=unique("backend-test") + ".fifo", Attributes={"FifoTopic": "true"}
    )["TopicArn"]
    name = unique("backend-test") + ".fifo"
    queue_url = sqs(backend_url).create_queue(QueueName=name, Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    try:
        client.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn(backend_url, queue_url),
            Attributes={"RawMessageDelivery": "true"},
        )
        for body in ("first", "repeat"):
            answer = client.publish(
                TopicArn=topic, Message=body, MessageGroupId="g", MessageDeduplicationId="d-1"
            )
            assert answer["MessageId"]  # accepted both times
        assert _receive_all(backend_url, queue_url) == ["first"]
        # ...also after the first was received and deleted, within the 5 minutes.
        client.publish(
            TopicArn=topic, Message="later", MessageGroupId="g", MessageDeduplicationId="d-1"
        )
        assert _receive_all(backend_url, queue_url) == []
    finally:
        sqs(backend_url).delete_queue(QueueUrl=queue_url)
        client.delete_topic(TopicArn=topic)


def test_a_fifo_topic_deduplicates_before_a_standard_queue_subscribed(backend_url: str) -> None:
    client = sns(backend_url)
    topic = client.create_topic(
        Name=unique("backend-test") + ".fifo", Attributes={"FifoTopic": "true"}
    )["TopicArn"]
    with queue(backend_url) as standard:
        client.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn(backend_url, standard),
            Attributes={"RawMessageDelivery": "true"},
        )
        for body in ("first", "repeat"):
            client.publish(
                TopicArn=topic, Message=body, MessageGroupId="g", MessageDeduplicationId="d-1"
            )
        try:
            assert _receive_all(backend_url, standard) == ["first"]
        finally:
            client.delete_topic(TopicArn=topic)


def test_a_fifo_topic_with_content_based_deduplication_delivers_the_same_message_once(
    backend_url: str,
) -> None:
    client = sns(backend_url)
    topic = client.create_topic(
        Name=unique("backend-test") + ".fifo",
        Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "true"},
    )["TopicArn"]
    with queue(backend_url) as standard:
        client.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn(backend_url, standard),
            Attributes={"RawMessageDelivery": "true"},
        )
        first = client.publish(TopicArn=topic, Message="same", MessageGroupId="g")["MessageId"]
        again = client.publish(TopicArn=topic, Message="same", MessageGroupId="g")["MessageId"]
        client.publish(TopicArn=topic, Message="other", MessageGroupId="g")
        try:
            assert again == first
            assert _receive_all(backend_url, standard) == ["same", "other"]
        finally:
            client.delete_topic(TopicArn=topic)


def test_a_subscriptions_notifications_share_one_signing_certificate(backend_url: str) -> None:
    client = sns(backend_url)
    topic = client.create_topic(Name=unique("backend-test"))["TopicArn"]
    with queue(backend_url) as wrapped:
        client.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn(backend_url, wrapped))
        for n in range(3):
            client.publish(TopicArn=topic, Message=f"order-{n} shipped")
        notifications = [json.loads(body) for body in _receive_all(backend_url, wrapped)]
    client.delete_topic(TopicArn=topic)
    assert [n["Message"] for n in notifications] == [f"order-{n} shipped" for n in range(3)]
    # One certificate, as SNS signs with one for a long time (moto made one per message).
    assert len({n["SigningCertURL"] for n in notifications}) == 1


def test_each_notification_verifies_with_the_certificate_it_names() -> None:
    from moto import mock_aws
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.sns.models import Subscription, sns_backends
    from moto.sqs.models import sqs_backends

    post_data = signing.signed(Subscription.get_post_data)
    with mock_aws():
        sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].create_queue("signed")
        backend = sns_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        topic = backend.create_topic("signed")
        subscription = backend.subscribe(
            topic.arn, f"arn:aws:sqs:us-east-1:{DEFAULT_ACCOUNT_ID}:signed", "sqs"
        )
        notifications = [post_data(subscription, f"m-{n}", f"id-{n}", None) for n in range(2)]
        [url] = {n["SigningCertURL"] for n in notifications}
        pem = backend._message_public_keys[url.rsplit("/", 1)[-1]]
        assert len(backend._message_public_keys) == 1
    public_key = x509.load_pem_x509_certificate(pem).public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)
    for n in notifications:
        signed = "".join(
            f"{name}\n{n[name]}\n"
            for name in ("Message", "MessageId", "Timestamp", "TopicArn", "Type")
        )
        public_key.verify(
            base64.b64decode(n["Signature"]), signed.encode(), padding.PKCS1v15(), hashes.SHA256()
        )
