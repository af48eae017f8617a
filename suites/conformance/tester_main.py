"""Start os-ken's switch test tool (os_ken/tests/switch/tester.py) through the controller
launcher: ``python -m suites.conformance.tester_main <launcher args> -- <tester options>``.

Why a wrapper: the tool reads ``CONF.log_file``, an option that only exists once ``os_ken.log``
registered its CLI options (os-ken's removed ``osken-manager`` did that); and the tool's SCTP
checksum bug and its drifting throughput sender are fixed first (see tool_patch.py; env
``OFBENCH_TOOL_SENDER=tool`` keeps the tool's own sender, for A/B measurements only). The hub
must be chosen before the first os_ken import, so the environment is set first. Only ever run as __main__ (it sets the hub).
"""
import os
import sys

if __name__ == "__main__":
    os.environ["OSKEN_HUB_TYPE"] = "eventlet"  # the tool hangs on the native-thread hub

    import os_ken.flags  # noqa: F401  (registers --test-switch-*)
    import os_ken.log  # noqa: F401   (registers --log-file etc., read by the tester)

    from dut.controller import launcher
    from suites.conformance.tool_patch import patch_tool

    patch_tool(paced_sender=os.environ.get("OFBENCH_TOOL_SENDER", "paced") != "tool")
    sys.exit(launcher.main())
