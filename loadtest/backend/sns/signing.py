"""An SNS notification's signing certificate, made once per subscription: SNS signs its
notifications with one certificate for a long time.

Owns ``signed``, the replacement for moto's ``Subscription.get_post_data``, and
``install``, which puts it in place. Must not change anything a subscriber can check but
the certificate's lifetime: each notification's fields and its own signature are moto's,
and its ``SigningCertURL`` serves the certificate that verifies it.

Why: moto 5.2.5 makes a new X.509 certificate for every notification it wraps (each
publish to a subscription without raw message delivery) and keeps every one's PEM in the
backend until it stops: about 0.35 ms of CPU and 1.3 KB of memory per publish, which a
run's topic sinks pay on every publish (their capture queues are subscribed without raw
delivery, ``loadtest.aws.sinks``). ``install`` is called by ``loadtest.backend.http.app``
only when the dispatcher builds SNS's app, as ``loadtest.backend.sns.fifo``'s is.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

_CERTIFICATE_ATTR = "_loadtest_signing_certificate"
_LOCK = threading.Lock()


def _certificate_name(subscription: Any) -> str:
    """The name of the subscription's signing certificate, made (and its PEM kept where
    moto serves it) on its first notification."""
    name: str | None = subscription.__dict__.get(_CERTIFICATE_ATTR)
    if name is not None:
        return name
    import cryptography.x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509 import Name, NameAttribute
    from cryptography.x509.oid import NameOID
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.core.utils import utcnow
    from moto.moto_api._internal import mock_random
    from moto.sns.models import sns_backends

    with _LOCK:
        name = subscription.__dict__.get(_CERTIFICATE_ATTR)
        if name is not None:
            return name
        key = subscription.private_key()
        issuer = [
            NameAttribute(NameOID.COUNTRY_NAME, "US"),
            NameAttribute(NameOID.ORGANIZATION_NAME, "Amazon"),
            NameAttribute(NameOID.COMMON_NAME, "Amazon RSA 2048 M01"),
        ]
        certificate = (
            cryptography.x509.CertificateBuilder()
            .subject_name(Name([NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")]))
            .issuer_name(Name(issuer))
            .public_key(key.public_key())
            .serial_number(cryptography.x509.random_serial_number())
            .not_valid_before(utcnow())
            .not_valid_after(utcnow() + timedelta(days=365))
            .sign(key, hashes.SHA256())
        )
        name = f"SimpleNotificationService-{str(mock_random.uuid4()).replace('-', '')}.pem"
        # Served without credentials: moto keeps it in the default account's backend.
        region = subscription.topic.sns_backend.region_name
        sns_backends[DEFAULT_ACCOUNT_ID][region]._message_public_keys[name] = (
            certificate.public_bytes(serialization.Encoding.PEM)
        )
        subscription.__dict__[_CERTIFICATE_ATTR] = name
        return name


def signed(get_post_data: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """moto's ``Subscription.get_post_data``, its certificate made once per subscription."""

    def subscription_post_data(
        subscription: Any,
        message: str,
        message_id: str,
        subject: str | None,
        message_attributes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        from moto.core.utils import iso_8601_datetime_with_milliseconds

        key_name = _certificate_name(subscription)
        region = subscription.topic.sns_backend.region_name
        timestamp = iso_8601_datetime_with_milliseconds()
        string_to_sign = (
            f"Message\n{message}\nMessageId\n{message_id}\nTimestamp\n{timestamp}\n"
            f"TopicArn\n{subscription.topic.arn}\nType\nNotification\n"
        )
        signature = subscription.private_key().sign(
            string_to_sign.encode("UTF-8"), padding.PKCS1v15(), hashes.SHA256()
        )
        post_data: dict[str, Any] = {
            "Type": "Notification",
            "MessageId": message_id,
            "TopicArn": subscription.topic.arn,
            "Message": message,
            "Timestamp": timestamp,
            "SignatureVersion": "2",
            "Signature": base64.b64encode(signature).decode("utf-8"),
            "SigningCertURL": f"https://sns.{region}.amazonaws.com/{key_name}",
            "UnsubscribeURL": (
                "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn="
                f"arn:aws:sns:us-east-1:{subscription.account_id}:{subscription.topic.name}:"
                "2bcfbf39-05c3-41de-beaa-fcfcc21c8f55"
            ),
        }
        if subject:
            post_data["Subject"] = subject
        if message_attributes:
            post_data["MessageAttributes"] = message_attributes
        return post_data

    subscription_post_data.__wrapped__ = get_post_data  # type: ignore[attr-defined]
    return subscription_post_data


def install() -> None:
    """Put ``signed`` in place of moto's ``Subscription.get_post_data`` (idempotent)."""
    from moto.sns.models import Subscription

    with _LOCK:
        if not hasattr(Subscription.get_post_data, "__wrapped__"):
            Subscription.get_post_data = signed(Subscription.get_post_data)  # type: ignore[method-assign]
