"""`Scheduler.finish_requests`, vLLM's abort between steps, one rule per test (4-token blocks, as
tests/engine/test_scheduler_v1.py): the request leaves its queue and frees its blocks at once."""

from scheduler_core.engine.request import RequestStatus
from tests.engine.test_scheduler_v1 import add, block_table, make_request, make_scheduler, step

ABORTED = RequestStatus.FINISHED_ABORTED


def test_aborting_a_running_request_frees_its_blocks():
    scheduler = make_scheduler(num_gpu_blocks=9)
    (request,) = add(scheduler, make_request("a", 10))
    step(scheduler)
    assert scheduler.kv_cache_manager.num_free_blocks == 5  # 3 blocks for 11 tokens, and the null block

    assert scheduler.finish_requests("a", ABORTED) == [request]

    assert scheduler.running == [] and "a" not in scheduler.requests
    assert request.status == ABORTED and block_table(scheduler, "a") == []
    assert scheduler.kv_cache_manager.num_free_blocks == 8
    assert scheduler.has_finished_requests and not scheduler.has_unfinished_requests()


def test_aborting_a_waiting_request_removes_it_from_the_queue():
    scheduler = make_scheduler(max_num_seqs=1)
    add(scheduler, make_request("runs", 4), make_request("waits", 4))
    step(scheduler)
    assert [r.request_id for r in scheduler.waiting] == ["waits"]

    scheduler.finish_requests(["waits"], ABORTED)

    assert len(scheduler.waiting) == 0 and "waits" not in scheduler.requests
    output, _ = step(scheduler)
    assert list(output.num_scheduled_tokens) == ["runs"]


def test_aborting_a_preempted_request_removes_it_and_it_holds_no_blocks():
    """A preempted request waits with no blocks (V1 recomputes): the abort only takes it off the queue."""
    scheduler = make_scheduler(num_gpu_blocks=5, max_num_seqs=2)
    add(scheduler, make_request("old", 6), make_request("new", 6))
    for _ in range(20):
        step(scheduler)
        if any(r.status == RequestStatus.PREEMPTED for r in scheduler.requests.values()):
            break
    (victim,) = [r for r in scheduler.requests.values() if r.status == RequestStatus.PREEMPTED]
    free_before = scheduler.kv_cache_manager.num_free_blocks

    scheduler.finish_requests(victim.request_id, ABORTED)

    assert victim not in list(scheduler.waiting) and victim.status == ABORTED
    assert scheduler.kv_cache_manager.num_free_blocks == free_before


def test_aborting_with_prefix_caching_keeps_its_full_blocks_cached():
    """Its full blocks keep their hashes in the free queue: the next request with that prompt hits them."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    prompt = list(range(300, 309))
    add(scheduler, make_request("gone", prompt=prompt))
    step(scheduler)

    scheduler.finish_requests("gone", ABORTED)
    add(scheduler, make_request("later", prompt=prompt))
    output, _ = step(scheduler)

    assert output.num_cached_tokens["later"] == 8


def test_aborting_an_unknown_or_finished_id_does_nothing():
    scheduler = make_scheduler()
    (done,) = add(scheduler, make_request("done", 4, max_tokens=1))
    add(scheduler, make_request("runs", 4))
    step(scheduler)
    assert done.status == RequestStatus.FINISHED_LENGTH_CAPPED
    free = scheduler.kv_cache_manager.num_free_blocks

    assert scheduler.finish_requests(["nobody", "done"], ABORTED) == []

    assert done.status == RequestStatus.FINISHED_LENGTH_CAPPED and "runs" in scheduler.requests
    assert scheduler.kv_cache_manager.num_free_blocks == free


def test_async_scheduling_an_aborted_requests_token_in_flight_is_dropped():
    """Async scheduling: the batch scheduled before the abort still runs; its update finds the
    request gone and drops its token (vLLM: "aborted while the model is executing it"). The blocks
    were freed at the abort, not held for the batch (vLLM defers only for a KV connector)."""
    scheduler = make_scheduler(async_scheduling=True, num_gpu_blocks=9)
    (request,) = add(scheduler, make_request("a", 10))
    in_flight = scheduler.schedule(0.0)
    assert in_flight.sampling_reqs == ["a"] and request.num_output_placeholders == 1

    scheduler.finish_requests("a", ABORTED)
    assert scheduler.kv_cache_manager.num_free_blocks == 8
    result = scheduler.update_from_output(in_flight, 1.0)

    assert result.sampled == [] and result.finished == []
    assert request.num_output_tokens == 0 and scheduler.num_finished == 0
