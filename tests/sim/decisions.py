"""What a step decided, as a comparable tuple: for the tests that replay a served session's trace."""


def decisions(record) -> tuple:
    return (record.step, record.clock_s_before, record.clock_s_after,
            [(c.request_id, c.num_tokens, c.kind) for c in record.scheduled], record.arrived,
            record.preempted, record.finished, record.cached_tokens)
