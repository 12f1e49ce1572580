"""Client quotas: produce and fetch byte rates per user and client id, as Kafka has them.

`entities.py` holds the settings (who has which quota, and which quota applies to a
connection), `rates.py` measures byte rates and turns an excess into a throttle time. Both
are pure: time comes in as an argument, and the records that change the settings are
written by the security store.
"""
