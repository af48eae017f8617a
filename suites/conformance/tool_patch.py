"""Fix of a Python-3 porting bug in os-ken 4.2.2's switch test tool, applied by tester_main.

``os_ken.lib.packet.sctp.sctp._checksum`` iterates over ``str(data)``: on Python 3 that is the
repr text "bytearray(b'...')", not the bytes (a Python 2 leftover), so every SCTP packet the tool
builds carries a wrong CRC32c and no correct switch can match a rewritten one (16 set-field
cases). We hand the original function a bytes object whose str() is the bytes themselves: the
result is the standard CRC32c (RFC 3309), as the tool computed under Python 2 / Ryu. It applies
to every target alike (ofbench and OVS).
"""
from __future__ import annotations


class _Latin1(bytes):
    def __str__(self):
        return self.decode("latin-1")


def sctp_checksum_fixed(self, data) -> int:
    from os_ken.lib.packet import sctp as _sctp
    orig = getattr(_sctp.sctp, "_ofbench_orig_checksum", _sctp.sctp._checksum)
    return orig(self, _Latin1(bytes(data)))


def patch_tool() -> None:
    from os_ken.lib.packet import sctp as _sctp
    if not hasattr(_sctp.sctp, "_ofbench_orig_checksum"):
        _sctp.sctp._ofbench_orig_checksum = _sctp.sctp._checksum
        _sctp.sctp._checksum = sctp_checksum_fixed
