"""`/connectors/{connector}/offsets`: KIP-875's read, alter and reset of a connector's
offsets, as Kafka Connect answers them. Changes are made by the leader, of a STOPPED
connector only; a change the herder cannot make (OffsetsRefused) is a 400 with its reason."""

from __future__ import annotations

from aiohttp import web

from workers.rest.errors import RestError, json_body
from workers.rest.forwarding import LeaderWrites
from workers.rest.herder import known_config


class OffsetsResource(LeaderWrites):
    async def get_offsets(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        known_config(self.herder, name)
        return web.json_response({"offsets": await self.herder.connector_offsets(name)})

    def _offsets_modifiable(self, name: str) -> None:
        """KIP-875's preconditions, with Kafka Connect's answers: the connector exists, is
        STOPPED (none of its tasks runs)."""
        known_config(self.herder, name)
        if not self.herder.stopped(name):
            raise RestError(
                400,
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be "
                "done for the specified connector by issuing a 'PUT' request to the "
                f"'/connectors/{name}/stop' endpoint",
            )

    async def alter_offsets(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        self._offsets_modifiable(name)
        body = await json_body(request)
        entries = body.get("offsets") if isinstance(body, dict) else None
        if not isinstance(entries, list) or not entries:
            raise RestError(400, "The offsets to be altered must be given as a non-empty 'offsets' array")
        changes = []
        for entry in entries:
            partition = entry.get("partition") if isinstance(entry, dict) else None
            offset = entry.get("offset") if isinstance(entry, dict) else None
            if not isinstance(partition, dict) or not (offset is None or isinstance(offset, dict)):
                raise RestError(400, 'Each offset must be {"partition": {...}, "offset": {...} or null}')
            changes.append((partition, offset))

        async def alter() -> web.StreamResponse:
            await self.herder.alter_offsets(name, changes)
            return web.json_response(
                {"message": "The offsets for this connector have been altered successfully"}
            )

        return await self.forwarding.by_leader(request, alter)

    async def reset_offsets(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        self._offsets_modifiable(name)

        async def reset() -> web.StreamResponse:
            await self.herder.reset_offsets(name)
            return web.json_response(
                {"message": "The offsets for this connector have been reset successfully"}
            )

        return await self.forwarding.by_leader(request, reset)
