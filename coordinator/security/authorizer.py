"""Who may do what: Kafka's StandardAuthorizer rules over the ACL bindings in the store.

Rules, in order (Kafka 4.x, StandardAuthorizerData):
1. a principal listed in `super.users` may do anything;
2. the bindings that apply to a resource are those of its type whose pattern matches its
   name: LITERAL with the same name, LITERAL "*" (any name), PREFIXED with a prefix of it;
3. of those, a binding applies to a request when its principal is the request's or
   `User:*`, its host is the client's address or "*", and its operation is the one asked,
   or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of
   ALTER_CONFIGS also allows DESCRIBE_CONFIGS (a DENY implies nothing);
4. any applicable DENY refuses; otherwise any applicable ALLOW permits;
5. when no binding at all matches the resource (whatever its principal),
   `allow.everyone.if.no.acl.found` decides; when some do but none applies, it is refused.

Pure: the bindings are handed in; no IO.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coordinator.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


def pattern_matches(binding: AclBinding, resource_name: str) -> bool:
    if binding.pattern_type == PatternType.LITERAL:
        return binding.resource_name in (resource_name, WILDCARD)
    return binding.pattern_type == PatternType.PREFIXED and resource_name.startswith(binding.resource_name)


def applies(binding: AclBinding, principal: str, host: str, operation: AclOperation) -> bool:
    """Whether a binding on the resource speaks to this principal, host and operation."""
    if binding.principal not in (principal, WILDCARD_PRINCIPAL):
        return False
    if binding.host not in (host, WILDCARD):
        return False
    if binding.operation in (operation, AclOperation.ALL):
        return True
    if binding.permission != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return binding.operation in IMPLIES_DESCRIBE
    return operation == AclOperation.DESCRIBE_CONFIGS and binding.operation in IMPLIES_DESCRIBE_CONFIGS


class StandardAuthorizer:
    def __init__(
        self,
        bindings: Callable[[], Iterable[AclBinding]],
        super_users: frozenset[str],
        allow_everyone_if_no_acl_found: bool,
    ) -> None:
        self._bindings = bindings
        self.super_users = super_users
        self.allow_if_no_acl = allow_everyone_if_no_acl_found

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        found_resource_acl = allowed = False
        for binding in self._bindings():
            if binding.resource_type != resource_type or not pattern_matches(binding, name):
                continue
            found_resource_acl = True
            if applies(binding, principal, host, operation):
                if binding.permission == AclPermissionType.DENY:
                    return False
                allowed = True
        return allowed or (not found_resource_acl and self.allow_if_no_acl)

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may do `operation` on at least one resource of the type
        (Kafka's authorizeByResourceType: an ALLOW not overridden by a DENY that covers it)."""
        if principal in self.super_users:
            return True
        relevant = [
            b
            for b in self._bindings()
            if b.resource_type == resource_type and applies(b, principal, host, operation)
        ]
        denies = [b for b in relevant if b.permission == AclPermissionType.DENY]
        if any(b.pattern_type == PatternType.LITERAL and b.resource_name == WILDCARD for b in denies):
            return False
        for allow in (b for b in relevant if b.permission == AclPermissionType.ALLOW):
            if not any(_deny_covers(deny, allow) for deny in denies):
                return True
        if self.allow_if_no_acl:
            return not any(b.resource_type == resource_type for b in self._bindings())
        return False


def _deny_covers(deny: AclBinding, allow: AclBinding) -> bool:
    """A DENY that refuses every resource the ALLOW would permit."""
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name) and (
            allow.pattern_type == PatternType.PREFIXED or allow.resource_name != WILDCARD
        )
    return allow.pattern_type == PatternType.LITERAL and allow.resource_name == deny.resource_name
