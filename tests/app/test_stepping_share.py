"""The server's stepping time a tick, shared: by the clients playing, then by each one's sessions,
so however many sessions play, together they step for at most STEPPING_SHARE of each tick."""

import asyncio

from app.live import SessionManager
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
