"""ofbench's agent for labgrid's coordinator: runs in .venv-labgrid (labgrid 26.0.1, asyncio +
grpc), never in ofbench's own venv, and imports nothing of ofbench (it is started as a script).
drivers/lab/lease.py starts it and talks to it in JSON lines over stdin/stdout.

It holds one labgrid ``ClientSession`` (``labgrid.remote.client``) for the run: the session's
name (``LG_HOSTNAME/LG_USERNAME``, set by lease.py to ``<host>/<user>-<run id>``) is who holds
a place, so a holder names the run. The coordinator pushes every place change down the
session's stream, so ``check`` reads the session's own copy after one sync round trip.

Requests (one JSON object a line) and replies (``{"ok": true, ...}`` or ``{"ok": false,
"error": "..."}``)::

    {"op": "places"}                               -> places: {name: {tags, acquired, reservation}}
    {"op": "reserve", "filter": {k: v}, "prio": N, "wait_s": T}
        a reservation in the coordinator's queue (labgrid's scheduler: highest prio first, then
        oldest), awaited (the coordinator pushes the allocation; a poll each second besides),
        then the place acquired -> place, token, tags, waited_s
        (on timeout the reservation is cancelled: error, "holders": who held the candidates)
    {"op": "check", "place": P}                    -> held, holder
    {"op": "release", "place": P, "token": T}      release the place, cancel the reservation
    {"op": "release_holder", "holder": H}          places acquired by H released, H's
                                                    reservations cancelled (a dead run's)
    {"op": "register", "place": P, "tags": {..}}   create the place if missing, set its tags
                                                    (tags it had that are not given are removed)
    {"op": "set_tags", "place": P, "tags": {..}}   set these tags, keep the others
    {"op": "acquire", "place": P}                  acquire directly (a human, or a test)
    {"op": "kick", "place": P}                     release whoever holds it, cancel its
                                                    reservation (an admin taking it back)

On end of input (the run is gone: ended or killed) what this agent acquired or reserved is
released; a SIGKILL of the agent too leaves the release to the next run's cleanup.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time


def _err(e: BaseException) -> str:
    details = getattr(e, "details", None)
    if callable(details):
        try:
            return str(details())
        except Exception:  # noqa: BLE001
            pass
    return str(e) or type(e).__name__


class Agent:
    def __init__(self, address: str, connect_timeout_s: float):
        self.address, self.connect_timeout_s = address, connect_timeout_s
        self.session = None
        self.held: dict[str, str] = {}        # place -> reservation token
        self.pending: set[str] = set()        # reservation tokens not yet acquired

    async def start(self) -> None:
        from labgrid.remote.client import ClientSession
        loop = asyncio.get_running_loop()
        self.session = ClientSession(self.address, loop)
        try:
            await asyncio.wait_for(self.session.start(), self.connect_timeout_s)
        except asyncio.TimeoutError:
            raise RuntimeError(f"no answer from the coordinator in {self.connect_timeout_s:.0f} s")
        if self.session.stopping.is_set():
            raise RuntimeError("could not connect to the coordinator")
        # every place change the coordinator pushes (an allocation is one) wakes a waiter
        self.changed = asyncio.Event()
        pushed = self.session.on_place_changed

        async def on_place_changed(place_pb2):
            await pushed(place_pb2)
            self.changed.set()
        self.session.on_place_changed = on_place_changed

    @property
    def name(self) -> str:
        return f"{self.session.gethostname()}/{self.session.getuser()}"

    async def sync(self) -> None:
        if self.session.stopping.is_set() or not await asyncio.wait_for(
                self.session.sync_with_coordinator(), 10):
            raise RuntimeError(f"lost the connection to the coordinator at {self.address}")

    def _pb(self):
        from labgrid.remote.generated import labgrid_coordinator_pb2
        return labgrid_coordinator_pb2

    # ---- operations -----------------------------------------------------------------------
    async def op_places(self, req) -> dict:
        await self.sync()
        return {"places": {n: {"tags": dict(p.tags), "acquired": p.acquired,
                               "reservation": p.reservation}
                           for n, p in self.session.places.items()}}

    async def op_reserve(self, req) -> dict:
        pb = self._pb()
        flt = {str(k): str(v) for k, v in (req.get("filter") or {}).items()}
        prio = float(req.get("prio", 0))
        wait_s = float(req.get("wait_s", 0))
        res = await self.session.stub.CreateReservation(pb.CreateReservationRequest(
            filters={"main": pb.Reservation.Filter(filter=flt)}, prio=prio))
        token = res.reservation.token
        self.pending.add(token)
        t0 = time.monotonic()
        from labgrid.remote.common import Reservation, ReservationState
        while True:
            self.changed.clear()
            r = Reservation.from_pb2((await self.session.stub.PollReservation(
                pb.PollReservationRequest(token=token))).reservation)
            if r.state is ReservationState.allocated:
                place = r.allocations["main"][0]
                break
            if r.state is not ReservationState.waiting:
                self.pending.discard(token)
                raise RuntimeError(f"the reservation for {flt} became {r.state.name}")
            if time.monotonic() - t0 > wait_s:
                await self._cancel(token)
                await self.sync()
                holders = {n: p.acquired or f"reserved {p.reservation}"
                           for n, p in self.session.places.items()
                           if _matches(n, p.tags, flt) and (p.acquired or p.reservation)}
                return {"ok": False, "timeout": True, "holders": holders,
                        "error": f"no place with {_fmt(flt)} came free in {wait_s:.0f} s"}
            # woken by the coordinator's push of the allocation, else polled every second
            # (a poll also keeps the reservation from expiring: labgrid's 60 s)
            try:
                await asyncio.wait_for(self.changed.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        await self.session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=place))
        self.pending.discard(token)
        self.held[place] = token
        await self.sync()
        p = self.session.places[place]
        return {"place": place, "token": token, "tags": dict(p.tags), "holder": p.acquired,
                "waited_s": round(time.monotonic() - t0, 3), "acquired_at": time.time()}

    async def op_check(self, req) -> dict:
        await self.sync()
        p = self.session.places.get(req["place"])
        if p is None:
            return {"held": False, "holder": None, "deleted": True}
        return {"held": p.acquired == self.name, "holder": p.acquired}

    async def _release(self, place: str, fromuser: str | None = None) -> None:
        pb = self._pb()
        kw = {"fromuser": fromuser} if fromuser else {}
        await self.session.stub.ReleasePlace(pb.ReleasePlaceRequest(placename=place, **kw))

    async def _cancel(self, token: str) -> None:
        import grpc
        pb = self._pb()
        self.pending.discard(token)
        try:
            await self.session.stub.CancelReservation(pb.CancelReservationRequest(token=token))
        except grpc.aio.AioRpcError:
            pass  # gone already (expired or cancelled)

    async def op_release(self, req) -> dict:
        # The reservation first: labgrid's scheduler runs at each of these calls, and a place
        # still marked reserved when it is released is offered to the next reservation only
        # at the coordinator's next periodic pass (15 s); cancelled first, the release itself
        # hands the place to the next in the queue.
        place, token = req["place"], req.get("token")
        if token:
            await self._cancel(token)
        released_at = time.time()   # from here on this run no longer counts on the place
        await self._release(place, fromuser=self.name)   # only if we still hold it
        self.held.pop(place, None)
        await self.sync()
        return {"released_at": released_at}

    async def op_release_holder(self, req) -> dict:
        pb = self._pb()
        holder = req["holder"]
        await self.sync()
        released = [n for n, p in self.session.places.items() if p.acquired == holder]
        resp = await self.session.stub.GetReservations(pb.GetReservationsRequest())
        cancelled = [r.token for r in resp.reservations if r.owner == holder]
        for token in cancelled:   # first: see op_release
            await self._cancel(token)
        for name in released:
            await self._release(name, fromuser=holder)
        await self.sync()
        return {"released": released, "cancelled": cancelled}

    async def op_register(self, req) -> dict:
        pb = self._pb()
        place, tags = req["place"], {str(k): str(v) for k, v in req.get("tags", {}).items()}
        await self.sync()
        created = place not in self.session.places
        if created:
            await self.session.stub.AddPlace(pb.AddPlaceRequest(name=place))
            await self.sync()
        old = dict(self.session.places[place].tags)
        update = {**{k: "" for k in old if k not in tags}, **tags}
        await self.session.stub.SetPlaceTags(pb.SetPlaceTagsRequest(placename=place, tags=update))
        await self.sync()
        return {"created": created, "tags": dict(self.session.places[place].tags)}

    async def op_set_tags(self, req) -> dict:
        """Set only the given tags of a place (the others stay)."""
        pb = self._pb()
        tags = {str(k): str(v) for k, v in req.get("tags", {}).items()}
        await self.session.stub.SetPlaceTags(pb.SetPlaceTagsRequest(placename=req["place"],
                                                                    tags=tags))
        await self.sync()
        return {"tags": dict(self.session.places[req["place"]].tags)}

    async def op_acquire(self, req) -> dict:
        pb = self._pb()
        await self.session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=req["place"]))
        self.held[req["place"]] = ""
        await self.sync()
        return {"holder": self.session.places[req["place"]].acquired}

    async def op_kick(self, req) -> dict:
        await self.sync()
        p = self.session.places[req["place"]]
        was, token = p.acquired, p.reservation
        if token:   # as `labgrid-client cancel-reservation`: the place is free for anyone
            await self._cancel(token)
        if was:
            await self._release(req["place"])
        await self.sync()
        return {"was": was, "cancelled": token}

    async def release_all(self) -> None:
        for place, token in list(self.held.items()):
            try:
                if token:
                    await self._cancel(token)
                await self._release(place, fromuser=self.name)
            except Exception:  # noqa: BLE001  (best effort: the next run's cleanup retries)
                pass
        for token in list(self.pending):
            try:
                await self._cancel(token)
            except Exception:  # noqa: BLE001
                pass
        self.held.clear()


def _matches(name: str, tags: dict, flt: dict) -> bool:
    have = {**tags, "name": name}
    return all(have.get(k) == v for k, v in flt.items())


def _fmt(flt: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(flt.items())) or "(any tags)"


def _write(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main_async(args) -> int:
    agent = Agent(args.coordinator, args.connect_timeout)
    try:
        await agent.start()
    except Exception as e:  # noqa: BLE001
        _write({"ok": False, "error": f"{args.coordinator} unreachable: {_err(e)}"})
        return 3
    _write({"ok": True, "ready": True, "name": agent.name})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            try:
                req = json.loads(line)
                fn = getattr(agent, f"op_{req['op']}")
            except (ValueError, KeyError, AttributeError) as e:
                _write({"ok": False, "error": f"bad request {line[:200]!r}: {e}"})
                continue
            try:
                out = await fn(req)
                _write({"ok": True, **out} if "ok" not in out else out)
            except Exception as e:  # noqa: BLE001  (each error goes back to the caller)
                _write({"ok": False, "error": _err(e)})
    finally:
        await agent.release_all()
        try:
            await agent.session.stop()
            await agent.session.close()
        except Exception:  # noqa: BLE001
            pass
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coordinator", required=True, help="HOST:PORT of labgrid-coordinator")
    ap.add_argument("--connect-timeout", type=float, default=10.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # Ctrl-C reaches the whole foreground group: the run releases through its own request
    # (or end of input); the agent must not die before it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
