"""OpenFlow 1.3 for ofbench's Python: the one place it is written and read by hand (issue 43).

    wire.py     constants, message encoders, the few decoders (framing, port stats, Packet-In)
    session.py  the blocking controller-side session (``Session`` with a reader thread,
                ``SyncSession`` without one), on a socket the switch connected to, and
                ``listen()``, the socket switches connect to
    tests/      their tests (os-ken's serialiser and parser as the reference)

It imports nothing of ofbench and no third-party package, so it sits at the bottom of the
layers beside ``configschema``: the os-ken apps in dut/controller (raw Packet-Out/-In on the
hot path), the switch's tests, drivers and suites all import it and every arrow points down.
``import openflow as w`` gives the wire names and the sessions in one namespace (what
``dut/switch/tests/ofwire.py`` was: ``w.flow_mod``, ``w.Session``, ...).
"""
from openflow.session import Session, SyncSession, close_connection, listen  # noqa: F401
from openflow.wire import *  # noqa: F401,F403
from openflow.wire import PacketInError  # noqa: F401
