"""DescribeUserScramCredentials and AlterUserScramCredentials: SASL users, kept as records.

As Kafka: the client salts the password (SaltedPassword, Salt, Iterations) and the
coordinator stores only StoredKey and ServerKey derived from it. Alter needs Alter on the
cluster, Describe needs Describe on the cluster (when an authorizer is configured).
Each user's alterations succeed or fail together, with Kafka's error codes and messages:
an empty name or too few/many iterations is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM, a user named twice DUPLICATE_RESOURCE, deleting or describing
a credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MECHANISMS,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from coordinator.apis.registry import RequestContext, handles
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from coordinator.security.records import ScramCredentialRecord, SecurityRecord


def _mechanism(code: int) -> str:
    if code not in MECHANISM_BY_TYPE:
        raise KafkaApiError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {code}")
    return MECHANISM_BY_TYPE[code]


def _checked_mechanism(name: str, mechanism: int, times_named: int) -> str:
    """The mechanism of one deletion or upsertion, after the checks both kinds share."""
    if not name:
        raise KafkaApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    checked = _mechanism(mechanism)
    if times_named > 1:
        raise KafkaApiError(
            ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
        )
    return checked


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
async def describe_user_scram_credentials(ctx: RequestContext, request: Any) -> dict[str, Any]:
    store = ctx.broker.security
    answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": []}
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return answer | {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": f"{ctx.principal} may not Describe the cluster",
        }
    known = store.credentials if store is not None else {}
    wanted = [u.name for u in request.users] if request.users else sorted(known)
    repeated = {name for name, count in Counter(wanted).items() if count > 1}
    for name in dict.fromkeys(wanted):
        result: dict[str, Any] = {
            "user": name,
            "error_code": 0,
            "error_message": None,
            "credential_infos": [],
        }
        if name in repeated:
            result.update(
                error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message="Cannot describe SCRAM credentials for the same user twice in a single request",
            )
        elif name not in known:
            result.update(
                error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message="Attempt to describe a user credential that does not exist",
            )
        else:
            result["credential_infos"] = [
                {"mechanism": MECHANISMS[mechanism][1], "iterations": credential.iterations}
                for mechanism, credential in sorted(known[name].items())
            ]
        answer["results"].append(result)
    return answer


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
async def alter_user_scram_credentials(ctx: RequestContext, request: Any) -> dict[str, Any]:
    store = ctx.broker.security
    users = list(dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions]))
    if not ctx.authorized(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        message = f"{ctx.principal} may not Alter the cluster"
        return {
            "throttle_time_ms": 0,
            "results": [
                {"user": u, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": message}
                for u in users
            ],
        }
    errors: dict[str, KafkaApiError] = {}
    records: dict[str, list[SecurityRecord]] = {u: [] for u in users}
    seen = Counter((entry.name, entry.mechanism) for entry in [*request.deletions, *request.upsertions])
    for deletion in request.deletions:
        try:
            mechanism = _checked_mechanism(
                deletion.name, deletion.mechanism, seen[(deletion.name, deletion.mechanism)]
            )
            if store is None or store.credential(deletion.name, mechanism) is None:
                raise KafkaApiError(
                    ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
                )
            records[deletion.name].append(ScramCredentialRecord(deletion.name, mechanism, None))
        except KafkaApiError as exc:
            errors.setdefault(deletion.name, exc)
    for upsertion in request.upsertions:
        try:
            mechanism = _checked_mechanism(
                upsertion.name, upsertion.mechanism, seen[(upsertion.name, upsertion.mechanism)]
            )
            if upsertion.iterations < MIN_ITERATIONS:
                raise KafkaApiError(
                    ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too few iterations (at least {MIN_ITERATIONS})"
                )
            if upsertion.iterations > MAX_ITERATIONS:
                raise KafkaApiError(
                    ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too many iterations (at most {MAX_ITERATIONS})"
                )
            if not upsertion.salt or not upsertion.salted_password:
                raise KafkaApiError(
                    ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
                )
            credential = credential_from_salted_password(
                mechanism, bytes(upsertion.salted_password), bytes(upsertion.salt), upsertion.iterations
            )
            records[upsertion.name].append(ScramCredentialRecord(upsertion.name, mechanism, credential))
        except KafkaApiError as exc:
            errors.setdefault(upsertion.name, exc)
    if store is not None:
        store.write([record for user, changes in records.items() if user not in errors for record in changes])
    return {
        "throttle_time_ms": 0,
        "results": [
            {"user": u, "error_code": errors[u].code, "error_message": errors[u].message}
            if u in errors
            else {"user": u, "error_code": 0, "error_message": None}
            for u in users
        ],
    }
