"""The mutations: each breaks one promise of the product in one line, and names the tests that
must then fail on their own assertions.

A mutation is data: the file, an exact snippet of it (enough lines around the changed one
to occur exactly once) and its replacement. When the product is refactored, keep each
mutation's meaning and move its snippet to where that logic now lives; the runner refuses
to run a mutation whose snippet is not found exactly once. A new promise worth guarding is
a new entry here, with the test that checks it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    breaks: str  # the promise, as the user would state it
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]


INTEGRATION = "tests/integration"
UNIT = "tests/unit"
TIMELINE = f"{INTEGRATION}/test_rebalance_timeline_over_tcp.py::"
TIMELINE_CONSUMER = (
    f"{TIMELINE}test_a_consumer_groups_join_leave_and_session_expiry_are_on_its_timeline_and_in_metrics"
)
TIMELINE_CONNECT = (
    f"{TIMELINE}test_a_connect_join_that_moves_one_task_is_on_the_timeline_and_printed_by_the_cli"
)
GROUP_CONFIGS_OVER_TCP = (
    f"{INTEGRATION}/test_group_configs_over_tcp.py::"
    "test_a_groups_heartbeat_interval_is_set_described_bounded_and_kept"
)
# The workers' web view and rebalance figures.
TIMELINE_UNIT = f"{UNIT}/test_cluster_timeline.py::"
BROKER_CONFIGS = f"{INTEGRATION}/test_dynamic_broker_configs.py::"
WEB_VIEW_STATE = (
    f"{UNIT}/test_web_view.py::test_the_state_shows_moves_joins_and_escapes_names_and_metrics_match"
)
NEXT_LEADER = "test_a_write_a_leader_did_not_take_goes_to_the_next_leader"
ROLLING_RESTART_WRITES = (
    f"{INTEGRATION}/test_writes_through_restarts.py::"
    "test_config_writes_sent_during_a_rolling_restart_all_succeed_on_their_first_try[connect]"
)
WEB_VIEW_BROWSER = "tests/e2e/test_web_view.py::test_the_web_view_shows_a_join_move_a_task_live"

CONNECT_SESSION_OVER_WORKERS = (
    f"{INTEGRATION}/test_connect_group_configs_workers.py::"
    "test_a_worker_frozen_past_the_default_session_but_within_its_groups_keeps_its_work"
)
CONNECT_NEXT_HEARTBEAT = (
    "test_a_connect_workers_next_heartbeat_carries_the_groups_interval_and_session_which_it_follows"
)
CONFIGS_CLI = (
    f"{INTEGRATION}/test_group_configs_over_tcp.py::"
    "test_the_configs_command_alters_and_describes_a_groups_configs_as_kafka_configs"
)
CONNECT_SESSION_TESTS = (
    CONNECT_SESSION_OVER_WORKERS,
    f"{UNIT}/test_group_configs_core.py::{CONNECT_NEXT_HEARTBEAT}",
)

REAUTH = f"{INTEGRATION}/test_security_reauthentication.py::"
REAUTH_CLIENTS = (
    f"{REAUTH}test_a_confluent_producer_and_consumer_keep_working_across_several_reauthentications"
    "[sasl_plaintext-plain]"
)
REAUTH_EXPIRY = (
    f"{REAUTH}test_a_connection_that_does_not_reauthenticate_is_closed_at_its_first_request_"
    "after_the_lifetime"
)
REAUTH_RAW = (
    f"{REAUTH}test_a_connection_that_reauthenticates_lives_past_its_first_lifetime_at_most_once_a_second"
)
REAUTH_REFUSED = (
    f"{REAUTH}test_a_reauthentication_as_another_user_or_with_another_mechanism_is_refused_and_closes"
)

MUTATIONS: tuple[Mutation, ...] = (
    # -- committed offsets and storage recovery -------------------------------------------
    Mutation(
        name="offset-commits-kept-in-memory",
        breaks="committed offsets survive a kill -9 of the coordinator",
        file="coordinator/groups/offsets.py",
        original="self.ctx.emit(OffsetCommitRecord(body.group_id, topic.name, part.partition_index, value))",
        replacement="self.replay(OffsetCommitRecord(body.group_id, topic.name, part.partition_index, value))",
        tests=(
            f"{INTEGRATION}/test_group_durability_and_admin.py::"
            "test_membership_and_committed_offsets_survive_kill9_of_the_coordinator",
        ),
    ),
    Mutation(
        name="recovery-drops-the-last-batch",
        breaks="a kill -9 loses nothing that was acknowledged",
        file="coordinator/storage/segment.py",
        original="            or pos + header.size > self.size\n",
        replacement="            or pos + header.size >= self.size\n",
        tests=(
            f"{INTEGRATION}/test_kill9_durability.py::"
            "test_kill9_during_acks_all_loop_keeps_every_acknowledged_record",
        ),
    ),
    Mutation(
        name="recovery-skips-the-crc",
        breaks="recovery cuts a corrupt tail instead of serving it",
        file="coordinator/storage/segment.py",
        original="        if validate and not batches.crc_is_valid(view, pos, header):",
        replacement="        if False and validate and not batches.crc_is_valid(view, pos, header):",
        tests=(
            f"{UNIT}/test_partition_log.py::"
            "test_recovery_truncates_a_torn_tail_and_keeps_complete_batches[flipped byte in last batch]",
        ),
    ),
    Mutation(
        name="producer-state-not-restored",
        breaks="an idempotent producer's retry after a restart is not stored twice",
        file="coordinator/storage/partition_log.py",
        original="        log._restore_producer_state(names)\n",
        replacement="        pass  # mutation: producer state forgotten on restart\n",
        tests=(
            f"{UNIT}/test_partition_log.py::test_idempotent_duplicates_and_sequence_gaps_survive_restart",
        ),
    ),
    # -- reconciliation (consumer and connect groups) -------------------------------------
    Mutation(
        name="pending-revocation-not-held",
        breaks="revoke before assign: no item is given to a new owner while the old one still holds it",
        file="coordinator/groups/reconciliation.py",
        # An item pending revocation no longer counts as held: free for a new owner before the old
        # one lets go.
        original="        return self.assigned | self.pending_revocation\n",
        replacement="        return self.assigned\n",
        tests=(
            f"{INTEGRATION}/test_connect_groups_over_tcp.py::test_case_studies_empty_group_w1_joins_w2_joins",
            f"{UNIT}/test_connect_group_core.py::test_case_study_w2_joins_and_w1_revokes_bc0_bt1_before_w2_gets_them",
        ),
    ),
    Mutation(
        name="revoked-work-never-stopped",
        breaks="a worker lets go of revoked work only once it has stopped: no task runs on two workers",
        file="workers/distributed/membership/machine.py",
        original="            return [self._stop(fresh), Beat()] if fresh else []\n",
        replacement=(
            "            self.stopped(fresh)  # mutation: acknowledged, never stopped\n"
            "            return [Beat()]\n"
        ),
        tests=(
            f"{UNIT}/test_member_machine.py::"
            "test_a_connect_member_stops_revoked_work_and_acknowledges_before_it_starts_anything_new",
            f"{INTEGRATION}/test_worker_membership.py::"
            "test_joins_move_only_what_balance_needs_and_a_graceful_leave_hands_over_at_once",
        ),
    ),
    Mutation(
        name="newer-epoch-not-fenced",
        breaks="a heartbeat at an epoch the member never had is fenced",
        file="coordinator/groups/reconciliation.py",
        original="    if epoch in (0, current.member_epoch):\n",
        replacement="    if epoch == 0 or epoch >= current.member_epoch:\n",
        tests=(
            f"{UNIT}/test_consumer_group_core.py::test_fencing_and_the_lost_response_case",
            f"{UNIT}/test_connect_group_core.py::test_fencing_removes_the_worker_and_the_lost_response_case_is_accepted",
        ),
    ),
    # -- commit fencing ---------------------------------------------------------------------
    Mutation(
        name="classic-commit-not-fenced",
        breaks="a commit at a generation the group has moved past is refused (ILLEGAL_GENERATION)",
        file="coordinator/groups/classic.py",
        original="        if generation != self.generation:\n",
        replacement="        if False:\n",
        tests=(
            f"{INTEGRATION}/test_classic_groups_real_clients.py::"
            "test_members_join_and_leave_under_production_and_each_record_is_consumed_once[kafka-python-range]",
            f"{UNIT}/test_offsets_and_group_admin_core.py::test_commits_are_validated_against_the_generation",
        ),
    ),
    Mutation(
        name="consumer-commit-not-fenced",
        breaks="a commit at a member epoch the member has moved past is refused (STALE_MEMBER_EPOCH)",
        file="coordinator/groups/modern/group.py",
        original="        if epoch != current:\n            raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH",
        replacement="        if False:\n            raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH",
        tests=(
            f"{INTEGRATION}/test_consumer_groups_real_clients.py::"
            "test_members_one_three_one_under_production_each_record_once_kept_partitions_never_pause[uniform]",
        ),
    ),
    Mutation(
        name="simple-commit-with-a-member-id-refused-by-an-empty-classic-group",
        breaks="an assign()-ed consumer under group.protocol=consumer commits again and again",
        file="coordinator/groups/classic.py",
        original="        if generation < 0 and self.state == ClassicState.EMPTY:\n",
        replacement="        if generation < 0 and not member_id and self.state == ClassicState.EMPTY:\n",
        tests=(
            f"{INTEGRATION}/test_assign_mode_commits_real_clients.py::"
            "test_an_assign_mode_consumer_commits_twice_and_on_close_and_reads_its_offsets_back[consumer-new-group]",
            f"{UNIT}/test_offsets_and_group_admin_core.py::"
            "test_a_simple_commit_carrying_a_member_id_is_accepted_wherever_the_group_has_no_members",
        ),
    ),
    Mutation(
        name="simple-commit-with-a-member-id-refused-by-a-memberless-consumer-group",
        breaks="an assign()-ed consumer commits to a consumer group whose members have left",
        file="coordinator/groups/modern/group.py",
        original="        if generation < 0 and not self.members:\n",
        replacement="        if generation < 0 and not member_id and not self.members:\n",
        tests=(
            f"{INTEGRATION}/test_assign_mode_commits_real_clients.py::"
            "test_an_assign_mode_consumer_commits_twice_and_on_close_and_reads_its_offsets_back"
            "[consumer-after-a-subscriber-left]",
            f"{UNIT}/test_offsets_and_group_admin_core.py::"
            "test_a_simple_commit_carrying_a_member_id_is_accepted_wherever_the_group_has_no_members",
        ),
    ),
    # -- classic groups ---------------------------------------------------------------------
    Mutation(
        name="classic-generation-not-bumped",
        breaks="each completed rebalance is a new generation",
        file="coordinator/groups/classic.py",
        original="        group.generation += 1\n",
        replacement="        group.generation += 0\n",
        tests=(
            f"{UNIT}/test_classic_group_core.py::test_eager_flow_member_id_required_then_join_sync_and_heartbeat",
        ),
    ),
    Mutation(
        name="classic-heartbeat-hides-a-rebalance",
        breaks="members are told to rejoin (REBALANCE_IN_PROGRESS) when another joins",
        file="coordinator/groups/classic.py",
        original="                if group.state == ClassicState.PREPARING_REBALANCE:\n"
        "                    error = ErrorCode.REBALANCE_IN_PROGRESS",
        replacement="                if False:\n                    error = ErrorCode.REBALANCE_IN_PROGRESS",
        tests=(
            f"{UNIT}/test_classic_group_core.py::"
            "test_a_new_member_makes_everyone_rejoin_and_followers_wait_for_the_leaders_assignment",
        ),
    ),
    Mutation(
        name="classic-session-never-expires",
        breaks="a silent classic member is removed after its session timeout",
        file="coordinator/groups/classic.py",
        original="""        group.triggers.append(Trigger(SESSION_EXPIRY, member_id))
        self.remove_member(group, member_id)
        self.members_left(group, now_ms)""",
        replacement="""        group.triggers.append(Trigger(SESSION_EXPIRY, member_id))
        return  # mutation: sessions never expire
        self.members_left(group, now_ms)""",
        tests=(
            f"{UNIT}/test_classic_group_core.py::test_session_expiry_removes_a_silent_member_and_rebalances_the_rest",
        ),
    ),
    Mutation(
        name="classic-describe-shows-subscriptions-while-rebalancing",
        breaks="DescribeGroups gives a classic group's protocol and subscriptions only while it is Stable",
        file="coordinator/groups/classic.py",
        original="        stable = self.state == ClassicState.STABLE\n",
        replacement="        stable = self.state in "
        "(ClassicState.STABLE, ClassicState.PREPARING_REBALANCE)\n",
        tests=(
            f"{INTEGRATION}/test_classic_groups_real_clients.py::"
            "test_an_admin_client_sees_subscriptions_only_while_stable_and_assignments_as_held",
            f"{UNIT}/test_classic_group_kafka_rules.py::test_describe_shows_protocol_and_metadata_only_while_stable",
        ),
    ),
    # -- consumer groups --------------------------------------------------------------------
    Mutation(
        name="modern-session-never-expires",
        breaks="a silent consumer-group member or worker is removed after its session timeout",
        file="coordinator/groups/modern/engine.py",
        original="""        if group is not None and member_id in group.members:
            self.remove(group, member_id, now_ms, cause=SESSION_EXPIRY)""",
        replacement="""        if False:  # mutation: sessions never expire
            self.remove(group, member_id, now_ms, cause=SESSION_EXPIRY)""",
        tests=(
            f"{UNIT}/test_consumer_group_core.py::test_session_expiry_and_rebalance_timeout_remove_members",
            f"{INTEGRATION}/test_connect_groups_over_tcp.py::test_case_study_a_worker_leaving",
            f"{UNIT}/test_connect_group_core.py::"
            "test_case_study_a_worker_leaving_keeps_assignments_then_a_reason_change_reassigns",
        ),
    ),
    Mutation(
        name="consumer-static-member-replaced-while-active",
        breaks="an active static consumer member is not replaced: UNRELEASED_INSTANCE_ID",
        file="coordinator/groups/consumer.py",
        original="if holder.assignment.member_epoch != TEMPORARY_LEAVE_EPOCH and holder.classic is None:\n",
        replacement="if False:\n",
        tests=(
            f"{UNIT}/test_consumer_group_core.py::test_a_static_member_restarts_in_place_after_a_temporary_leave",
        ),
    ),
    # -- connect groups ---------------------------------------------------------------------
    Mutation(
        name="connect-install-not-validated",
        breaks="an installed assignment that gives a task to two workers is refused (INVALID_ASSIGNMENT)",
        file="coordinator/groups/client_assignment.py",
        original='            if item in seen:\n                return f"{item!r} is assigned to both',
        replacement='            if False:\n                return f"{item!r} is assigned to both',
        tests=(f"{UNIT}/test_connect_group_core.py::test_install_validation",),
    ),
    Mutation(
        name="connect-fenced-worker-kept",
        breaks="a worker heartbeating at a wrong epoch is removed from its group (the draft's fencing)",
        file="coordinator/groups/connect.py",
        original="""    def on_fenced(self, group: Any, member: Member[Work], now_ms: int) -> None:
        self.remove(group, member.member_id, now_ms, cause=FENCED)""",
        replacement="""    def on_fenced(self, group: Any, member: Member[Work], now_ms: int) -> None:
        pass  # mutation: a fenced worker stays""",
        tests=(
            f"{UNIT}/test_connect_group_core.py::test_fencing_removes_the_worker_and_the_lost_response_case_is_accepted",
        ),
    ),
    Mutation(
        name="eager-target-reconciled-incrementally",
        breaks="under the eager assignor every worker stops everything before anything is assigned",
        file="coordinator/groups/connect.py",
        original="""    def revokes_all(self, group: Any) -> bool:
        return group.eager""",
        replacement="""    def revokes_all(self, group: Any) -> bool:
        return False  # mutation: eager targets keep what they keep""",
        tests=(
            f"{UNIT}/test_connect_assignors_core.py::test_an_eager_round_revokes_everything_before_anything_is_assigned",
        ),
    ),
    # -- workers ----------------------------------------------------------------------------
    Mutation(
        name="watchdog-waits-for-the-session",
        breaks="a worker cut off from the coordinator stops its work before its session can expire",
        file="workers/distributed/membership/session_watch.py",
        original=(
            "        return self.answered_sent_at + session_s - min(max(session_s / 3, 1.0), session_s / 2)\n"
        ),
        replacement="        return self.answered_sent_at + session_s\n",
        tests=(
            f"{UNIT}/test_member_machine.py::"
            "test_no_zombies_work_stops_once_before_the_session_can_expire_and_not_while_answers_come",
            f"{INTEGRATION}/test_worker_membership.py::"
            "test_a_worker_cut_off_from_the_coordinator_stops_its_work_before_its_session_can_expire",
            f"{INTEGRATION}/test_workers.py::"
            "test_workers_cut_off_from_the_coordinator_stop_their_tasks_before_anyone_else_runs_them",
            f"{INTEGRATION}/test_workers_classic.py::"
            "test_workers_cut_off_from_the_coordinator_stop_their_work_within_the_session",
        ),
    ),
    Mutation(
        name="graceful-leave-without-leaving",
        breaks="a worker stopped gracefully hands its work over at once, not after its session",
        file="workers/distributed/membership/connect.py",
        original="await self._request(lambda api: api.heartbeat(self.group_id, self.member_id, LEAVE_EPOCH))",
        replacement="pass  # mutation: the leave heartbeat is never sent",
        tests=(
            f"{INTEGRATION}/test_workers.py::"
            "test_a_join_moves_only_what_balance_needs_and_a_graceful_leave_moves_at_once",
        ),
    ),
    Mutation(
        name="classic-graceful-leave-without-leaving",
        breaks="a classic worker stopped gracefully hands its work over at once, not after its session",
        file="workers/distributed/membership/classic.py",
        original="                    await asyncio.wait_for(leave, self.request_timeout_ms / 1000)",
        replacement="                    leave.close()  # mutation: the LeaveGroup is never sent",
        tests=(
            f"{INTEGRATION}/test_workers_classic.py::"
            "test_cooperative_workers_stop_only_what_moves_on_a_join_and_a_graceful_leave",
        ),
    ),
    Mutation(
        name="connections-never-take-turns",
        breaks="a request alone on its connection is answered within a burst of pipelined requests on others",
        file="coordinator/turns.py",
        original="        return answered_since_woken == 0 or now < self._deadline\n",
        replacement="        return True  # mutation: every buffered request is answered back to back\n",
        tests=(
            f"{INTEGRATION}/test_connection_turns.py::"
            "test_a_request_alone_on_its_connection_is_answered_within_a_burst_on_others",
        ),
    ),
    Mutation(
        name="group-log-written-on-the-event-loop",
        breaks="a stalled write of the group log holds only the answers that wait for it",
        file="coordinator/group_service.py",
        original=(
            "        self._writing = asyncio.get_running_loop().run_in_executor(\n"
            "            self._writer, _append_all, self._log, [held.batch for held in sending]\n"
            "        )\n"
        ),
        replacement=(
            "        self._writing = asyncio.get_running_loop().create_future()  # mutation: on the loop\n"
            "        self._writing.set_result(_append_all(self._log, [held.batch for held in sending]))\n"
        ),
        tests=(
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_a_stalled_write_holds_only_the_answers_that_wait_for_it",
        ),
    ),
    Mutation(
        name="outcomes-behind-a-failed-write-kept",
        breaks="a failed write of the group log takes back every outcome built on it",
        file="coordinator/group_service.py",
        original=(
            "            while self._held[-1] is not failed:  # everything held after it was built on it\n"
            "                self._take_back_held(self._held.pop(), exc)\n"
            "            self._take_back_held(self._held.pop(), exc)\n"
            "            self._unsent = []\n"
        ),
        replacement=(
            "            self._held.remove(failed)  # mutation: only the failed outcome goes back\n"
            "            self._take_back_held(failed, exc)\n"
            "            self._unsent = [held for held in self._held if held.batch is not None]\n"
        ),
        tests=(
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_a_failed_write_takes_back_its_outcome_and_every_one_held_behind_it",
        ),
    ),
    Mutation(
        name="parked-request-forgotten-when-taken-back",
        breaks="a request parked by an outcome that is taken back is answered with the error",
        file="coordinator/groups/coordinator.py",
        original="        if own_request is not None and own_request not in outcome.replies:\n",
        replacement="        if False:  # mutation: a parked request is left waiting\n",
        tests=(
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_a_join_parked_behind_a_failed_write_is_answered_with_the_error",
        ),
    ),
    Mutation(
        name="compaction-on-the-event-loop",
        breaks="compacting the group log (seconds for 100 MB) leaves the event loop serving",
        file="coordinator/broker.py",
        original="                        freed = await asyncio.to_thread(partition.compact, now)\n",
        replacement="                        freed = partition.compact(now)  # mutation: on the event loop\n",
        tests=(
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_compacting_the_group_log_leaves_commits_and_the_event_loop_serving",
        ),
    ),
    Mutation(
        name="compaction-holds-the-partition-lock",
        breaks="a log being compacted takes appends: the group log's commits and a user topic's produces",
        file="coordinator/storage/partition_log.py",
        original="                runs = self._rewrite(scanned, now_ms)\n",
        replacement=(
            "                with self.lock:  # mutation: appends wait for the whole compaction\n"
            "                    runs = self._rewrite(scanned, now_ms)\n"
        ),
        tests=(
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_compacting_the_group_log_leaves_commits_and_the_event_loop_serving",
            f"{INTEGRATION}/test_group_log_writer.py::"
            "test_a_produce_to_a_topic_being_compacted_is_answered_during_the_compaction",
        ),
    ),
    Mutation(
        name="segments-sealed-during-compaction-dropped",
        breaks="records appended while a compaction runs are all kept, a roll included",
        file="coordinator/storage/partition_log.py",
        original="        self.segments = survivors + self.segments[len(sealed) :]\n",
        replacement="        self.segments = survivors + [self.segments[-1]]  # mutation: the old shape\n",
        tests=(f"{UNIT}/test_compaction.py::test_records_appended_while_a_compaction_runs_are_all_kept",),
    ),
    Mutation(
        name="retention-deletes-under-compaction",
        breaks="retention waits while a compaction reads the segments it would delete",
        file="coordinator/storage/partition_log.py",
        original=(
            "        if not self._cleaning.acquire(blocking=False):\n"
            "            return 0  # a compaction is reading the segments; retention runs again next round\n"
            "        try:\n"
            "            with self.lock:\n"
            "                return self._enforce_retention(now_ms)\n"
            "        finally:\n"
            "            self._cleaning.release()\n"
        ),
        replacement=(
            "        with self.lock:  # mutation: retention does not wait for a compaction\n"
            "            return self._enforce_retention(now_ms)\n"
        ),
        tests=(f"{UNIT}/test_compaction.py::test_retention_waits_while_a_compaction_reads_the_segments",),
    ),
    Mutation(
        name="close-waits-for-compaction",
        breaks="closing a log (topic deleted, coordinator stopping) abandons its compaction",
        file="coordinator/storage/compaction.py",
        original="    if closing is not None and closing.is_set():\n        raise Abandoned\n",
        replacement="    return  # mutation: a compaction runs to its end\n",
        tests=(
            f"{UNIT}/test_compaction.py::"
            "test_closing_a_log_abandons_its_compaction_instead_of_waiting_for_it",
        ),
    ),
    Mutation(
        name="describe-writes-a-subscription-it-has-not-seen-as-one-it-has",
        breaks="a big group's ConsumerGroupDescribe answer is the bytes Kafka's schema gives",
        file="connect_rebalance/protocol/hot_messages.py",
        original="        key = id(names)  # alive in the fields until the answer is written\n",
        replacement="        key = len(names)  # mutation: any list of that length stands for this one\n",
        tests=(
            f"{UNIT}/test_hot_messages.py::test_consumer_group_describe_answers_are_the_schema_codecs_bytes",
        ),
    ),
    Mutation(
        name="deleted-topic-keeps-its-offsets",
        breaks="a topic created again under a deleted one's name is read by its groups from its start",
        file="coordinator/apis/topics.py",
        original="        ctx.groups.topics_deleted(deleted_names)\n",
        replacement="        pass  # mutation: the groups never hear of it\n",
        tests=(
            f"{INTEGRATION}/test_group_durability_and_admin.py::"
            "test_a_deleted_topic_takes_its_committed_offsets_along",
        ),
    ),
    Mutation(
        name="sweep-keeps-offsets-of-missing-topics",
        breaks="offsets of a topic deleted while the coordinator was down do not outlive it",
        file="coordinator/groups/offsets.py",
        original="        self.topics_deleted({t for t in topics if self.ctx.partitions_of(t) is None})",
        replacement="        self.topics_deleted(set())  # mutation",
        tests=(
            f"{UNIT}/test_offsets_and_group_admin_core.py::"
            "test_a_deleted_topic_takes_every_groups_offsets_for_it_and_the_sweep_catches_any_missed",
        ),
    ),
    Mutation(
        name="duplicate-topic-answered-twice",
        breaks="a CreateTopics naming a topic twice is answered as librdkafka can read it",
        file="coordinator/apis/topics.py",
        original="            continue  # one result for the name, after the others (a client refuses two)\n",
        replacement="            pass  # mutation: answered for each time it is named\n",
        tests=(
            f"{INTEGRATION}/test_topic_admin.py::"
            "test_a_name_given_twice_in_one_create_is_refused_once_and_the_others_are_created",
        ),
    ),
    Mutation(
        name="framework-settings-stored-and-ignored",
        breaks="a Kafka Connect setting the runtime does not run (transforms, converters...) is refused",
        file="workers/plugins/api.py",
        original="        problems = framework_problems(config)\n",
        replacement="        problems = []  # mutation: accepted, and ignored\n",
        tests=(
            f"{INTEGRATION}/test_worker_request_safety.py::"
            "test_framework_settings_the_runtime_would_ignore_are_refused_and_json_values_read_as_connect_does",
        ),
    ),
    Mutation(
        name="json-values-stored-as-python-text",
        breaks="a JSON number or boolean in a connector config is stored as Kafka Connect stores it",
        file="workers/config/connector_validation.py",
        original="value if isinstance(value, str) else json.dumps(value)",
        replacement="value if isinstance(value, str) else str(value)",
        tests=(
            f"{INTEGRATION}/test_worker_request_safety.py::"
            "test_framework_settings_the_runtime_would_ignore_are_refused_and_json_values_read_as_connect_does",
        ),
    ),
    Mutation(
        name="describe-kept-across-a-change",
        breaks="a describe of a consumer group shows what changed since the last one",
        file="coordinator/groups/modern/group.py",
        original="        self.derived_state = self.last_described = None\n",
        replacement="        self.derived_state = None  # mutation: the last describe outlives changes\n",
        tests=(
            f"{UNIT}/test_consumer_group_core.py::"
            "test_a_describe_shows_every_change_and_an_unchanged_group_hands_back_what_it_described",
        ),
    ),
    Mutation(
        name="describe-kept-across-a-topic-change",
        breaks="a describe of a consumer group names the topics as they are now",
        file="coordinator/groups/consumer.py",
        original="    def describe_key(self) -> Any:\n        return self.topics.version\n",
        replacement="    def describe_key(self) -> Any:\n        return None  # mutation\n",
        tests=(
            f"{UNIT}/test_consumer_group_core.py::"
            "test_a_describe_shows_every_change_and_an_unchanged_group_hands_back_what_it_described",
        ),
    ),
    Mutation(
        name="described-members-written-once-for-every-version",
        breaks="a describe answer repeated for an unchanged group is the bytes of the version asked",
        file="connect_rebalance/protocol/hot_messages.py",
        original="        key = (id(members), self.version)\n",
        replacement="        key = (id(members), 0)  # mutation: one version's bytes for all\n",
        tests=(
            f"{UNIT}/test_hot_messages.py::"
            "test_members_handed_out_again_are_written_once_per_version_as_the_schema_codec_writes_them",
        ),
    ),
    Mutation(
        name="tasks-keep-their-old-configs",
        breaks="a connector whose task configs change runs its tasks with the new ones",
        file="workers/runtime/task_runner.py",
        original="                if started and index < len(configs) and runner.config != configs[index]:\n",
        replacement="                if False:  # mutation: tasks keep their old configs\n",
        tests=(
            f"{INTEGRATION}/test_workers.py::"
            "test_running_tasks_restart_with_their_new_configs_when_the_connector_config_changes",
        ),
    ),
    Mutation(
        name="security-settings-type-the-coordinator-config",
        breaks="no import circle among the project's modules, TYPE_CHECKING imports included",
        file="coordinator/security/settings.py",
        original="from coordinator.security.listeners import Listener\n",
        replacement=(
            "from coordinator.security.listeners import Listener\n\n"
            "if __import__('typing').TYPE_CHECKING:  # mutation: the config's type, imported\n"
            "    from coordinator.configs.coordinator import CoordinatorConfig  # noqa: F401\n"
        ),
        tests=("tests/test_layout.py::test_no_import_circle_across_the_packages",),
    ),
    Mutation(
        name="runtime-imports-a-connector",
        breaks="nothing of the worker outside connectors/ depends on the connectors it ships",
        file="workers/runtime/task_runner.py",
        original="from workers.config.providers import VariableError, resolve, with_variables\n",
        replacement=(
            "from workers.config.providers import VariableError, resolve, with_variables\n"
            "from workers.connectors import verifiable  # noqa: F401 (mutation)\n"
        ),
        tests=("tests/test_layout.py::test_nothing_of_the_worker_imports_its_connectors",),
    ),
    Mutation(
        name="follower-gives-up-on-a-gone-leader",
        breaks="a write sent to a follower whose leader is gone reaches the next leader and succeeds",
        file="workers/rest/forwarding.py",
        original=(
            "            except ClientConnectorError as exc:  # not delivered: the leader's port is closed\n"
        ),
        replacement="            except ZeroDivisionError as exc:  # mutation: a closed port fails it\n",
        tests=(f"{UNIT}/test_rest_resources.py::{NEXT_LEADER}",),
    ),
    Mutation(
        name="shutting-down-leaders-refusal-passed-back",
        breaks="a write sent to a follower whose leader is shutting down reaches the next leader",
        file="workers/rest/forwarding.py",
        original="                if not _shutting_down(answer):\n                    return answer\n",
        replacement="                return answer  # mutation: the leader's 503 is the answer\n",
        tests=(f"{UNIT}/test_rest_resources.py::{NEXT_LEADER}", ROLLING_RESTART_WRITES),
    ),
    Mutation(
        name="stopping-worker-takes-writes",
        breaks="a worker shutting down refuses writes with a clear 503 and still answers reads",
        file="workers/rest/server.py",
        original="        if herder.stopping() and request.method not in READS:\n",
        replacement="        if False:  # mutation: writes are taken until the stores close\n",
        tests=(f"{UNIT}/test_rest_resources.py::{NEXT_LEADER}",),
    ),
    Mutation(
        name="follower-writes-itself",
        breaks="a config write sent to a follower is made by the leader, which writes the config topic",
        file="workers/rest/forwarding.py",
        original="            leader_url = self.herder.leader_url()\n            if leader_url is None:\n",
        replacement=(
            "            leader_url = self.herder.leader_url()\n"
            "            if True:  # mutation: every worker writes what it is sent\n"
        ),
        tests=(f"{UNIT}/test_rest_resources.py::test_a_followers_writes_are_answered_by_its_leader",),
    ),
    Mutation(
        name="rest-reaches-past-the-herder-protocol",
        breaks="the REST API asks the worker only what its Herder protocol offers",
        file="workers/rest/root.py",
        original='"spark_runtime": self.herder.spark_runtime(),',
        replacement='"spark_runtime": self.herder.spark.describe(),  # mutation: a herder part',
        tests=(
            f"{UNIT}/test_rest_resources.py::test_every_resource_is_served_from_the_herder_protocol_alone",
        ),
    ),
    Mutation(
        name="herder-refusal-answered-500",
        breaks="a config or offsets change the herder refuses is Kafka Connect's 400 with its reason",
        file="workers/rest/server.py",
        original="    except (InvalidConnectorConfig, OffsetsRefused) as exc:",
        replacement="    except ZeroDivisionError as exc:  # mutation: the herder's refusals are not mapped",
        tests=(f"{UNIT}/test_rest_resources.py::test_the_herders_refusals_are_kafka_connects_400s",),
    ),
    Mutation(
        name="forward-decodes-the-path",
        breaks="a write sent to a follower acts on the connector its URL names, not another",
        file="workers/rest/forwarding.py",
        original='        url = URL(f"{base_url}{request.rel_url.raw_path}", encoded=True)\n',
        replacement='        url = f"{base_url}{request.path}"  # mutation: the decoded path\n',
        tests=(
            f"{INTEGRATION}/test_worker_request_safety.py::"
            "test_a_write_sent_to_either_worker_acts_on_the_connector_its_url_names",
        ),
    ),
    Mutation(
        name="forward-drops-the-location",
        breaks="a connector created through a follower is answered with its Location",
        file="workers/rest/forwarding.py",
        original='for h in ("Location",) if h in answer.headers}',
        replacement="for h in () if h in answer.headers}",
        tests=(
            f"{INTEGRATION}/test_worker_request_safety.py::"
            "test_a_write_sent_to_either_worker_acts_on_the_connector_its_url_names",
        ),
    ),
    Mutation(
        name="openapi-operation-renamed",
        breaks="a client generated from Kafka Connect's OpenAPI document finds its operations by their names",
        file="workers/rest/openapi.py",
        original='                "restartConnector",\n',
        replacement='                "restart",  # mutation: not Kafka Connect\'s operationId\n',
        tests=(
            f"{UNIT}/test_openapi_matches_kafka.py::"
            "test_every_kafka_connect_operation_has_kafkas_method_path_operation_id_summary_and_parameters",
        ),
    ),
    Mutation(
        name="openapi-entity-field-renamed",
        breaks="the OpenAPI document's models have the JSON fields Kafka Connect's entities are written with",
        file="workers/rest/openapi.py",
        # ConfigKeyInfo is built from "order_in_group" but written as "order".
        original='                "order": _INT,\n',
        replacement='                "order_in_group": _INT,  # mutation\n',
        tests=(
            f"{UNIT}/test_openapi_matches_kafka.py::test_bodies_are_kafka_connects_entities_with_their_json_fields",
        ),
    ),
    Mutation(
        name="classic-worker-drops-work-on-illegal-generation",
        breaks="a classic worker a generation behind at a downgrade keeps its work and rejoins with it",
        file="workers/distributed/membership/classic.py",
        original=(
            "        keep = code == ErrorCode.ILLEGAL_GENERATION and protocol_version(self.protocol) > 0\n"
        ),
        replacement="        keep = False  # mutation: every lost generation stops all work\n",
        tests=(
            f"{INTEGRATION}/test_connect_group_migration.py::"
            "test_a_classic_worker_a_generation_behind_at_a_downgrade_keeps_its_work",
        ),
    ),
    Mutation(
        name="downgrade-at-the-bumped-group-epoch",
        breaks="classic consumers settled when their group turns classic again are told to rejoin and keep "
        "their partitions, not that their generation is gone",
        file="coordinator/groups/classic_bridge.py",
        original="            generation=max(m.assignment.member_epoch for m in members),\n",
        replacement="            generation=group.group_epoch,  # mutation: the epoch the departure bumped\n",
        tests=(
            f"{UNIT}/test_group_migration_core.py::"
            "test_a_classic_member_one_epoch_behind_the_departure_is_told_to_rejoin_and_keeps_what_it_owns",
            f"{INTEGRATION}/test_consumer_group_migration.py::"
            "test_cooperative_classic_members_keep_their_partitions_when_the_group_turns_classic_again",
        ),
    ),
    Mutation(
        name="own-status-undone-by-its-echo",
        breaks="a worker's latest status of a task is not undone by its earlier one read back late",
        file="workers/storage/status_store.py",
        original='        if status.get("worker_id") == self.worker_id and self._read_back(name):\n',
        replacement="        if False:  # mutation: every record read back counts\n",
        tests=(
            f"{UNIT}/test_status_generations.py::"
            "test_a_workers_own_earlier_report_read_back_late_does_not_undo_its_latest",
        ),
    ),
    Mutation(
        name="added-partitions-never-found",
        breaks="partitions added to a topic while TopicIngest runs are read by the task they fall to",
        file="workers/spark/topic_source.py",
        original="            consumer.topics()  # asks the cluster afresh",
        replacement="            pass  # mutation: the partition list stays the first one;",
        tests=(
            "tests/e2e/test_topic_ingest.py::"
            "test_partitions_added_while_topic_ingest_runs_are_read_once_by_the_task_they_fall_to",
        ),
    ),
    Mutation(
        name="moved-partitions-read-from-the-start",
        breaks="a partition that a tasks.max change moves to another task is read on, not again",
        file="workers/spark/topic_source.py",
        original="        if self.handoff_root is None or self.share is None or not new:\n",
        replacement="        if True:  # mutation: a partition new to a query starts at its first record\n",
        tests=(
            f"{UNIT}/test_share_handoff.py::"
            "test_the_topic_source_asks_the_checkpoints_where_a_partition_new_to_its_query_starts",
            "tests/e2e/test_topic_ingest.py::"
            "test_changing_tasks_max_while_topic_ingest_runs_reads_every_record_once",
        ),
    ),
    Mutation(
        name="rejoin-before-the-stop-ends",
        breaks="a worker that lost its session rejoins only once all it ran has stopped",
        file="workers/distributed/membership/machine.py",
        original="        return [self._stop(self.runs, at_once=True), Rejoin(as_new=True",
        replacement="        return [self._stop(self.runs - self.stopping, at_once=True), Rejoin(as_new=True",
        tests=(
            f"{UNIT}/test_member_machine.py::"
            "test_a_rejoin_after_a_lost_session_waits_for_the_watchdogs_stop_under_way",
        ),
    ),
    Mutation(
        name="late-end-of-an-earlier-run-fails-the-task",
        breaks="a Spark task restarted in place is not failed by its previous run's late end",
        file="workers/spark/runtime.py",
        original="        if handlers is None or stopped or self._current.get(name) != run_id:\n",
        replacement="        if handlers is None:  # mutation: any end of the query counts\n",
        tests=(
            f"{UNIT}/test_spark_runtime_events.py::"
            "test_an_earlier_runs_late_end_does_not_fail_the_tasks_current_run",
        ),
    ),
    Mutation(
        name="tasks-not-balanced-apart",
        breaks="connectors and tasks are each balanced within one across workers (Kafka Connect's rule)",
        file="workers/distributed/assignor/balanced_target.py",
        original="    room = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}\n",
        replacement="    room = {m: len(wanted) for m in names}  # mutation: tasks stay where they are\n",
        tests=(
            f"{UNIT}/test_balanced_target.py::"
            "test_a_third_worker_joining_six_one_task_connectors_takes_connectors_and_tasks_alike",
            f"{INTEGRATION}/test_workers.py::"
            "test_connectors_and_tasks_each_balance_within_one_after_a_join_and_after_a_crash_and_a_bounce[connect]",
            f"{INTEGRATION}/test_workers.py::"
            "test_connectors_and_tasks_each_balance_within_one_after_a_join_and_after_a_crash_and_a_bounce[classic]",
        ),
    ),
    Mutation(
        name="task-output-not-fenced",
        breaks="a worker frozen past its session never writes after another worker started its task",
        file="coordinator/storage/producer_fences.py",
        original="        if current is not None and epoch < current:\n",
        replacement="        if False:  # mutation: older runs write on\n",
        tests=(
            f"{INTEGRATION}/test_fenced_output.py::"
            "test_a_worker_frozen_past_its_session_never_writes_after_another_worker_started_its_task",
        ),
    ),
    Mutation(
        name="fences-forgotten-on-restart",
        breaks="a task's older runs stay fenced after a kill -9 of the coordinator",
        file="coordinator/storage/producer_fences.py",
        original="        if path.exists():\n",
        replacement="        if False:  # mutation: fences start empty\n",
        tests=(
            f"{INTEGRATION}/test_fenced_output.py::"
            "test_a_new_run_refuses_older_runs_on_every_partition_even_after_a_kill9",
            f"{UNIT}/test_producer_fences.py::test_fences_survive_a_crash_and_a_torn_last_line",
        ),
    ),
    Mutation(
        name="shutdown-waits-for-a-gone-coordinator",
        breaks="SIGTERM stops a worker whose coordinator is gone within its graceful timeout",
        file="workers/storage/topic_log.py",
        original="            self._producer.close(timeout=CLOSE_TIMEOUT_S)",
        replacement="            self._producer.close()  # mutation: waits for the broker forever",
        tests=(
            f"{INTEGRATION}/test_worker_shutdown.py::"
            "test_sigterm_stops_a_worker_within_the_graceful_timeout_and_leaves_nothing_running[killed]",
        ),
    ),
    Mutation(
        name="task-started-without-its-config",
        breaks="a connector resumed after a stop runs every task again",
        file="workers/runtime/task_runner.py",
        original="        if task != CONNECTOR and int(task) >= len(self.state.tasks.get(name, [])):\n",
        replacement="        if False:  # mutation: started with whatever config there is\n",
        tests=(f"{INTEGRATION}/test_workers.py::test_a_stopped_connector_resumes_with_every_task_running",),
    ),
    Mutation(
        name="rest-served-before-the-worker-started",
        breaks="a create sent as soon as the REST port answers is answered 201, once",
        file="workers/rest/server.py",
        original="        if not herder.started() and request.path not in ANSWERED_WHILE_STARTING:\n",
        replacement="        if False:  # mutation: handlers run before the worker has read its topics\n",
        tests=(
            f"{INTEGRATION}/test_workers.py::test_a_create_sent_as_soon_as_the_rest_port_answers_is_created_once",
        ),
    ),
    Mutation(
        name="restart-planned-without-a-status",
        breaks="a restart with includeTasks or onlyFailed before any status is 404, as in Kafka Connect",
        file="workers/rest/connectors.py",
        original="        if plan and not self.herder.has_status(name):\n",
        replacement="        if False:  # mutation: 202 with an empty worker id\n",
        tests=(f"{UNIT}/test_rest_api.py::test_status_and_restart",),
    ),
    Mutation(
        name="stopped-connector-offsets-empty",
        breaks="a stopped TopicIngest reports the offsets its checkpoints committed (KIP-875)",
        file="workers/distributed/herder_api.py",
        original=(
            "        plugin = self._keeping_offsets(name)\n        if plugin is None:\n"
            "            return self.herder.offsets.of_connector(name)\n"
        ),
        replacement=(
            "        plugin = self._keeping_offsets(name)\n"
            "        if plugin is None or not self.task_configs(name):  # mutation: running tasks only\n"
            "            return self.herder.offsets.of_connector(name)\n"
        ),
        tests=(
            "tests/e2e/test_spark_connector_offsets.py::"
            "test_a_stopped_topic_ingest_rereads_from_altered_offsets_and_from_the_start_after_a_reset",
        ),
    ),
    Mutation(
        name="spark-offsets-reset-keeps-checkpoints",
        breaks="a stopped FileIngest whose offsets are reset reads every file again (KIP-875)",
        file="workers/spark/checkpoint_generations.py",
        original="        shutil.rmtree(root / str(task))\n",
        replacement="        pass  # mutation: the old checkpoints stay\n",
        tests=(
            "tests/e2e/test_spark_connector_offsets.py::"
            "test_a_stopped_file_ingest_shows_its_files_and_a_reset_reads_them_all_again",
        ),
    ),
    Mutation(
        name="spark-offsets-generation-output-reused",
        breaks="a Spark connector's checkpoints after a reset write where the old sink log skips them",
        file="workers/spark/parquet_output.py",
        original='    name = f"task-{index}" if generation == 0 else f"task-{index}-g{generation}"\n',
        replacement='    name = f"task-{index}"  # mutation: one output directory for every generation\n',
        tests=(
            "tests/unit/test_checkpoint_generations.py::"
            "test_a_new_generation_deletes_the_checkpoints_and_writes_to_new_output_directories",
        ),
    ),
    Mutation(
        name="topic-ingest-alter-ignored",
        breaks="a stopped TopicIngest whose partition is altered reads on from the altered offset (KIP-875)",
        file="workers/spark/topic_source.py",
        original='        return flatten(generation.get("offsets"))\n',
        replacement="        return {}  # mutation: the generation's starting offsets are not read\n",
        tests=(
            "tests/e2e/test_spark_connector_offsets.py::"
            "test_a_stopped_topic_ingest_rereads_from_altered_offsets_and_from_the_start_after_a_reset",
        ),
    ),
    Mutation(
        name="cors-any-origin-allowed",
        breaks="a worker answers cross-origin requests only from the origins it is told to allow",
        file="workers/config/http_headers.py",
        original='    if "*" in allowed:\n',
        replacement="    if True:  # mutation: every origin is allowed\n",
        tests=("tests/integration/test_worker_http_settings.py::test_cors_answers_and_configured_headers",),
    ),
    Mutation(
        name="rest-topics-reset-not-served",
        breaks="every operation of Kafka Connect's REST API is served",
        file="workers/rest/server.py",
        original='            web.put("/connectors/{connector}/topics/reset", connectors.reset_topics),\n',
        replacement="",
        tests=(
            "tests/integration/test_every_kafka_connect_endpoint.py::"
            "test_every_kafka_connect_operation_with_curl_and_a_kafka_connect_client",
        ),
    ),
    Mutation(
        name="offsets-changed-while-tasks-run",
        breaks="a stopped connector's offsets are not changed while one of its tasks still runs",
        file="workers/distributed/herder_api.py",
        original="        if not self.stopped(name) or running:\n",
        replacement="        if not self.stopped(name):  # mutation: running tasks are not looked for\n",
        tests=(
            "tests/integration/test_connector_offsets.py::"
            "test_offsets_are_not_changed_while_a_task_of_the_stopped_connector_still_runs",
        ),
    ),
    Mutation(
        name="stopping-tasks-hidden-from-status",
        breaks="a connector's status shows its tasks that still run after their configs went",
        file="workers/distributed/herder_api.py",
        original=(
            "        stopping = [task for task in statuses.tasks_still_running(name) if task >= configured]\n"
        ),
        replacement="        stopping: list[int] = []  # mutation: tasks still stopping are not shown\n",
        tests=(
            "tests/integration/test_connector_offsets.py::"
            "test_offsets_are_not_changed_while_a_task_of_the_stopped_connector_still_runs",
        ),
    ),
    Mutation(
        name="provider-secret-in-a-list-shown",
        breaks="a problem with a connector config never shows a value a config provider read",
        file="workers/config/providers.py",
        original="                if len(part) >= MIN_HIDDEN_PART:\n",
        replacement="                if False:  # mutation: only the whole value is hidden\n",
        tests=(
            "tests/unit/test_config_providers.py::"
            "test_a_problem_found_in_a_resolved_config_never_shows_what_a_provider_read",
        ),
    ),
    Mutation(
        name="session-wait-unreported",
        breaks="a task waiting for its worker's Spark session to start says so in its status",
        file="workers/runtime/task_runner.py",
        original="            if not self.spark.ready:  # said where users look: the tasks' status\n",
        replacement="            if False:  # mutation: the wait is not reported\n",
        tests=(
            "tests/e2e/test_spark_runtime.py::"
            "test_a_task_waiting_for_the_spark_session_says_so_in_its_status_and_the_worker_root",
        ),
    ),
    Mutation(
        name="joiner-joins-before-its-session",
        breaks="a worker joining a cluster that runs Spark tasks takes them only once its session is ready",
        file="workers/distributed/herder.py",
        original="self._join(warm if self._holds_spark_tasks() else None)",
        replacement="self._join(None)",
        tests=(
            "tests/e2e/test_spark_runtime.py::"
            "test_a_joining_worker_takes_spark_tasks_only_once_its_session_is_ready",
        ),
    ),
    Mutation(
        name="graceful-stop-drops-the-batch",
        breaks="a revoked Spark task lets its batch under way commit before it stops",
        file="workers/spark/runtime.py",
        original="        if finish_batch:\n            self._finish_batch(query)\n",
        replacement="        pass  # mutation: the batch under way is thrown away\n",
        tests=(
            "tests/e2e/test_spark_runtime.py::"
            "test_a_graceful_stop_lets_the_batch_under_way_commit_and_an_urgent_one_does_not",
        ),
    ),
    Mutation(
        name="urgent-stop-waits-for-the-batch",
        breaks="a worker that lost its session stops its Spark tasks at once, not after their batch",
        file="workers/spark/runtime.py",
        original="        if finish_batch:\n            self._finish_batch(query)\n",
        replacement="        self._finish_batch(query)  # mutation: every stop waits for the batch\n",
        tests=(
            "tests/e2e/test_spark_runtime.py::"
            "test_a_graceful_stop_lets_the_batch_under_way_commit_and_an_urgent_one_does_not",
        ),
    ),
    Mutation(
        name="revocation-acknowledged-while-the-last-batch-commits",
        breaks="a moved Spark task's old and new owner never run (or commit batches of) its query at once",
        file="workers/spark/task.py",
        original="await asyncio.to_thread(runtime.stop_query, query, summary, "
        "finish_batch and self._released)",
        replacement="asyncio.ensure_future(asyncio.to_thread(runtime.stop_query, query, summary, "
        "finish_batch and self._released))  # mutation: the stop is not waited for",
        tests=(
            "tests/e2e/test_topic_ingest.py::"
            "test_a_task_moved_in_the_middle_of_a_long_batch_is_handed_over_at_that_batchs_commit",
        ),
    ),
    Mutation(
        name="file-sink-race-fails-the-task",
        breaks="a task whose frozen predecessor committed the same batch to its file sink first "
        "starts again from the checkpoint instead of going FAILED",
        file="workers/spark/task.py",
        original='    "Race while writing batch",\n',
        replacement="",
        tests=(
            f"{UNIT}/test_spark_checkpoint_conflicts.py::"
            "test_a_batch_another_run_wrote_first_restarts_the_query_rather_than_failing_the_task[file-sink-log]",
        ),
    ),
    Mutation(
        name="prepared-run-granted-before-its-assignment",
        breaks="a task prepared ahead of a move reads nothing until its old owner has let it go "
        "(the old and the new owner never commit its batches at the same time)",
        file="workers/spark/task.py",
        original="                await self._launch(config, context, gate)\n",
        replacement="                gate.grant()  # mutation: the prepared run goes on at once\n"
        "                await self._launch(config, context, gate)\n",
        tests=(
            "tests/e2e/test_topic_ingest.py::"
            "test_a_task_moved_in_the_middle_of_a_long_batch_is_handed_over_at_that_batchs_commit",
        ),
    ),
    # -- the workers' web view and rebalance figures ------------------------------------------
    Mutation(
        name="web-view-not-live",
        breaks="the web view shows a moved task on its new worker within 5 s of the rebalance",
        file="workers/rest/ui/page.js",
        original=".finally(function () { setTimeout(poll, 1000); });",
        replacement=".finally(function () {});",
        tests=(WEB_VIEW_BROWSER,),
    ),
    Mutation(
        name="timeline-join-not-named",
        breaks="the timeline's entry for a new epoch names the worker that joined",
        file="workers/observe/timeline.py",
        original="joined = [] if first else sorted(members - self.members)",
        replacement="joined = []",
        tests=(
            f"{TIMELINE_UNIT}test_a_join_that_moves_one_task_is_an_epoch_entry_and_a_move_with_its_gap",
            WEB_VIEW_STATE,
            WEB_VIEW_BROWSER,
        ),
    ),
    Mutation(
        name="unassigned-seconds-not-counted",
        breaks="/metrics counts per connector the seconds during which it had tasks unassigned",
        file="workers/observe/timeline.py",
        original="            self.unassigned.setdefault(name, UnassignedTime()).open.setdefault(task, at)",
        replacement="            pass  # mutation: no unassigned span",
        tests=(
            f"{TIMELINE_UNIT}test_a_connectors_unassigned_seconds_are_the_union_of_its_tasks_spans_and_count_up_while_open",
            WEB_VIEW_STATE,
            WEB_VIEW_BROWSER,
        ),
    ),
    Mutation(
        name="handoff-gap-not-counted",
        breaks="/metrics has per connector the handoff gap of its moved tasks",
        file="workers/observe/timeline.py",
        original="                self.gaps.setdefault(item[0], HandoffGaps()).add(gap)",
        replacement="                pass  # mutation: gaps not counted",
        tests=(
            f"{TIMELINE_UNIT}test_a_join_that_moves_one_task_is_an_epoch_entry_and_a_move_with_its_gap",
            WEB_VIEW_STATE,
        ),
    ),
    Mutation(
        name="crashed-workers-tasks-not-unassigned",
        breaks="a worker leaving the group leaves its tasks unassigned until they run elsewhere",
        file="workers/observe/timeline.py",
        original="""            for worker in left:
                self._gone(worker, at)""",
        replacement="""            for worker in left:
                pass  # mutation: a departure ends nothing""",
        tests=(
            f"{TIMELINE_UNIT}"
            "test_a_crashed_worker_leaving_the_group_leaves_its_tasks_unassigned_until_they_run_again",
        ),
    ),
    Mutation(
        name="web-view-names-not-escaped",
        breaks="names users chose (connectors) are HTML-escaped in the web view",
        file="workers/rest/web_view.py",
        original="    return html.escape(str(value), quote=True)",
        replacement="    return str(value)",
        tests=(WEB_VIEW_STATE,),
    ),
    # -- source topic creation and client overrides ------------------------------------------
    Mutation(
        name="topic-creation-groups-ignored",
        breaks="a source connector's topic is created with the settings of the group that matches it",
        file="workers/config/topic_creation.py",
        original="return next((group for group in self.groups if group.matches(topic)), self.default)",
        replacement="return self.default  # mutation",
        tests=(
            f"{UNIT}/test_topic_creation_groups.py::"
            "test_a_topic_takes_the_first_listed_group_that_matches_it_else_the_default_group",
            f"{INTEGRATION}/test_source_topic_creation.py::"
            "test_a_source_task_creates_its_topics_with_the_settings_of_the_group_matching_them",
        ),
    ),
    Mutation(
        name="topic-creation-last-group-wins",
        breaks="of the groups that match a topic, the first listed decides how it is created",
        file="workers/config/topic_creation.py",
        original="return next((group for group in self.groups if group.matches(topic)), self.default)",
        replacement="return next((g for g in reversed(self.groups) if g.matches(topic)), self.default)",
        tests=(
            f"{UNIT}/test_topic_creation_groups.py::"
            "test_a_topic_takes_the_first_listed_group_that_matches_it_else_the_default_group",
        ),
    ),
    Mutation(
        name="topic-creation-exclusion-ignored",
        breaks="a group's exclude patterns keep a topic out of it whatever its include patterns say",
        file="workers/config/topic_creation.py",
        original="        return not self.exclude.fullmatch(topic) and bool(self.include.fullmatch(topic))\n",
        replacement="        return bool(self.include.fullmatch(topic))  # mutation\n",
        tests=(
            f"{UNIT}/test_topic_creation_groups.py::"
            "test_a_topic_takes_the_first_listed_group_that_matches_it_else_the_default_group",
        ),
    ),
    Mutation(
        name="topic-creation-default-settings-not-required",
        breaks="a connector asking for topic creation without the default group's partitions and "
        "replication factor is refused at create, naming them",
        file="workers/config/topic_creation.py",
        original="        if name not in config:\n            problems.append(\n",
        replacement="        if False:  # mutation\n            problems.append(\n",
        tests=(
            f"{UNIT}/test_topic_creation_groups.py::"
            "test_the_default_group_needs_partitions_and_replication_factor_as_kafka_requires",
            f"{UNIT}/test_rest_api.py::"
            "test_topic_creation_settings_are_checked_at_create_and_validate_naming_each",
        ),
    ),
    Mutation(
        name="topics-left-to-auto-creation",
        breaks="a source task creates the topic it writes to before its first record, as its connector asks",
        file="workers/runtime/task_writes.py",
        original="            await self.topics.ensure(topic)\n",
        replacement="            pass  # mutation: the coordinator creates it with its defaults\n",
        tests=(
            f"{INTEGRATION}/test_source_topic_creation.py::"
            "test_a_source_task_creates_its_topics_with_the_settings_of_the_group_matching_them",
        ),
    ),
    Mutation(
        name="topic-creation-failure-not-the-tasks",
        breaks="a topic that cannot be created (replication factor above 1) fails the task, saying why",
        file="workers/runtime/task_topics.py",
        original="elif code == ErrorCode.TOPIC_ALREADY_EXISTS:",
        replacement="elif code in (ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_REPLICATION_FACTOR):",
        tests=(
            f"{INTEGRATION}/test_source_topic_creation.py::"
            "test_a_source_task_creates_its_topics_with_the_settings_of_the_group_matching_them",
        ),
    ),
    Mutation(
        name="override-policy-allows-everything",
        breaks="connector.client.config.override.policy None or Principal refuses the overrides "
        "Kafka's refuses",
        file="workers/config/client_overrides.py",
        original='    return policy == "All" or (policy == "Principal" and name in PRINCIPAL_SETTINGS)\n',
        replacement="    return True  # mutation\n",
        tests=(
            f"{UNIT}/test_client_override_policy.py::"
            "test_each_policy_refuses_what_kafkas_refuses_with_its_message",
            f"{INTEGRATION}/test_source_topic_creation.py::"
            "test_each_override_policy_refuses_or_takes_overrides_as_kafka_connect_does",
        ),
    ),
    Mutation(
        name="unapplied-producer-override-accepted",
        breaks="a producer override the task output would not apply is refused, saying why, not "
        "stored and ignored",
        file="workers/config/client_overrides.py",
        original="        return None if name in PRODUCER_TUNING else _NOT_APPLIED[client]\n",
        replacement="        return None  # mutation\n",
        tests=(
            f"{UNIT}/test_client_override_policy.py::"
            "test_an_override_this_runtime_would_not_apply_is_refused_saying_why",
            f"{INTEGRATION}/test_source_topic_creation.py::"
            "test_each_override_policy_refuses_or_takes_overrides_as_kafka_connect_does",
        ),
    ),
    Mutation(
        name="consumer-overrides-kept-from-spark",
        breaks="TopicIngest's consumer overrides reach its Spark source as kafka.<setting> options",
        file="workers/connectors/topic_ingest.py",
        original='        **{f"{KAFKA_OPTION}{name}": value for name, value in (consumer or {}).items()},\n',
        replacement="",
        tests=(
            f"{UNIT}/test_client_override_policy.py::"
            "test_topic_ingests_consumer_overrides_reach_its_spark_options_and_kafka_python_consumer",
        ),
    ),
    # -- coordinator restarts ----------------------------------------------------------------
    Mutation(
        name="groups-served-half-loaded",
        breaks="while group state loads after a start, group requests answer COORDINATOR_LOAD_IN_PROGRESS",
        file="coordinator/apis/groups.py",
        original="            if not groups.loaded:  # what is authorized waits for the load",
        replacement="            if False:  # what is authorized waits for the load",
        tests=(
            f"{UNIT}/test_frame_fuzz.py::"
            "test_group_requests_answer_load_in_progress_in_their_own_shape_while_group_state_loads",
        ),
    ),
    Mutation(
        name="load-holds-the-event-loop",
        breaks="a restarted coordinator serves data requests while its group state loads",
        file="coordinator/group_service.py",
        original="await asyncio.sleep(0)  # requests waiting on the loop are answered here",
        replacement="pass  # mutation: the load never lets a request in",
        tests=(
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_data_is_served_at_once_and_groups_answer_load_in_progress_until_their_state_is_loaded",
        ),
    ),
    Mutation(
        name="offsets-log-compacted-only-by-the-clock",
        breaks="what a restart replays stays near the live state, however long the offsets history",
        file="coordinator/group_service.py",
        original="                self._compaction_due()",
        replacement="                pass  # mutation: the cleaner waits out its backoff",
        tests=(
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_the_offsets_log_stays_near_its_live_state_however_long_the_history",
        ),
    ),
    Mutation(
        name="cleaner-checkpoint-forgotten",
        breaks="a restart does not take the compacted log for new data (the cleaner's checkpoint)",
        file="coordinator/storage/partition_log.py",
        original="            log.cleaned_through = min(cleaned, log.segments[-1].base_offset)",
        replacement="            log.cleaned_through = 0",
        tests=(
            f"{UNIT}/test_compaction.py::"
            "test_a_log_is_compacted_once_its_new_part_is_half_of_it_and_a_reopen_remembers_where_it_was",
        ),
    ),
    Mutation(
        name="committed-offsets-read-by-hand-wrong",
        breaks="committed offsets replay exactly as they were written",
        file="coordinator/group_record_codec.py",
        original="        committed, expires = _TIMESTAMPS.unpack_from(value, position)",
        replacement="        expires, committed = _TIMESTAMPS.unpack_from(value, position)",
        tests=(
            f"{UNIT}/test_member_record_bytes.py::"
            "test_committed_offsets_read_by_hand_are_what_the_schema_codec_reads",
        ),
    ),
    Mutation(
        name="loading-answer-not-counted-by-the-watchdog",
        breaks="workers keep their work through a coordinator restart shorter than their session",
        file="workers/distributed/membership/session_watch.py",
        original="ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}",
        replacement="ErrorCode.REBALANCE_IN_PROGRESS}",
        tests=(
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_workers_keep_their_work_through_a_restart_whose_load_outlasts_their_watchdog",
        ),
    ),
    Mutation(
        name="coordinator-outage-stops-the-work",
        breaks="a coordinator restart that running work never notices",
        file="workers/distributed/membership/connect.py",
        original="""            log.warning("heartbeat to %s failed: %s", self.bootstrap, exc)
            self.machine.unreachable()""",
        replacement="""            log.warning("heartbeat to %s failed: %s", self.bootstrap, exc)
            await self.work.carry_out(self.machine.fenced(time.monotonic()))""",
        tests=(
            "tests/e2e/test_coordinator_restart.py::"
            "test_a_coordinator_killed_and_restarted_under_a_long_history_stops_no_task_and_revokes_no_partition",
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_workers_keep_their_work_through_a_restart_whose_load_outlasts_their_watchdog",
        ),
    ),
    Mutation(
        name="full-heartbeat-lost-with-an-older-answer",
        breaks="a worker stopped by its watchdog while the coordinator froze gets its work back on resume",
        file="workers/distributed/membership/connect.py",
        original='        field, given = answer["assignment"], None',
        replacement="        self._full = False  # mutation: any answer clears it\n"
        '        field, given = answer["assignment"], None',
        tests=(
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_workers_stopped_by_their_watchdog_while_the_coordinator_froze_get_their_work_back_on_resume",
        ),
    ),
    Mutation(
        name="offsets-topic-keeps-its-first-segment-size",
        breaks="an existing data directory's __consumer_offsets takes the segment size set now",
        file="coordinator/group_service.py",
        original="        elif any(topic.configs.get(name) != value for name, value in kept.items()):",
        replacement="        elif False:  # mutation",
        tests=(
            f"{UNIT}/test_offsets_topic_settings.py::"
            "test_the_offsets_topic_takes_the_segment_size_set_at_each_start",
        ),
    ),
    Mutation(
        name="write-retries-hammer-an-outage",
        breaks="a task's write retries back off as Kafka's producer does while the coordinator is away",
        file="workers/storage/fenced_output.py",
        original="await asyncio.sleep(min(RETRY_BACKOFF_S * 2 ** min(retries, 10), RETRY_BACKOFF_MAX_S))",
        replacement="await asyncio.sleep(RETRY_BACKOFF_S)",
        tests=(
            f"{UNIT}/test_fenced_output_retries.py::"
            "test_a_write_the_coordinator_does_not_take_is_retried_with_a_doubling_wait_up_to_a_second",
        ),
    ),
    # -- resource limits ---------------------------------------------------------------------
    Mutation(
        name="max-connections-not-enforced",
        breaks="max.connections refuses the next connection while the open ones are served",
        file="coordinator/network/connection_limits.py",
        original="        elif self.count >= self.total:",
        replacement="        elif False:",
        tests=(
            f"{INTEGRATION}/test_connection_limits.py::"
            "test_a_connection_past_max_connections_is_closed_while_the_open_ones_are_served",
            f"{UNIT}/test_connection_limits.py::"
            "test_connections_are_limited_per_address_with_overrides_and_in_all",
        ),
    ),
    Mutation(
        name="refused-connections-never-released",
        breaks="once connections end, new ones are taken again",
        file="coordinator/network/connection.py",
        original="            self._limits.release(self._counted_host)",
        replacement="            pass  # mutation: the slot stays taken",
        tests=(
            f"{INTEGRATION}/test_connection_limits.py::"
            "test_a_connection_past_max_connections_is_closed_while_the_open_ones_are_served",
        ),
    ),
    Mutation(
        name="active-segment-outlives-retention",
        breaks="a topic left alone past retention.ms is emptied, its active segment's records too",
        file="coordinator/storage/partition_log.py",
        original="                if not (expired and oldest.size):",
        replacement="                if True:",
        tests=(
            f"{INTEGRATION}/test_retention.py::"
            "test_a_topic_left_alone_past_retention_ms_is_emptied_and_keeps_its_offsets",
            f"{UNIT}/test_partition_log.py::"
            "test_time_retention_takes_the_active_segment_too_once_every_record_in_it_is_past_retention",
        ),
    ),
    Mutation(
        name="log-append-time-not-stamped",
        breaks="a LogAppendTime topic's records carry the time the coordinator appended them",
        file="coordinator/storage/partition_log.py",
        original="""                if self.settings.log_append_time:
                    batches.set_log_append_time(batch, now_ms)""",
        replacement="""                if False:  # mutation
                    batches.set_log_append_time(batch, now_ms)""",
        tests=(
            f"{INTEGRATION}/test_log_append_time.py::"
            "test_a_log_append_time_topic_stamps_records_with_the_append_time",
        ),
    ),
    Mutation(
        name="log-append-time-leaves-the-crc-stale",
        breaks="a batch stamped with the append time still passes its CRC check",
        file="coordinator/storage/batches.py",
        original="_CRC_AT, crc32c.crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))",
        replacement="_CRC_AT, crc32c.crc32c(memoryview(batch)[_ATTRIBUTES_AT:_ATTRIBUTES_AT]))  # mutation",
        tests=(
            f"{UNIT}/test_partition_log.py::"
            "test_a_log_append_time_partition_stamps_its_batches_and_keeps_their_crc_valid",
        ),
    ),
    Mutation(
        name="log-append-time-type-not-set",
        breaks="a consumer reads a LogAppendTime record's timestamp type as LogAppendTime, also once the "
        "topic was altered to it",
        file="coordinator/storage/batches.py",
        original='struct.pack_into(">h", batch, _ATTRIBUTES_AT, attributes | LOG_APPEND_TIME)',
        replacement='struct.pack_into(">h", batch, _ATTRIBUTES_AT, attributes)  # mutation',
        tests=(
            f"{INTEGRATION}/test_log_append_time.py::"
            "test_a_topic_altered_to_log_append_time_stamps_what_is_appended_from_then_on",
        ),
    ),
    Mutation(
        name="compaction-forgets-log-append-time",
        breaks="a LogAppendTime record is read with its type and append time after its topic is compacted",
        file="coordinator/storage/compaction.py",
        original="""        if stamp is not None:
            batches.set_log_append_time(batch, stamp)""",
        replacement="""        pass  # mutation""",
        tests=(
            f"{UNIT}/test_compaction.py::"
            "test_records_keep_their_timestamp_type_and_append_time_through_compaction",
        ),
    ),
    Mutation(
        name="compacted-topic-takes-keyless-records",
        breaks="a compacted topic refuses a record without a key (INVALID_RECORD), and the producer sees it",
        file="coordinator/apis/produce.py",
        original="    if partition.settings.compacted:\n",
        replacement="    if False:  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_compacted_topic_keys.py::test_a_compacted_topic_refuses_a_record_without_a_key",
        ),
    ),
    # -- a full disk ------------------------------------------------------------------------
    Mutation(
        name="refused-append-not-taken-back",
        breaks="a produce the disk refuses part-way leaves nothing of itself in the log",
        file="coordinator/storage/partition_log.py",
        original="            self._take_back(undo)\n            self.writes.failed(str(exc))",
        replacement="            self.writes.failed(str(exc))  # mutation: not taken back",
        tests=(
            f"{UNIT}/test_storage_errors.py::test_a_request_the_disk_refuses_part_way_is_taken_back_whole",
        ),
    ),
    Mutation(
        name="refused-roll-leaves-its-segment",
        breaks="a segment rolled by a refused produce is not left behind",
        file="coordinator/storage/partition_log.py",
        original="        while len(self.segments) > undo.segments:",
        replacement="        while False:  # mutation",
        tests=(
            f"{UNIT}/test_storage_errors.py::"
            "test_a_roll_made_by_a_refused_request_is_undone_and_the_segments_stay_sound",
        ),
    ),
    Mutation(
        name="refused-batch-keeps-its-sequence",
        breaks="a producer's retry of a batch the disk refused is appended, not refused",
        file="coordinator/storage/partition_log.py",
        original="        for pid, entry in undo.producers.items():",
        replacement="        for pid, entry in {}.items():  # mutation",
        tests=(f"{UNIT}/test_storage_errors.py::test_a_refused_request_leaves_no_producer_sequence_behind",),
    ),
    Mutation(
        name="storage-error-closes-the-connection",
        breaks="a full disk answers KAFKA_STORAGE_ERROR per partition and keeps the connection",
        file="coordinator/storage/partition_log.py",
        original="        except OSError as exc:\n            self._take_back(undo)",
        replacement="        except KeyError as exc:  # mutation\n            self._take_back(undo)",
        tests=(
            f"{INTEGRATION}/test_full_disk.py::"
            "test_a_full_disk_answers_storage_errors_keeps_what_it_acknowledged_and_recovers",
        ),
    ),
    Mutation(
        name="group-state-without-a-disk-reserve",
        breaks="consumer groups form and commit while the users' topics have filled the disk",
        file="coordinator/group_service.py",
        original='str(self._segment_bytes), "preallocate": "true"}',
        replacement='str(self._segment_bytes), "preallocate": "false"}',
        tests=(
            f"{INTEGRATION}/test_full_disk.py::"
            "test_a_full_disk_answers_storage_errors_keeps_what_it_acknowledged_and_recovers",
        ),
    ),
    Mutation(
        name="disk-outage-logged-per-failure",
        breaks="a full disk is logged once per partition and state change, not once per request",
        file="coordinator/storage/outage_log.py",
        original="            if self.failing:\n                return\n",
        replacement="            if False:  # mutation\n                return\n",
        tests=(
            f"{INTEGRATION}/test_full_disk.py::"
            "test_a_full_disk_answers_storage_errors_keeps_what_it_acknowledged_and_recovers",
        ),
    ),
    # -- partitions at scale ----------------------------------------------------------------
    Mutation(
        name="every-partition-holds-its-files",
        breaks="a coordinator with ulimit -n 4096 serves 10,000 partitions",
        file="coordinator/storage/open_files.py",
        original="        while len(self._open) > self.capacity:",
        replacement="        while False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_partitions_at_scale.py::"
            "test_a_topic_of_10000_partitions_is_created_while_a_group_heartbeats_and_probes_stay_fast",
        ),
    ),
    Mutation(
        name="topic-files-made-on-the-event-loop",
        breaks="other clients are answered at once while a topic of 10,000 partitions is made",
        file="coordinator/storage/topic_store.py",
        original="            topic = await asyncio.to_thread(self._make, name, partitions, configs)",
        replacement="            topic = self._make(name, partitions, configs)  # mutation",
        tests=(
            f"{INTEGRATION}/test_partitions_at_scale.py::"
            "test_a_topic_of_10000_partitions_is_created_while_a_group_heartbeats_and_probes_stay_fast",
        ),
    ),
    Mutation(
        name="tasks-max-uncapped",
        breaks="a connector asking for more tasks than any cluster could run is refused, naming tasks.max",
        file="workers/plugins/api.py",
        original="        if 1 <= int(value) <= MAX_TASKS:",
        replacement="        if 1 <= int(value):  # mutation",
        tests=(
            f"{INTEGRATION}/test_worker_request_safety.py::"
            "test_tasks_max_past_the_cap_is_refused_naming_the_setting_and_nothing_is_created",
        ),
    ),
    Mutation(
        name="plugin-path-not-importable",
        breaks="connectors installed on plugin.path are listed and run",
        file="workers/plugins/registry.py",
        original="                sys.path.append(str(location.path))\n",
        replacement="                pass  # mutation: the location is not on the import path\n",
        tests=(
            f"{INTEGRATION}/test_plugin_path.py::"
            "test_plugins_on_the_plugin_path_are_listed_and_run_and_one_that_fails_to_import_is_named",
        ),
    ),
    Mutation(
        name="plugin-path-first-in-spark",
        breaks="Spark's Python processes import a plugin's copy of a package only where the worker does",
        file="workers/spark/runtime.py",
        original="        paths += [p for p in sys.path if p and p not in plugin_paths] + list(plugin_paths)",
        replacement="        paths += list(plugin_paths)  # mutation: before the interpreter's own packages",
        tests=(
            f"{UNIT}/test_plugin_path.py::"
            "test_spark_python_processes_import_plugins_after_the_interpreters_own_packages",
        ),
    ),
    Mutation(
        name="plugin-path-not-given-to-spark",
        breaks="a Spark connector installed on plugin.path runs its own code in Spark's Python processes",
        file="workers/spark/runtime.py",
        original="os.environ.update(python_environment(dict(os.environ), self.plugin_paths))",
        replacement="os.environ.update(python_environment(dict(os.environ)))  # mutation",
        tests=(
            "tests/e2e/test_plugin_path_spark.py::"
            "test_a_spark_connector_on_the_plugin_path_runs_its_own_udf_in_sparks_python_processes",
        ),
    ),
    Mutation(
        name="plugin-path-last-of-a-name-wins",
        breaks="of two plugins of one name, the one whose modules are imported is used, and the other named",
        file="workers/plugins/scan.py",
        original="    if entry.name in result.found:\n",
        replacement="    if False:  # mutation: a later plugin of a name replaces the earlier\n",
        tests=(
            f"{UNIT}/test_plugin_path.py::"
            "test_the_scan_finds_plugins_on_the_path_after_the_workers_own_and_skips_each_it_cannot_use",
        ),
    ),
    Mutation(
        name="max-broker-partitions-not-enforced",
        breaks="partitions past max.broker.partitions are refused with POLICY_VIOLATION",
        file="coordinator/storage/topic_store.py",
        original="        if held + more > self.max_partitions:",
        replacement="        if False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_topic_admin.py::"
            "test_max_broker_partitions_refuses_creations_and_growth_past_it_with_policy_violation",
        ),
    ),
    Mutation(
        name="fetch-buffer-sized-by-the-request",
        breaks="a fetch allocates what the log holds, not the 2 GiB a client may ask for",
        file="coordinator/storage/segment.py",
        original="        wanted = min(max(max_bytes, LOG_OVERHEAD), self.size - position)",
        replacement="        wanted = max(max_bytes, LOG_OVERHEAD)  # mutation",
        tests=(f"{UNIT}/test_partition_log.py::test_a_read_allocates_what_the_log_holds_not_what_was_asked",),
    ),
    Mutation(
        name="fetch-every-partition-over-the-limit",
        breaks="a Fetch answer carries at most MaxBytes of whole batches; only the first partition with data "
        "may go over, by its first batch",
        file="coordinator/apis/fetch.py",
        original="data = log.read(fetch.fetch_offset, max(limit, 0), min_one=total == 0)",
        replacement="data = log.read(fetch.fetch_offset, max(limit, 0), min_one=True)  # mutation",
        tests=(
            f"{INTEGRATION}/test_fetch_limits.py::"
            "test_a_consumer_with_fetch_max_bytes_gets_no_larger_answer_and_reads_every_partition",
            f"{INTEGRATION}/test_fetch_limits.py::"
            "test_only_the_first_partition_with_data_goes_over_the_limits_by_its_first_batch",
        ),
    ),
    Mutation(
        name="rest-config-shape-unchecked",
        breaks="a REST request with a config that is not a JSON object gets a 400, never a 500",
        file="workers/rest/connectors.py",
        original='        if not isinstance(config, dict):\n            raise RestError(400, "Connector',
        replacement='        if False:  # mutation\n            raise RestError(400, "Connector',
        tests=(
            f"{INTEGRATION}/test_rest_fuzz.py::"
            "test_generated_requests_to_every_route_get_kafka_connect_answers_and_never_a_5xx",
        ),
    ),
    Mutation(
        name="topic-compression-type-ignored",
        breaks="a topic's compression.type is the codec its batches are stored with",
        file="coordinator/storage/partition_log.py",
        original="                if codec is not None and header.compression != codec:",
        replacement="                if False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_topic_compression.py::test_a_topics_compression_type_is_applied_to_what_producers_send",
        ),
    ),
    Mutation(
        name="batch-records-not-walked",
        breaks="an uncompressed batch whose records do not match its header is refused, as Kafka refuses it",
        file="coordinator/storage/batches.py",
        original="        if header.compression == 0:\n            problem = records_problem(batch, header)",
        replacement="        if False:  # mutation\n            problem = records_problem(batch, header)",
        tests=(
            f"{UNIT}/test_batch_records_walk.py::"
            "test_records_whose_offset_deltas_skip_or_repeat_are_refused_under_a_valid_crc",
            f"{UNIT}/test_batch_records_walk.py::test_records_that_do_not_fill_the_batch_are_refused",
        ),
    ),
    # -- the decoder's limits -------------------------------------------------------------
    Mutation(
        name="array-counts-unchecked",
        breaks="an array count over the decoder's limits is refused before anything is built",
        file="connect_rebalance/protocol/decoder_limits.py",
        original='f"{indent}if {n} > _MAX_ARRAY or {n} > len(data) - pos: _array_too_long',
        replacement='f"{indent}if False: _array_too_long',
        tests=(
            f"{INTEGRATION}/test_decoder_limits.py::"
            "test_counts_over_the_decoders_limits_are_refused_before_anything_is_built"
            "[an array over 1,000,000 elements]",
            f"{INTEGRATION}/test_decoder_limits.py::"
            "test_counts_over_the_decoders_limits_are_refused_before_anything_is_built"
            "[an array claiming more elements than bytes]",
        ),
    ),
    Mutation(
        name="nulls-taken-where-the-schema-forbids",
        breaks="a null in a field that is never null is refused, naming it, as Kafka refuses it",
        file="connect_rebalance/protocol/decoder_limits.py",
        original="    if version is None or field.nullable_for_version_q(version):",
        replacement="    if True:  # mutation",
        tests=(
            f"{UNIT}/test_decoder_limits.py::test_a_null_where_the_schema_allows_none_is_refused_naming_the_field",
        ),
    ),
    Mutation(
        name="tagged-field-count-unchecked",
        breaks="more than 10,000 tagged fields in one struct are refused before they are read",
        file="connect_rebalance/protocol/decoder_limits.py",
        original="        if count > MAX_TAGGED_FIELDS:",
        replacement="        if False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_decoder_limits.py::"
            "test_counts_over_the_decoders_limits_are_refused_before_anything_is_built"
            "[10,001 tagged fields in one struct]",
        ),
    ),
    Mutation(
        name="config-burst-not-coalesced",
        breaks="a burst of config changes costs the rebalances of one change",
        file="workers/distributed/leader_duties.py",
        original="CONFIG_QUIET_S = 1.0 ",
        replacement="CONFIG_QUIET_S = 0.0 ",
        tests=(
            f"{INTEGRATION}/test_workers.py::"
            "test_a_burst_of_connector_creations_costs_the_rebalances_of_one_and_spreads_each_connector",
        ),
    ),
    Mutation(
        name="internal-topics-in-gigabyte-segments",
        breaks="a worker restarting after a long run reads about the live offsets, not their whole history",
        file="workers/storage/topic_log.py",
        original='"segment.bytes": str(INTERNAL_SEGMENT_BYTES)',
        replacement='"segment.bytes": str(1 << 30)',
        tests=(
            f"{INTEGRATION}/test_worker_internal_history.py::"
            "test_a_long_offset_history_is_compacted_to_its_latest_values",
        ),
    ),
    # -- client quotas --------------------------------------------------------------------
    Mutation(
        name="produce-quota-not-enforced",
        breaks="a producer over its producer_byte_rate quota is held to it and told a throttle time",
        file="coordinator/apis/produce.py",
        original="    throttle = throttle_ms(ctx, PRODUCER_BYTE_RATE, produced)",
        replacement="    throttle = 0  # mutation",
        tests=(
            f"{INTEGRATION}/test_client_quotas.py::"
            "test_a_producer_over_its_quota_is_held_to_it_while_others_run_at_full_speed",
        ),
    ),
    Mutation(
        name="fetch-quota-not-enforced",
        breaks="a consumer over its consumer_byte_rate quota is held to it",
        file="coordinator/apis/fetch.py",
        original="    throttle = throttle_ms(ctx, CONSUMER_BYTE_RATE, total, keep_if_throttled=oversized)",
        replacement="    throttle = 0  # mutation",
        tests=(
            f"{INTEGRATION}/test_client_quotas.py::"
            "test_a_consumer_over_its_quota_is_held_to_it_while_others_read_at_full_speed",
        ),
    ),
    Mutation(
        name="throttled-connection-not-muted",
        breaks="a client that ignores its throttle time gets no answer until the time is over (KIP-219)",
        file="coordinator/network/connection.py",
        original="                if session.muted_until > self._loop.time():",
        replacement="                if False and session.muted_until > self._loop.time():",
        tests=(
            f"{INTEGRATION}/test_client_quotas.py::"
            "test_a_client_that_ignores_its_throttle_time_is_muted_for_it",
        ),
    ),
    Mutation(
        name="client-quotas-not-read-back",
        breaks="quotas set with AlterClientQuotas survive a kill -9 of the coordinator",
        file="coordinator/security/store.py",
        original="            store.replay(decode_security_record(key, value))",
        replacement="            (lambda r: isinstance(r, ClientQuotaRecord) or store.replay(r))"
        "(decode_security_record(key, value))",
        tests=(
            f"{INTEGRATION}/test_client_quotas.py::"
            "test_quotas_survive_a_kill_and_what_cannot_be_enforced_is_refused_by_name",
        ),
    ),
    Mutation(
        name="quota-throttles-not-counted",
        breaks="the admin port counts the answers throttled by a quota",
        file="coordinator/quotas/rates.py",
        original="        self.throttled[key] += 1",
        replacement="        pass  # mutation",
        tests=(
            f"{INTEGRATION}/test_client_quotas.py::"
            "test_a_producer_over_its_quota_is_held_to_it_while_others_run_at_full_speed",
        ),
    ),
    Mutation(
        name="default-client-quota-shared",
        breaks="a quota on the default client id is had by each client id alone, not shared by all",
        file="coordinator/quotas/entities.py",
        original="        (((CLIENT_ID, None),), by_client),",
        replacement='        (((CLIENT_ID, None),), QuotaTags("", "")),',
        tests=(f"{UNIT}/test_client_quotas.py::test_clients_under_a_default_quota_are_measured_apart",),
    ),
    Mutation(
        name="altered-topic-configs-not-persisted",
        breaks="a topic's altered configs outlive a kill -9 of the coordinator",
        file="coordinator/storage/topic_store.py",
        original="""        try:
            self._write_meta(topic)
        except OSError as exc:
            topic.configs = before""",
        replacement="""        try:
            pass  # mutation
        except OSError as exc:
            topic.configs = before""",
        tests=(
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_topic_configs_change_live_and_retention_acts_on_the_new_value",
        ),
    ),
    Mutation(
        name="altered-topic-configs-not-applied",
        breaks="retention follows a topic's altered retention.ms at once",
        file="coordinator/storage/topic_store.py",
        original="        self._apply_settings(topic)\n        return topic\n",
        replacement="        return topic  # mutation: the partitions keep their settings\n",
        tests=(
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_topic_configs_change_live_and_retention_acts_on_the_new_value",
        ),
    ),
    Mutation(
        name="incremental-append-overwrites",
        breaks="IncrementalAlterConfigs' APPEND adds to a list config instead of replacing it",
        file="coordinator/configs/topics.py",
        original="                items += [i for i in given if i not in items]",
        replacement="                items = given",
        tests=(
            f"{UNIT}/test_topic_config_changes.py::test_each_operation_changes_one_config_and_leaves_the_others",
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_topic_configs_change_live_and_retention_acts_on_the_new_value",
        ),
    ),
    # -- Kafka's topic configs and KIP-430's authorized operations ---------------------------
    Mutation(
        name="topic-configs-without-effect-refused",
        breaks="CreateTopics and the alters accept every topic config Kafka defines, those that have no "
        "effect here included",
        file="coordinator/configs/topics.py",
        original="        if name not in TOPIC_CONFIGS:\n",
        replacement="        if name not in TOPIC_CONFIGS or TOPIC_CONFIGS[name].no_effect:  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_kafka_topic_configs.py::"
            "test_every_kafka_topic_config_is_accepted_described_altered_and_warned_of_when_it_has_no_effect",
        ),
    ),
    Mutation(
        name="topic-configs-without-effect-silently-ignored",
        breaks="a topic config accepted without effect here is warned about in the log, never silently "
        "ignored",
        file="coordinator/configs/topics.py",
        original="        if TOPIC_CONFIGS[name].no_effect\n",
        replacement="        if TOPIC_CONFIGS[name].no_effect and False  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_kafka_topic_configs.py::"
            "test_every_kafka_topic_config_is_accepted_described_altered_and_warned_of_when_it_has_no_effect",
        ),
    ),
    Mutation(
        name="topic-config-range-unchecked",
        breaks="a topic config value Kafka's validator refuses is refused with INVALID_CONFIG and why",
        file="coordinator/configs/topic_table.py",
        original="        return self.valid(parsed) if self.valid is not None else None",
        replacement="        return None  # mutation",
        tests=(
            f"{INTEGRATION}/test_kafka_topic_configs.py::"
            "test_every_kafka_topic_config_is_accepted_described_altered_and_warned_of_when_it_has_no_effect",
        ),
    ),
    Mutation(
        name="min-insync-replicas-not-enforced",
        breaks="an acks=all write to a topic whose min.insync.replicas exceeds the one replica is refused "
        "NOT_ENOUGH_REPLICAS, as Kafka refuses it",
        file="coordinator/apis/produce.py",
        original="    if acks == -1 and min_isr > 1:",
        replacement="    if False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_kafka_topic_configs.py::"
            "test_min_insync_replicas_above_one_refuses_acks_all_writes_as_kafka_does_with_one_replica",
        ),
    ),
    Mutation(
        name="authorized-operations-ignore-the-acls",
        breaks="KIP-430: a principal is told the operations its ACLs allow on a resource, not all of them",
        file="coordinator/apis/registry.py",
        original="if self.authorized(op, resource_type, name)\n",
        replacement="if True  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_authorized_operations.py::test_each_principal_sees_the_operations_its_acls_allow_it",
        ),
    ),
    Mutation(
        name="group-authorized-operations-not-returned",
        breaks="KIP-430: DescribeGroups and ConsumerGroupDescribe return each group's authorized operations "
        "when asked",
        file="coordinator/apis/group_authorization.py",
        original="or not request.include_authorized_operations:",
        replacement="or True:  # mutation",
        tests=(
            f"{INTEGRATION}/test_authorized_operations.py::"
            "test_without_an_authorizer_every_operation_is_returned_and_none_unless_asked",
        ),
    ),
    Mutation(
        name="topic-authorized-operations-not-returned",
        breaks="KIP-430: Metadata returns each topic's authorized operations when asked",
        file="coordinator/apis/cluster.py",
        original="    if request.include_topic_authorized_operations:",
        replacement="    if False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_authorized_operations.py::"
            "test_without_an_authorizer_every_operation_is_returned_and_none_unless_asked",
        ),
    ),
    Mutation(
        name="describe-cluster-authorized-operations-not-returned",
        breaks="KIP-430: DescribeCluster returns the cluster's authorized operations when asked (0 without "
        "Describe on the cluster)",
        file="coordinator/apis/cluster.py",
        original="    elif request.include_cluster_authorized_operations:",
        replacement="    elif False:  # mutation",
        tests=(
            f"{INTEGRATION}/test_authorized_operations.py::test_each_principal_sees_the_operations_its_acls_allow_it",
        ),
    ),
    Mutation(
        name="deleted-records-come-back",
        breaks="a log start offset moved by DeleteRecords outlives a kill -9",
        file="coordinator/storage/partition_log.py",
        original='            write_json_atomically(self.directory / START_CHECKPOINT, {"log_start_offset": '
        "target})",
        replacement="            pass  # mutation",
        tests=(
            f"{UNIT}/test_partition_log.py::"
            "test_delete_records_moves_the_log_start_inside_a_segment_and_keeps_it_across_a_reopen",
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_delete_records_moves_the_low_watermark_for_readers_and_across_a_kill9",
        ),
    ),
    Mutation(
        name="deleted-records-keep-their-segments",
        breaks="DeleteRecords deletes the segments wholly below the new log start",
        file="coordinator/storage/partition_log.py",
        original="        while len(self.segments) > 1 and self.segments[1].base_offset <= "
        "self.deleted_through:",
        replacement="        while False:",
        tests=(
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_delete_records_moves_the_low_watermark_for_readers_and_across_a_kill9",
        ),
    ),
    Mutation(
        name="inapplicable-worker-settings-silent",
        breaks="a Kafka Connect setting that changes nothing here is accepted with a warning saying why",
        file="workers/config/inapplicable.py",
        original='            warnings.append(f"{name}={value} changes nothing here: {why}")',
        replacement="            pass  # mutation",
        tests=(
            f"{INTEGRATION}/test_worker_settings_files.py::test_kafkas_own_worker_file_starts_a_worker_unchanged",
        ),
    ),
    Mutation(
        name="worker-settings-problems-one-at-a-time",
        breaks="a worker file's problems are all reported at once",
        file="workers/config/worker.py",
        original="            raise ConfigError(*problems)",
        replacement="            raise ConfigError(problems[0])",
        tests=(
            f"{INTEGRATION}/test_worker_settings_files.py::"
            "test_a_file_with_three_misspelled_settings_fails_once_naming_all_three",
        ),
    ),
    Mutation(
        name="config-provider-variables-not-resolved",
        breaks="a task runs with its config's ${provider:path:key} variables resolved by the worker's "
        "config providers",
        file="workers/runtime/task_runner.py",
        original="        await task.start(resolved, self._context(runner.item, task, writes))",
        replacement="        await task.start(task_config, self._context(runner.item, task, writes))",
        tests=(
            f"{INTEGRATION}/test_config_providers.py::"
            "test_a_connector_runs_with_its_variables_resolved_while_its_config_keeps_them",
        ),
    ),
    Mutation(
        name="config-provider-values-written-to-the-config-topic",
        breaks="a value a config provider read is never written to the config topic: task configs keep "
        "the connector's ${...} text",
        file="workers/runtime/task_runner.py",
        original="        wanted = with_variables(config, generated)",
        replacement="        wanted = generated",
        tests=(
            f"{UNIT}/test_config_providers.py::"
            "test_a_connector_sees_its_config_resolved_and_the_config_topic_keeps_the_variables",
            f"{INTEGRATION}/test_config_providers.py::"
            "test_a_connector_runs_with_its_variables_resolved_while_its_config_keeps_them",
        ),
    ),
    Mutation(
        name="json-converter-schemas-always-on",
        breaks="JsonConverter writes without the schema envelope when schemas.enable is false",
        file="workers/plugins/converters.py",
        original='        schemas=settings.get("schemas.enable", "true").strip().lower() == "true",',
        replacement="        schemas=True,",
        tests=(
            f"{UNIT}/test_worker_settings.py::"
            "test_a_connectors_converters_override_the_workers_and_unset_ones_keep_todays_bytes",
        ),
    ),
    Mutation(
        name="internal-topic-partitions-fixed",
        breaks="the workers create their offset and status topics with the partitions their settings ask for",
        file="workers/distributed/herder.py",
        original="                config.offset_storage_partitions,",
        replacement="                25,",
        tests=(
            f"{INTEGRATION}/test_worker_settings_files.py::"
            "test_the_internal_topics_are_made_as_their_settings_say_and_a_replication_factor_too_big_is_refused",
        ),
    ),
    Mutation(
        name="assignments-not-logged",
        breaks="a worker's log says each assignment: its epoch, what is assigned and what starts",
        file="workers/distributed/membership/driver.py",
        original="        if assignment.epoch == self._told_epoch and not work:",
        replacement="        if True:",
        tests=(
            f"{INTEGRATION}/test_worker_logs.py::"
            "test_a_workers_log_tells_each_assignment_and_revocation_across_a_join_and_a_leave",
        ),
    ),
    Mutation(
        name="metrics-counters-written-as-gauges",
        breaks="/metrics says which families are counters, as Prometheus' parser reads them",
        file="connect_rebalance/prometheus.py",
        original='        maker = CounterMetricFamily if kind == "counter" else GaugeMetricFamily',
        replacement="        maker = GaugeMetricFamily",
        tests=(
            f"{INTEGRATION}/test_coordinator_metrics.py::"
            "test_a_connect_groups_metrics_and_its_describe_show_workers_and_their_work",
        ),
    ),
    Mutation(
        name="cluster-log-levels-not-applied",
        breaks="a log level set with scope=cluster reaches every worker",
        file="workers/distributed/herder.py",
        original="            affected = self.loggers.set_level(name, change.level)",
        replacement="            affected = []",
        tests=(
            f"{INTEGRATION}/test_worker_logs.py::"
            "test_log_levels_change_at_run_time_on_one_worker_or_on_every_worker",
        ),
    ),
    Mutation(
        name="active-topics-not-recorded",
        breaks="the topics a connector's tasks use are listed at GET /connectors/<name>/topics",
        file="workers/runtime/task_runner.py",
        original="        tracking = self.config.topic_tracking_enable",
        replacement="        tracking = False",
        tests=(
            f"{INTEGRATION}/test_connector_topics.py::"
            "test_the_topics_a_connector_used_are_listed_everywhere_and_reset",
        ),
    ),
    Mutation(
        name="offsets-altered-while-running",
        breaks="a running connector's offsets cannot be altered or reset (KIP-875: STOPPED first)",
        file="workers/rest/offsets.py",
        original="        if not self.herder.stopped(name):",
        replacement="        if False:",
        tests=(
            f"{INTEGRATION}/test_connector_offsets.py::"
            "test_a_stopped_source_connectors_offsets_are_altered_and_reset",
        ),
    ),
    Mutation(
        name="offsets-reset-forgets-nothing",
        breaks="a reset connector's task starts afresh",
        file="workers/storage/offset_store.py",
        original='        await self.alter(connector, [(entry["partition"], None) for entry in '
        "self.of_connector(connector)])",
        replacement="        pass  # mutation",
        tests=(
            f"{INTEGRATION}/test_connector_offsets.py::"
            "test_a_stopped_source_connectors_offsets_are_altered_and_reset",
        ),
    ),
    Mutation(
        name="cli-options-only-before-the-action",
        breaks="an admin command's options are taken after its action too",
        file="connect_rebalance_cli/cli.py",
        original="    actions = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]",
        replacement="    actions = []",
        tests=(
            f"{INTEGRATION}/test_cli.py::"
            "test_topics_alter_and_create_if_not_exists_with_options_after_the_action",
        ),
    ),
    Mutation(
        name="reset-offsets-ignores-partition-selection",
        breaks="groups reset-offsets --topic T:P,... resets only the partitions named",
        file="connect_rebalance_cli/groups_admin.py",
        original="            partitions = [tp for tp in partitions if tp.partition in wanted]",
        replacement="            pass  # mutation",
        tests=(f"{INTEGRATION}/test_cli.py::test_groups_list_describe_reset_offsets_and_delete",),
    ),
    Mutation(
        name="groups-describe-members-drops-partition-count",
        breaks="groups describe --members shows each member's #PARTITIONS, as kafka-consumer-groups does",
        file="connect_rebalance_cli/group_views.py",
        original='("CLIENT-ID", "client_id"), ("#PARTITIONS", "partition_count")]',
        replacement='("CLIENT-ID", "client_id")]',
        tests=(
            f"{INTEGRATION}/test_cli.py::test_groups_describe_offsets_members_and_state_views_of_all_groups",
        ),
    ),
    Mutation(
        name="groups-all-groups-takes-connect-groups",
        breaks="groups --all-groups means the consumer groups: a connect group is never described, reset "
        "or deleted with them",
        file="connect_rebalance_cli/groups_admin.py",
        original='    return kind in ("classic", "consumer") and listed["protocol_type"] in ("consumer", "")',
        replacement="    return True  # mutation",
        tests=(
            f"{INTEGRATION}/test_cli.py::test_groups_describe_offsets_members_and_state_views_of_all_groups",
            f"{INTEGRATION}/test_cli.py::test_groups_all_groups_reset_offsets_and_delete",
        ),
    ),
    Mutation(
        name="client-noise-not-quieted",
        breaks="a Kafka client's repeated message is logged once per quiet period, not every few ms",
        file="connect_rebalance/log_noise.py",
        original="        handler.addFilter(RepeatedMessages())",
        replacement="        pass  # mutation",
        tests=(
            f"{INTEGRATION}/test_coordinator_restart.py::"
            "test_workers_keep_their_work_through_a_restart_whose_load_outlasts_their_watchdog",
        ),
    ),
    # -- the rebalance timeline ---------------------------------------------------------------
    Mutation(
        name="timeline-drops-revoked",
        breaks="each rebalance on a group's timeline names what every member gave up",
        file="coordinator/groups/rebalance_timeline.py",
        original="                revoked.setdefault(holder, []).append(item_name(item))\n",
        replacement="                pass  # mutation: what was revoked is not kept\n",
        tests=(
            TIMELINE_CONSUMER,
            TIMELINE_CONNECT,
            f"{UNIT}/test_rebalance_timeline_core.py::"
            "test_a_join_is_an_entry_with_its_trigger_moves_reach_times_and_time_to_balance",
        ),
    ),
    Mutation(
        name="timeline-expiry-called-a-leave",
        breaks="a rebalance started by a session expiry says so, not that the member left",
        file="coordinator/groups/modern/engine.py",
        original="            self.remove(group, member_id, now_ms, cause=SESSION_EXPIRY)\n",
        replacement="            self.remove(group, member_id, now_ms)  # mutation: the default cause\n",
        tests=(
            TIMELINE_CONSUMER,
            f"{UNIT}/test_rebalance_timeline_core.py::"
            "test_a_leave_a_session_expiry_and_a_subscription_change_each_name_their_trigger",
        ),
    ),
    Mutation(
        name="timeline-reach-times-lost",
        breaks="the timeline says when each member reached the new epoch, not only when the group did",
        file="coordinator/groups/group_metrics.py",
        original="                    rebalance.member_reached(record.member_id, now_ms)\n",
        replacement="                    pass  # mutation\n",
        tests=(
            f"{UNIT}/test_rebalance_timeline_core.py::"
            "test_a_join_is_an_entry_with_its_trigger_moves_reach_times_and_time_to_balance",
        ),
    ),
    Mutation(
        name="timeline-time-in-seconds",
        breaks="a rebalance's time to balance is what it took, in the milliseconds its name says",
        file="coordinator/groups/rebalance_timeline.py",
        original='            "time_to_balance_ms": self.time_to_balance_ms,\n',
        replacement='            "time_to_balance_ms": self.time_to_balance_ms / 1000,  # mutation\n',
        tests=(TIMELINE_CONSUMER, TIMELINE_CONNECT),
    ),
    Mutation(
        name="timeline-unbounded",
        breaks="a group's timeline keeps only its last group.rebalance.timeline.size rebalances",
        file="coordinator/groups/rebalance_timeline.py",
        original="            entries = self.groups[group_id] = deque(maxlen=self.size)\n",
        replacement="            entries = self.groups[group_id] = deque()  # mutation\n",
        tests=(
            f"{UNIT}/test_rebalance_timeline_core.py::"
            "test_the_timeline_keeps_the_last_n_rebalances_and_the_histogram_counts_each",
        ),
    ),
    Mutation(
        name="timeline-unknown-group-answered",
        breaks="the timeline of a group the coordinator does not host is a JSON 404",
        file="coordinator/network/admin_http.py",
        original="        if timeline is None:\n",
        replacement="        if False:  # mutation\n",
        tests=(f"{TIMELINE}test_an_unknown_group_is_a_json_404_and_the_cli_says_so",),
    ),
    Mutation(
        name="time-to-balance-buckets-not-cumulative",
        breaks="the /metrics time-to-balance histogram counts the timeline's rebalances as Prometheus reads",
        file="connect_rebalance/prometheus.py",
        original="            cumulative = list(itertools.accumulate(counts))\n",
        replacement="            cumulative = list(counts)  # mutation\n",
        tests=(TIMELINE_CONSUMER,),
    ),
    Mutation(
        name="timeline-cli-without-balance",
        breaks="`groups timeline` prints when each rebalance was balanced",
        file="connect_rebalance_cli/timeline_view.py",
        original='balanced" if balanced else "under way")\n',
        replacement='balanced" if False else "under way")  # mutation\n',
        tests=(TIMELINE_CONNECT,),
    ),
    # -- dynamic group configuration --------------------------------------------------------
    Mutation(
        name="group-config-bounds-unchecked",
        breaks="a group config outside the coordinator's min/max bounds is refused with INVALID_CONFIG",
        file="coordinator/groups/group_configs.py",
        original="        if not low <= number <= high:\n",
        replacement="        if False:  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_values_are_checked_against_the_coordinators_bounds_and_each_other",
        ),
    ),
    Mutation(
        name="group-config-session-not-above-heartbeat",
        breaks="a group's session timeout stays greater than its heartbeat interval",
        file="coordinator/groups/group_configs.py",
        original="        if values[session][0] <= values[heartbeat][0]:\n",
        replacement="        if values[session][0] < values[heartbeat][0]:  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_values_are_checked_against_the_coordinators_bounds_and_each_other",
        ),
    ),
    Mutation(
        name="group-config-not-persisted",
        breaks="a group's dynamic configuration is a record: replayed at load, it survives a kill -9",
        file="coordinator/groups/group_configs.py",
        original="                    self.ctx.emit(GroupConfigRecord(",
        replacement="                    self.replay(GroupConfigRecord(",
        tests=(
            f"{UNIT}/test_group_configs_core.py::test_replaying_the_records_rebuilds_every_groups_configuration",
            GROUP_CONFIGS_OVER_TCP,
        ),
    ),
    Mutation(
        name="group-config-tombstone-replayed-as-empty",
        breaks="a group config deleted back to the default is gone after replay too",
        file="coordinator/groups/group_configs.py",
        original="            journal.pop_item(table, record.group_id)\n",
        replacement="            journal.set_item(table, record.group_id, {})  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::test_replaying_the_records_rebuilds_every_groups_configuration",
        ),
    ),
    Mutation(
        name="group-config-change-not-journaled",
        breaks="a group config change that cannot be written is taken back: memory is what the log holds",
        file="coordinator/groups/group_configs.py",
        original="            journal.set_item(table, record.group_id, dict(record.configs))\n",
        replacement="            table[record.group_id] = dict(record.configs)  # mutation\n",
        tests=(f"{UNIT}/test_group_configs_core.py::test_a_change_that_cannot_be_written_is_taken_back",),
    ),
    Mutation(
        name="group-config-deleted-with-its-group",
        breaks="a group's configuration is kept when the group is deleted, and applies when it is "
        "created again",
        file="coordinator/groups/coordinator.py",
        original="                self.offsets.delete_all(group_id)\n",
        replacement="                self.offsets.delete_all(group_id)\n"
        "                self.ctx.group_configs.pop(group_id, None)  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_a_group_config_is_set_before_its_group_exists_and_kept_when_the_group_is_deleted",
        ),
    ),
    Mutation(
        name="group-heartbeat-interval-ignored",
        breaks="a consumer group's heartbeat interval override reaches its members at their next heartbeat",
        file="coordinator/groups/modern/engine.py",
        original="interval = override(self.ctx, group.group_id, self.heartbeat_config) or interval\n",
        replacement="interval = interval  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_the_next_heartbeat_carries_the_new_interval_and_the_session_follows_without_an_epoch_bump",
        ),
    ),
    Mutation(
        name="group-heartbeat-interval-not-the-adaptive-ceiling",
        breaks="a group's heartbeat interval is the ceiling of the adaptive interval, which adapts below it",
        file="coordinator/groups/modern/engine.py",
        original="interval = min(interval, max(settings.adaptive_min_heartbeat_interval_ms, spread))\n",
        replacement="interval = max(settings.adaptive_min_heartbeat_interval_ms, spread)  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::test_the_groups_interval_is_the_ceiling_of_the_adaptive_interval",
        ),
    ),
    Mutation(
        name="group-config-source-reported-as-default",
        breaks="DescribeConfigs reports a group's own value as DYNAMIC_GROUP_CONFIG, the rest as defaults",
        file="coordinator/groups/group_configs.py",
        original="        name: (int(explicit[name]), DYNAMIC_GROUP_CONFIG)\n",
        replacement="        name: (int(explicit[name]), DEFAULT_CONFIG)  # mutation\n",
        tests=(GROUP_CONFIGS_OVER_TCP,),
    ),
    Mutation(
        name="group-config-validate-only-applied",
        breaks="IncrementalAlterConfigs with validate_only changes no group's configuration",
        file="coordinator/groups/group_configs.py",
        original="                if not body.validate_only and configs != current:\n",
        replacement="                if configs != current:  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::test_a_refused_or_validate_only_change_writes_nothing",
            GROUP_CONFIGS_OVER_TCP,
        ),
    ),
    Mutation(
        name="group-resources-not-served",
        breaks="IncrementalAlterConfigs serves GROUP resources (type 32), as AdminClient sends them",
        file="coordinator/apis/group_configs.py",
        original="    groups = [r for r in request.resources if r.resource_type == RESOURCE_GROUP]\n",
        replacement="    groups: list[Any] = []  # mutation\n",
        tests=(GROUP_CONFIGS_OVER_TCP,),
    ),
    Mutation(
        name="group-configs-unauthorized",
        breaks="a group's configs need ALTER_CONFIGS / DESCRIBE_CONFIGS on the group under an authorizer",
        file="coordinator/apis/group_configs.py",
        original="            ctx.require(operation, ResourceType.GROUP, name)\n",
        replacement="            pass  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_security_acls.py::"
            "test_a_groups_configs_need_alter_configs_and_describe_configs_on_the_group",
        ),
    ),
    Mutation(
        name="connect-group-config-pair-unchecked",
        breaks="a connect group's session timeout stays greater than its heartbeat interval",
        file="coordinator/groups/group_configs.py",
        original="    (CONNECT_SESSION_TIMEOUT, CONNECT_HEARTBEAT_INTERVAL),\n",
        replacement="",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_connect_values_are_checked_against_the_connect_bounds_and_each_other",
        ),
    ),
    Mutation(
        name="connect-group-session-override-ignored",
        breaks="a connect group's session timeout override measures its workers' sessions",
        file="coordinator/groups/connect.py",
        original="    session_config = CONNECT_SESSION_TIMEOUT\n",
        replacement="    session_config = None  # mutation\n",
        tests=CONNECT_SESSION_TESTS,
    ),
    Mutation(
        name="group-assignment-interval-override-ignored",
        breaks="a consumer group's own consumer.assignment.interval.ms decides when its server-side "
        "target is computed",
        file="coordinator/groups/consumer.py",
        original="            interval = override(self.ctx, group.group_id, CONSUMER_ASSIGNMENT_INTERVAL)\n",
        replacement="            interval = None  # mutation: the group's interval is ignored\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_a_groups_assignment_interval_decides_when_its_target_is_computed",
        ),
    ),
    Mutation(
        name="connect-group-heartbeat-override-ignored",
        breaks="a connect group's heartbeat interval override reaches its workers at their next heartbeat",
        file="coordinator/groups/connect.py",
        original="    heartbeat_config = CONNECT_HEARTBEAT_INTERVAL\n",
        replacement="    heartbeat_config = None  # mutation\n",
        tests=(f"{UNIT}/test_group_configs_core.py::{CONNECT_NEXT_HEARTBEAT}",),
    ),
    Mutation(
        name="connect-group-session-not-told-to-workers",
        breaks="a connect worker is told its group's session timeout, so that its own no-zombie "
        "deadline does not stop its work before the coordinator would",
        file="coordinator/groups/connect.py",
        original='        fields["session_timeout_ms"] = self.session_timeout(group.group_id, member)\n',
        replacement="",
        tests=CONNECT_SESSION_TESTS,
    ),
    Mutation(
        name="legacy-alter-configs-merges-group-configs",
        breaks="AlterConfigs (the legacy API) replaces a group's whole configuration, as Kafka 4.x does",
        file="coordinator/groups/group_configs.py",
        original="                base = {} if resource.replace else current\n",
        replacement="                base = current  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::test_legacy_alter_configs_replaces_the_whole_configuration",
            f"{INTEGRATION}/test_group_configs_over_tcp.py::"
            "test_legacy_alter_configs_replaces_a_groups_whole_configuration",
        ),
    ),
    Mutation(
        name="legacy-alter-configs-refuses-groups",
        breaks="AlterConfigs (the legacy API) serves GROUP resources, as Kafka 4.x does",
        file="coordinator/apis/alter_configs.py",
        original="        lambda sent: alter_with_groups("
        "ctx, sent, lambda rest: _alter(ctx, rest, change_of), replace=True),\n",
        replacement="        lambda sent: _alter(ctx, sent, change_of),  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_group_configs_over_tcp.py::"
            "test_legacy_alter_configs_replaces_a_groups_whole_configuration",
        ),
    ),
    Mutation(
        name="configs-cli-describes-defaults-as-the-groups",
        breaks="`configs --describe` lists the configs the group sets itself; `--all` adds the defaults",
        file="connect_rebalance_cli/configs_cli.py",
        original="(entry for entry in result.configs if every or entry.config_source == own_source),",
        replacement="(entry for entry in result.configs),  # mutation",
        tests=(CONFIGS_CLI,),
    ),
    Mutation(
        name="configs-cli-deletes-what-the-group-lacks",
        breaks="`configs --alter --delete-config` refuses a config the group does not set, as kafka-configs",
        file="connect_rebalance_cli/configs_cli.py",
        original="        if missing:\n",
        replacement="        if False:  # mutation\n",
        tests=(CONFIGS_CLI,),
    ),
    Mutation(
        name="group-session-timeout-ignored",
        breaks="a consumer group's session timeout override measures its members' sessions",
        file="coordinator/groups/modern/engine.py",
        original="return override(self.ctx, group_id, self.session_config) or self.session_timeout_ms\n",
        replacement="return self.session_timeout_ms  # mutation\n",
        tests=(
            f"{UNIT}/test_group_configs_core.py::"
            "test_the_next_heartbeat_carries_the_new_interval_and_the_session_follows_without_an_epoch_bump",
        ),
    ),
    Mutation(
        name="broker-topic-default-not-applied",
        breaks="a topic default set on the broker acts at once on every topic without its own value",
        file="coordinator/broker.py",
        original="        self.topics.refresh_settings()\n",
        replacement="        pass  # mutation: the partitions keep their settings\n",
        tests=(
            f"{BROKER_CONFIGS}"
            "test_a_topic_default_set_on_the_broker_acts_on_every_topic_without_its_own_and_outlives_a_kill9",
        ),
    ),
    Mutation(
        name="dynamic-broker-configs-forgotten-at-start",
        breaks="dynamic broker configs outlive a kill -9 and apply to topics created after it",
        file="coordinator/broker.py",
        original="        if not path.exists():\n            return\n        stored = read_json(path)\n",
        replacement="        if True:  # mutation: the stored configs are not read\n            return\n"
        "        stored = read_json(path)\n",
        tests=(
            f"{BROKER_CONFIGS}"
            "test_a_topic_default_set_on_the_broker_acts_on_every_topic_without_its_own_and_outlives_a_kill9",
        ),
    ),
    Mutation(
        name="per-broker-config-taken-as-cluster-default",
        breaks="a config Kafka takes only per broker is refused on the cluster-wide default",
        file="coordinator/configs/broker.py",
        original="    if level == DEFAULT_LEVEL and name in NO_EFFECT and NO_EFFECT[name].per_broker:\n",
        replacement="    if False:  # mutation\n",
        tests=(
            f"{BROKER_CONFIGS}test_broker_configs_that_cannot_change_here_are_refused_and_change_nothing",
        ),
    ),
    Mutation(
        name="broker-configs-altered-without-cluster-acl",
        breaks="altering the broker's dynamic configs needs ALTER_CONFIGS on the CLUSTER",
        file="coordinator/apis/alter_configs.py",
        original="    ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)\n",
        replacement="    pass  # mutation: no ACL check\n",
        tests=(
            f"{INTEGRATION}/test_security_acls.py::"
            "test_the_brokers_dynamic_configs_need_alter_configs_on_the_cluster",
        ),
    ),
    Mutation(
        name="read-at-start-broker-config-accepted",
        breaks="a broker setting read only at start is refused, not accepted and ignored",
        file="coordinator/configs/broker.py",
        original='    return name in READ_AT_START or name.startswith(("ssl.", LISTENER_PREFIX))\n',
        replacement="    return False  # mutation\n",
        tests=(
            f"{BROKER_CONFIGS}test_broker_configs_that_cannot_change_here_are_refused_and_change_nothing",
        ),
    ),
    Mutation(
        name="malformed-config-resource-checked-by-type",
        breaks="a config named twice or a null value is INVALID_REQUEST for every resource type, as on Kafka",
        file="coordinator/apis/alter_configs.py",
        original="    no_repeats([c.name for c in resource.configs], ErrorCode.INVALID_REQUEST)\n",
        replacement="    return  # mutation: left to each type's validation\n",
        tests=(
            f"{INTEGRATION}/test_admin_configs_and_records.py::"
            "test_a_config_named_twice_or_without_a_value_is_an_invalid_request_for_every_resource_type",
        ),
    ),
    Mutation(
        name="deleted-connector-kept-in-the-timeline",
        breaks="a deleted connector's figures leave the workers' /metrics and web view",
        file="workers/distributed/herder.py",
        original="            self.watch.timeline.forget(name, time.time())\n",
        replacement="            pass  # mutation: the timeline keeps it\n",
        tests=(
            f"{INTEGRATION}/test_workers.py::"
            "test_connectors_and_tasks_each_balance_within_one_after_a_join_and_after_a_crash_and_a_bounce[connect]",
        ),
    ),
    Mutation(
        name="deleted-connectors-stopping-tasks-bring-it-back",
        breaks="the statuses a deleted connector's stopping tasks write do not bring it back to the timeline",
        file="workers/observe/timeline.py",
        original="            if state != RUNNING:\n"
        "                return  # a deleted connector's tasks stopping\n",
        replacement="            pass  # mutation\n",
        tests=(
            f"{UNIT}/test_cluster_timeline.py::"
            "test_a_deleted_connector_is_forgotten_and_its_stopping_tasks_do_not_bring_it_back",
        ),
    ),
    Mutation(
        name="deleted-connector-counters-kept",
        breaks="a deleted connector's started and stopped counters leave the workers' /metrics",
        file="workers/observe/metrics.py",
        original="            if connector in figures.configured or figures.running.get(connector)\n",
        replacement="            if True  # mutation\n",
        tests=(
            f"{INTEGRATION}/test_workers.py::"
            "test_connectors_and_tasks_each_balance_within_one_after_a_join_and_after_a_crash_and_a_bounce[connect]",
        ),
    ),
    # -- SASL re-authentication (KIP-368) -----------------------------------------------------
    Mutation(
        name="reauth-lifetime-not-announced",
        breaks="SaslAuthenticate v1+ tells the client its session lifetime, so that it re-authenticates",
        file="coordinator/apis/sasl.py",
        original='        answer["session_lifetime_ms"] = state.start_session(asyncio.get_running_loop()'
        ".time())\n",
        replacement="        state.start_session(asyncio.get_running_loop().time())  # mutation\n",
        tests=(REAUTH_CLIENTS, REAUTH_EXPIRY),
    ),
    Mutation(
        name="reauth-expired-session-served",
        breaks="a connection whose SASL session has expired is closed at its next request",
        file="coordinator/network/server.py",
        original="            elif sasl.expired(now):\n",
        replacement="            elif False:  # mutation\n",
        tests=(REAUTH_EXPIRY,),
    ),
    Mutation(
        name="reauth-handshake-refused",
        breaks="an authenticated client may re-authenticate on the same connection",
        file="coordinator/network/server.py",
        original="            if header.api_key == ApiKey.SASL_HANDSHAKE and sasl.may_reauthenticate(now):\n",
        replacement="            if False:  # mutation\n",
        tests=(REAUTH_CLIENTS, REAUTH_RAW),
    ),
    Mutation(
        name="reauth-lifetime-not-renewed",
        breaks="a successful re-authentication starts a new session lifetime",
        file="coordinator/security/sasl.py",
        original="        self.expires_at = None if lifetime is None else now + lifetime / 1000\n",
        replacement="        self.expires_at = self.expires_at or (None if lifetime is None "
        "else now + lifetime / 1000)  # mutation\n",
        tests=(REAUTH_CLIENTS, REAUTH_RAW),
    ),
    Mutation(
        name="reauth-principal-may-change",
        breaks="a re-authentication as another principal is refused and closes the connection",
        file="coordinator/security/sasl.py",
        original='            self._same_principal(f"User:{user}")\n',
        replacement="            pass  # mutation\n",
        tests=(
            REAUTH_REFUSED,
            f"{UNIT}/test_sasl_reauthentication.py::"
            "test_a_reauthentication_must_keep_the_principal_and_the_mechanism",
        ),
    ),
    Mutation(
        name="reauth-mechanism-may-change",
        breaks="a re-authentication with another mechanism closes the connection",
        file="coordinator/security/sasl.py",
        original="        if self.previous is not None and mechanism != self.previous.mechanism:\n",
        replacement="        if False:  # mutation\n",
        tests=(REAUTH_REFUSED,),
    ),
    Mutation(
        name="reauth-more-than-once-a-second",
        breaks="re-authentications start at most once a second, as on Kafka",
        file="coordinator/security/sasl.py",
        original="                or now - self.reauthenticated_at >= MIN_REAUTHENTICATION_INTERVAL_S\n",
        replacement="                or True  # mutation\n",
        tests=(REAUTH_RAW,),
    ),
    Mutation(
        name="reauth-per-mechanism-setting-ignored",
        breaks="listener.name.<listener>.<mechanism>.connections.max.reauth.ms overrides the broker-wide one",
        file="coordinator/security/settings.py",
        original='        mechanism: int(overrides.get(f"{mechanism.lower()}.{REAUTH}", default))\n',
        replacement="        mechanism: default  # mutation\n",
        tests=(REAUTH_EXPIRY,),
    ),
    Mutation(
        name="committed-offset-written-with-swapped-timestamps",
        breaks="committed offsets written by hand are the schema codec's bytes (OffsetCommitValue v3)",
        file="coordinator/group_record_codec.py",
        original="_TIMESTAMPS.pack(v.commit_timestamp_ms, v.expire_timestamp_ms)",
        replacement="_TIMESTAMPS.pack(v.expire_timestamp_ms, v.commit_timestamp_ms)",
        tests=(
            "tests/unit/test_member_record_bytes.py::test_committed_offsets_written_by_hand_are_the_schema_codecs_bytes",
        ),
    ),
    Mutation(
        name="librdkafka-tls-versions-ignored",
        breaks="TLS versions TopicIngest's librdkafka reads cannot be held to are refused, not ignored",
        file="connect_rebalance/tls.py",
        original="        if self._versions() != (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):\n",
        replacement="        if False:  # mutation: librdkafka's TLS versions are whatever it speaks\n",
        tests=(
            f"{UNIT}/test_client_override_policy.py::"
            "test_tls_versions_librdkafka_cannot_be_held_to_are_refused_for_topic_ingests_consumers",
        ),
    ),
    Mutation(
        name="librdkafka-reads-without-sasl",
        breaks="TopicIngest's Python workers read with the consumer settings' SASL credentials",
        file="connect_rebalance/client_security.py",
        original='        if self.mechanism:\n            options.update({"sasl.mechanisms"',
        replacement='        if False:  # mutation\n            options.update({"sasl.mechanisms"',
        tests=(
            f"{UNIT}/test_client_override_policy.py::"
            "test_topic_ingests_consumer_overrides_reach_its_spark_options_and_kafka_python_consumer",
        ),
    ),
    Mutation(
        name="unplanned-start-holds-nothing",
        breaks="a TopicIngest task that started under a new tasks.max but planned no batch yet holds its "
        "partitions: no other task reads them meanwhile (every record once)",
        file="workers/spark/share_handoff.py",
        original="            waiting |= new & (set(held) | set(initial_offsets(checkpoint)))\n",
        replacement="            waiting |= new & set(held)  # mutation: only planned batches hold\n",
        tests=(
            f"{UNIT}/test_share_handoff.py::"
            "test_a_task_that_started_but_planned_no_batch_yet_holds_the_partitions_it_starts_from",
        ),
    ),
    Mutation(
        name="spark-start-timeout-fails-the-task",
        breaks="a Spark start that times out on a busy machine is started again; the task never goes FAILED",
        file="workers/spark/task.py",
        original="and any(all(w in error for w in words) for words in MACHINERY_FAILURES)\n",
        replacement="and False  # mutation: every end of a query fails its task\n",
        tests=(
            "tests/e2e/test_spark_planners.py::"
            "test_a_spark_start_that_times_out_is_started_again_and_its_task_never_fails",
        ),
    ),
    Mutation(
        name="planner-process-per-query",
        breaks="every streaming query of a worker is planned in its one planner host, not a process each",
        file="workers/spark/planner_site/sitecustomize.py",
        original="\n_hand_over_a_planner()\n",
        replacement="\npass  # mutation: each planner plans its query itself\n",
        tests=(
            "tests/e2e/test_spark_planners.py::"
            "test_every_query_is_planned_in_the_workers_one_planner_host_which_is_replaced_when_it_dies",
        ),
    ),
    Mutation(
        name="checkpoints-through-filecontext",
        breaks="a Spark task's checkpoints and sink logs are written without the JVM running readlink",
        file="workers/spark/runtime.py",
        original="    CHECKPOINT_MANAGER_SETTING: ",
        replacement='    "spark.mutation.unused": ',
        tests=(
            "tests/e2e/test_spark_batch_forks.py::test_a_spark_tasks_batches_make_its_jvm_run_no_readlink",
        ),
    ),
    Mutation(
        name="late-batch-of-an-earlier-run-counted",
        breaks="a batch of a task's earlier run, delivered late, is not taken for its current run's",
        file="workers/spark/runtime.py",
        original="        if self._current.get(progress.name) != str(progress.runId):\n",
        replacement="        if False:  # mutation: every batch of the name is the current run's\n",
        tests=(
            "tests/unit/test_spark_runtime_events.py::test_an_earlier_runs_late_batch_is_not_counted_as_the_current_runs",
        ),
    ),
    Mutation(
        name="dead-planner-host-not-replaced",
        breaks="a planner host that dies is started again for the queries that start after",
        file="workers/spark/planner_host.py",
        original="            if self.process is None or self.process.poll() is None:\n",
        replacement="            if True:  # mutation: a dead host stays dead\n",
        tests=(
            "tests/e2e/test_spark_planners.py::"
            "test_every_query_is_planned_in_the_workers_one_planner_host_which_is_replaced_when_it_dies",
        ),
    ),
    Mutation(
        name="reader-connects-after-its-grant",
        breaks="the reader Spark makes again for a prepared run's first batch neither waits nor connects",
        file="workers/spark/topic_source.py",
        original="        if gate and not granted(gate):  # last: options are checked before the wait\n",
        replacement="        if gate:  # mutation: every reader of a gated source connects and waits\n",
        tests=(
            "tests/unit/test_topic_ingest_plan.py::"
            "test_a_reader_made_after_its_gate_was_granted_neither_waits_nor_connects",
        ),
    ),
    Mutation(
        name="readied-consumer-not-kept",
        breaks="a consumer readied for a task's reads is the one its first read uses",
        file="workers/spark/partition_reads.py",
        original="        raise\n    _give_back(key, cached)\n",
        replacement="        raise\n    cached.consumer.close()  # mutation: dropped\n",
        tests=(
            f"{INTEGRATION}/test_partition_reads.py::test_a_consumer_readied_for_a_topic_serves_the_first_read_of_it",
        ),
    ),
    Mutation(
        name="warm-up-batches-all-at-once",
        breaks="a prepared run's warm-up runs batch by batch through the file sink's first compaction",
        file="workers/spark/warmup.py",
        original="class _WarmupReader(DataSourceStreamReader, SupportsTriggerAvailableNow):\n",
        replacement="class _WarmupReader(DataSourceStreamReader):  # mutation: all in one batch\n",
        tests=(
            "tests/e2e/test_spark_warmup.py::"
            "test_a_prepared_runs_warm_up_runs_through_the_file_sinks_first_compaction_and_readies_its_reads",
        ),
    ),
    Mutation(
        name="file-source-log-not-read-ahead",
        breaks="a FileIngest task about to move here has its log of files read ahead, read-only",
        file="workers/connectors/file_ingest.py",
        original="    if not folder.is_dir():\n        return 0\n    jvm = spark",
        replacement="    if True:  # mutation: nothing read ahead\n        return 0\n    jvm = spark",
        tests=(
            "tests/e2e/test_spark_warmup.py::"
            "test_a_prepared_file_ingest_run_reads_its_tasks_log_of_files_and_writes_nothing",
        ),
    ),
)


def by_name(names: list[str]) -> list[Mutation]:
    known = {m.name: m for m in MUTATIONS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"no such mutation: {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names] if names else list(MUTATIONS)
