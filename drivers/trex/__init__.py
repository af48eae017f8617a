"""TRex STL driver: the generator interface on a real TRex server.

translate.py   ResolvedStream -> plain JSON stream specs (main process, no TRex import)
client_proc.py the TRex client in its own process (python -m drivers.trex.client_proc): specs ->
               STLStream/STLPktBuilder/STLFlowLatencyStats, JSON lines over stdin/stdout,
               plus FakeTrexServerDouble, a test double of the server side of STLClient
driver.py      Trex(TrafficGenerator): spawns client_proc, maps TRex stats to Counters
"""
