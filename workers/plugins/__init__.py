"""The connector plugin API and how plugins are found: what a connector, a task and a converter
are (`api`), connector names and the one way a name becomes a path (`names`), Kafka Connect's
converters (`converters`), the plugins a worker found (`registry`, an instance handed to who
looks one up), and the plugin path and its scan (`path`, `scan`).

The bottom of the worker: it imports nothing of workers/ outside itself. `workers.plugins`
re-exports the API, as the README imports it.
"""

from workers.plugins.api import *  # noqa: F403 (the public API, as `workers.plugins`)
