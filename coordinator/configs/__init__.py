"""The coordinator's settings: its settings file and command line (`CoordinatorConfig`) with
the event loop it names (`event_loop`), the broker's dynamic configs
(IncrementalAlterConfigs/DescribeConfigs on the broker), and topic configs and their table of
names, defaults and checks.

Imports storage, security settings and the pure group settings; never the network edge.
"""
