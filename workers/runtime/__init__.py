"""Running a worker's tasks: the task runner (start on assignment, stop on revocation),
prepared runs (a task readied before it is assigned), task writes and topics, and the
connections task output goes through.

Imports `spark/`, `storage/`, `config/` and `plugins/`.
"""
