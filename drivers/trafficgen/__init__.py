"""The one traffic generator interface of ofbench (softgen and TRex implement it).

model.py     ports, streams, field variation, validation (errors before any traffic is sent)
frames.py    packet templates (scapy), frame sizes, IMIX, pcap loading
counters.py  per-port / per-stream counters, the rx > tx guard, loss against packets sent
latency.py   log-linear histogram <-> percentiles (mirrors drivers/softgen/softgen.h)
base.py      TrafficGenerator (abstract) and the measure() adapter the NDR search uses
ndr.py       NDR/PDR binary search against measure(duration_s, rate_pps) -> Counters
targets.py   checks metrics against a profile's targets and says by how much they miss
"""
