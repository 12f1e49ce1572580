"""The coordinator's storage at the disk edge: each partition's log of segments and its
indexes, record batches, the topic store, compaction, producer state and producer fences,
the outage log of a full disk, and the files written atomically.

Imports nothing of the coordinator outside itself.
"""
