"""The server's stepping time a tick, shared: by the clients playing, then by each one's sessions,
so however many sessions play, together they step for at most STEPPING_SHARE of each tick."""

import asyncio

from app.session_manager import SessionManager
from app.settings import Settings
from app.stepping import STEPPING_SHARE, SteppingShare
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults


class Playing:
    def __init__(self, owner: str):
        self.owner = owner


def test_each_client_playing_gets_an_equal_share_split_between_its_sessions():
    share = SteppingShare()
    hog = [Playing("127.0.0.2") for _ in range(3)]
    bystander = Playing("127.0.0.3")
    assert share.tick_s(bystander, 1.0) == STEPPING_SHARE  # alone: the whole share
    for live in [*hog, bystander]:
        share.start(live)
    assert share.tick_s(bystander, 1.0) == STEPPING_SHARE / 2
    assert share.tick_s(hog[0], 1.0) == STEPPING_SHARE / 2 / 3
    total = sum(share.tick_s(live, 1.0) for live in [*hog, bystander])
    assert abs(total - STEPPING_SHARE) < 1e-12
    for live in hog:
        share.stop(live)
    assert share.tick_s(bystander, 1.0) == STEPPING_SHARE and "127.0.0.2" not in share.playing


def test_sessions_count_as_playing_while_their_playback_runs():
    scenario = Scenario.from_dict(with_vllm_defaults(dict(PRESET_SCENARIOS["default"])))
    manager = SessionManager(Settings())

    async def scenario_run():
        first, second = manager.create(scenario, owner="a"), manager.create(scenario, owner="b")
        assert first.stepping is second.stepping is manager.stepping
        await first.cmd_play({"steps_per_s": 50})
        await second.cmd_play({"steps_per_s": 50})
        assert set(manager.stepping.playing) == {"a", "b"}
        await first.cmd_pause({})
        await asyncio.wait_for(first.playback, 5)
        assert set(manager.stepping.playing) == {"b"}
        await manager.close_all()
        assert manager.stepping.playing == {}

    asyncio.run(scenario_run())


def test_a_commands_stepping_pauses_only_beside_other_clients_stepping():
    """A seek alone runs flat out; beside a bystander's play, a slice of a student's "step 100,000"
    is followed by a pause that holds the student's sessions to their client's half of the CPU."""
    share = SteppingShare()
    student = [Playing("127.0.0.2"), Playing("127.0.0.2")]
    bystander = Playing("127.0.0.3")
    share.start(student[0])
    assert share.pause_s(student[0], 0.005) == 0.0  # nobody else steps
    share.start(student[1])
    share.start(bystander)
    # Two clients: the student's half, split between its two sessions: a quarter each.
    assert abs(share.pause_s(student[0], 0.005) - 0.015) < 1e-12
    assert abs(share.pause_s(bystander, 0.005) - 0.005) < 1e-12


def test_a_session_both_playing_and_stepping_counts_until_both_have_stopped():
    share, live = SteppingShare(), Playing("a")
    share.start(live)  # its play
    share.start(live)  # a step command meanwhile
    share.stop(live)  # play ends (the command set playing to False)
    assert "a" in share.playing
    share.stop(live)
    assert share.playing == {}
