"""What viewers' sockets hold, bounded: one frame in flight per viewer, large frames of all
viewers within the server's `max_viewer_send_bytes` (viewers that stopped reading dropped to make
room, with a close reason), small frames never held up, and snapshot requests one at a time."""

import asyncio
import json
from types import SimpleNamespace

from app.viewer import SNAPSHOT_BURST, SNAPSHOT_REQUEST_S, Viewer
from app.viewer_bytes import SMALL_FRAME_BYTES, STALLED_S, ViewerBytes

MiB = 2**20


class Socket:
    """A websocket whose reader takes frames only when told to (`reading`), or never."""

    def __init__(self, reading: bool = True):
        self.client = SimpleNamespace(host="127.0.0.2")
        self.reading = asyncio.Event()
        if reading:
            self.reading.set()
        self.received: list = []

    async def send_bytes(self, data: bytes) -> None:
        await self.reading.wait()
        self.received.append(data)

    async def send_text(self, data: str) -> None:
        await self.send_bytes(data.encode())


class Live:
    """What a viewer's sender needs of a live session: a snapshot of `snapshot_bytes`."""

    def __init__(self, snapshot_bytes: int):
        self.lock = asyncio.Lock()
        self.unpublished = []
        self.session = SimpleNamespace(seq=1, step=0, snapshot_frame=lambda: b"s" * snapshot_bytes)

    def flush(self) -> None:
        pass


def make_stale(account: ViewerBytes, viewer) -> None:
    """As if `viewer`'s frame had waited longer than STALLED_S (no sleeping in the tests)."""
    held, since = account.in_flight[viewer]
    account.in_flight[viewer] = (held, since - STALLED_S - 1)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


def test_a_viewer_that_does_not_read_is_dropped_to_make_room_for_one_that_does():
    async def scenario():
        account = ViewerBytes(max_bytes=3 * MiB)
        live = Live(2 * MiB)
        stuck = Viewer(Socket(reading=False), False, 10, account)
        stuck_sender = asyncio.create_task(stuck.send_loop(live, 60, 60))
        await settle()
        assert account.num_bytes == 2 * MiB  # its snapshot: handed to the socket, never read
        reader = Viewer(Socket(), False, 10, account)
        reader_sender = asyncio.create_task(reader.send_loop(live, 60, 60))
        await settle()
        assert not reader.websocket.received and account.num_bytes <= 3 * MiB  # no room yet: it waits
        make_stale(account, stuck)
        await settle()
        assert stuck_sender.done() and stuck.dropped.startswith("frames not read: 2.0 MiB unsent")
        assert len(reader.websocket.received) == 1 and account.num_bytes == 0
        reader_sender.cancel()

    asyncio.run(scenario())


def test_the_large_frames_in_flight_never_pass_the_servers_budget():
    async def scenario():
        account = ViewerBytes(max_bytes=5 * MiB)
        live = Live(2 * MiB)
        viewers = [Viewer(Socket(reading=False), False, 10, account) for _ in range(6)]
        senders = [asyncio.create_task(v.send_loop(live, 60, 60)) for v in viewers]
        await settle()
        assert account.num_bytes == 4 * MiB and len(account.in_flight) == 2  # the others wait, holding nothing
        for sender in senders:
            sender.cancel()
        await settle()
        assert account.num_bytes == 0 and not account.in_flight

    asyncio.run(scenario())


def test_small_frames_always_go_however_full_the_budget():
    async def scenario():
        account = ViewerBytes(max_bytes=1 * MiB)
        async with account.sending("stuck", 1 * MiB):
            async with asyncio.timeout(1):
                async with account.sending("reader", SMALL_FRAME_BYTES):
                    assert account.num_bytes == 1 * MiB

    asyncio.run(scenario())


def test_a_frame_larger_than_the_whole_budget_still_goes_when_nothing_else_is_in_flight():
    async def scenario():
        account = ViewerBytes(max_bytes=1 * MiB)
        async with asyncio.timeout(1):
            async with account.sending("reader", 3 * MiB):
                assert account.num_bytes == 3 * MiB

    asyncio.run(scenario())


def test_a_page_gets_one_snapshot_at_a_time_a_few_in_a_row_then_one_a_second():
    async def scenario():
        viewer = Viewer(Socket(), False, 10)
        viewer.needs_snapshot = False
        viewer.request_snapshot()
        assert viewer.needs_snapshot
        viewer.request_snapshot()  # one is already on its way
        assert len(viewer.replies) == 1
        for _ in range(SNAPSHOT_BURST - 1):
            viewer.needs_snapshot = False  # sent
            viewer.request_snapshot()
            assert viewer.needs_snapshot
        viewer.needs_snapshot = False
        viewer.request_snapshot()  # the burst is spent
        assert not viewer.needs_snapshot
        refusals = [json.loads(text) for text in viewer.replies]
        assert [r["code"] for r in refusals] == ["snapshot_limited", "snapshot_limited"]
        tokens, then = viewer.snapshot_requests._buckets[""]
        viewer.snapshot_requests._buckets[""] = (tokens, then - SNAPSHOT_REQUEST_S)  # a second later
        viewer.request_snapshot()
        assert viewer.needs_snapshot

    asyncio.run(scenario())
