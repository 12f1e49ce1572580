"""The worker-side assignors: eager and incremental cooperative, the balanced target, and a
lost worker's work held for `scheduled.rebalance.max.delay.ms`. Pure: no IO, no clock.
"""
