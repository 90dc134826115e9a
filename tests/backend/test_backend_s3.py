"""S3 on the embedded backend: a key put twice is one object (the second put replaces the
first), and Get, Copy, Delete and ListObjectsV2 see the bucket as S3 does."""

from __future__ import annotations

from tests.backend.aws_clients import s3, unique


def test_the_same_key_put_twice_is_one_object(backend_url: str) -> None:
    client = s3(backend_url)
    bucket = unique("backend-test")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="receipts/o-1.json", Body=b'{"n": 1}')
    client.put_object(Bucket=bucket, Key="receipts/o-1.json", Body=b'{"n": 2}')

    listed = client.list_objects_v2(Bucket=bucket, Prefix="receipts/")
    assert listed["KeyCount"] == 1
    assert [item["Key"] for item in listed["Contents"]] == ["receipts/o-1.json"]
    body = client.get_object(Bucket=bucket, Key="receipts/o-1.json")["Body"].read()
    assert body == b'{"n": 2}'

    client.copy_object(
        Bucket=bucket,
        Key="archive/o-1.json",
        CopySource={"Bucket": bucket, "Key": "receipts/o-1.json"},
    )
    client.delete_object(Bucket=bucket, Key="receipts/o-1.json")
    client.delete_object(Bucket=bucket, Key="receipts/o-1.json")  # again: S3 answers 204 too
    listed = client.list_objects_v2(Bucket=bucket)
    assert [item["Key"] for item in listed["Contents"]] == ["archive/o-1.json"]
    assert client.get_object(Bucket=bucket, Key="archive/o-1.json")["Body"].read() == b'{"n": 2}'

    client.delete_object(Bucket=bucket, Key="archive/o-1.json")
    assert client.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    client.delete_bucket(Bucket=bucket)
