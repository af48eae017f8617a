#!/bin/sh
# /init of the tiny ofbench guest (built into the initramfs by build_guest.sh).
#
# Everything comes from the kernel command line (written by drivers/vmwire/guest.py):
#   ofb.ip=10.0.0.1/24     address of the first NIC (eth0), required
#   ofb.vlan=N             put the address on eth0.N (802.1Q tag N) instead of eth0
#   ofb.role=ROLE          idle | ping | iperf3-server | iperf3-client   (default idle)
#   ofb.peer=10.0.0.2      the other guest (ping, iperf3-client)
#   ofb.count=10           pings to send (ping)
#   ofb.seconds=10         iperf3 test length (iperf3-client)
#   ofb.wait=60            seconds to wait for the peer to answer a ping before giving up
# Lines for the host, on the serial console (parsed by drivers/vmwire/guest.py):
#   OFB-READY ip=<ip> if=<ifname> mac=<mac>
#   OFB-PING tx=<n> rx=<n>
#   OFB-IPERF-BEGIN / <iperf3 -J output> / OFB-IPERF-END
#   OFB-ERROR <text>
#   OFB-STATS rx_packets=<n> tx_packets=<n> rx_bytes=<n> tx_bytes=<n>   (eth0, before DONE)
#   OFB-DONE rc=<n>        then the guest powers off (client roles); idle/server roles stay up
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /tmp && mount -t devpts devpts /dev/pts

arg() { # arg NAME DEFAULT: value of ofb.NAME= on the kernel command line
  v=$(tr ' ' '\n' < /proc/cmdline | sed -n "s/^ofb\.$1=//p" | tail -1)
  [ -n "$v" ] && echo "$v" || echo "$2"
}
stats() { # counters of eth0 (all traffic through the switch, both directions)
  d=/sys/class/net/eth0/statistics
  [ -d $d ] && echo "OFB-STATS rx_packets=$(cat $d/rx_packets) tx_packets=$(cat $d/tx_packets) rx_bytes=$(cat $d/rx_bytes) tx_bytes=$(cat $d/tx_bytes)"
}
done_() { stats; echo "OFB-DONE rc=$1"; sync; poweroff -f; sleep 5; }

for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko 2>/dev/null; done

IP=$(arg ip ""); VLAN=$(arg vlan ""); ROLE=$(arg role idle); PEER=$(arg peer "")
COUNT=$(arg count 10); SECONDS_=$(arg seconds 10); WAIT=$(arg wait 60)
ip link set lo up
i=0; while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
[ -e /sys/class/net/eth0 ] || { echo "OFB-ERROR no eth0"; done_ 2; }
ip link set eth0 up
IF=eth0
if [ -n "$VLAN" ]; then
  ip link add link eth0 name eth0.$VLAN type vlan id $VLAN && IF=eth0.$VLAN && ip link set $IF up
fi
[ -n "$IP" ] && ip addr add "$IP" dev $IF
echo "OFB-READY ip=$IP if=$IF mac=$(cat /sys/class/net/eth0/address)"

wait_peer() { # until the peer answers one ping, at most WAIT seconds
  t=0
  while [ $t -lt "$WAIT" ]; do
    ping -c 1 -W 1 "$PEER" >/dev/null 2>&1 && return 0
    t=$((t+1))
  done
  echo "OFB-ERROR peer $PEER did not answer within ${WAIT}s"
  return 1
}

case "$ROLE" in
  idle) ;;
  iperf3-server) iperf3 -s -D >/dev/null 2>&1 ;;
  ping)
    wait_peer || done_ 1
    out=$(ping -c "$COUNT" -i 0.2 -W 2 "$PEER" 2>&1)
    tx=$(echo "$out" | sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p')
    rx=$(echo "$out" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
    echo "OFB-PING tx=${tx:-0} rx=${rx:-0}"
    done_ 0 ;;
  iperf3-client)
    wait_peer || done_ 1
    t=0; rc=1
    while [ $t -lt 20 ]; do  # the server may still be starting
      iperf3 -c "$PEER" -t "$SECONDS_" -J > /tmp/iperf.json 2>&1 && { rc=0; break; }
      grep -q 'unable to connect\|Connection refused' /tmp/iperf.json || break
      sleep 1; t=$((t+1))
    done
    echo "OFB-IPERF-BEGIN"; cat /tmp/iperf.json; echo "OFB-IPERF-END"
    done_ $rc ;;
  *) echo "OFB-ERROR unknown role $ROLE"; done_ 2 ;;
esac
# idle and server roles: stay up until QEMU is stopped.
while true; do sleep 3600; done
