#!/usr/bin/env bash
# The drill topology itself: every rail carries traffic between a and b;
# unplugging a's cable breaks that rail only, and b's port stays up (the
# far side sees nothing locally); plugging back restores it; the namespaces
# are gone afterwards.  Needs root and iproute2; skips (77) otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: network namespaces need root (run as root, as CI does)"
	exit 77
fi
p=ryt$$
trap 'bash "$here/topo.sh" down $p' EXIT
bash "$here/topo.sh" up $p 4 100mbit

ping1() { ip netns exec "$p-a" ping -c1 -W1 -q "$1" >/dev/null 2>&1; }
for i in 0 1 2 3; do
	ping1 198.18.$((i + 1)).2 || { echo "FAIL: rail r$i does not carry traffic"; exit 1; }
done
ping1 198.18.0.2 || { echo "FAIL: management link down"; exit 1; }

bash "$here/topo.sh" unplug $p a 1
if ping1 198.18.2.2; then echo "FAIL: r1 still carries traffic after unplug"; exit 1; fi
ping1 198.18.1.2 || { echo "FAIL: unplugging r1 broke r0"; exit 1; }
state=$(ip -n "$p-b" -o link show r1 | grep -o 'state [A-Z]*')
[[ $state == "state UP" ]] || { echo "FAIL: b's r1 is '$state': the unplug is not silent"; exit 1; }

bash "$here/topo.sh" plug $p a 1
for _ in $(seq 20); do ping1 198.18.2.2 && break; sleep 0.1; done
ping1 198.18.2.2 || { echo "FAIL: r1 did not come back"; exit 1; }

tc -n "$p-a" qdisc show dev r0 | grep -q tbf || { echo "FAIL: r0 not shaped"; exit 1; }

bash "$here/topo.sh" down $p
trap - EXIT
if ip netns list | grep -q "^$p-"; then echo "FAIL: namespaces left behind"; exit 1; fi
echo "topology: 4 rails up, unplug silent for the far side, plug restores, cleaned up"
