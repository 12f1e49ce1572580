"""The distributed herder, as Kafka Connect's `distributed/`: the herder, the leader's
planning and duties, requests between workers, warm handoff, and below it the assignors
(`assignor/`) and the two group protocols' membership (`membership/`).

Imports `runtime/`, `storage/`, `observe/`, `spark/`, `config/` and `plugins/`; never REST.
"""
