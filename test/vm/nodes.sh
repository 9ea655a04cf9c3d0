# Sourced by test/vm/guest-init (bash): the soft-RoCE nodes, their daemons and
# the systemd boot of the test VM.
#
# rdma_rxe receives only in the initial network namespace, so the N nodes
# share one: node K is the netdev nK (198.18.0.K/24, 2001:db8::K/64) whose
# veth peer pK sits on the bridge vmbr. Policy routing makes traffic between
# two local addresses really cross the bridge: what comes in on nK is looked up
# in `local`; what leaves from K's address (or is bound to nK) takes table
# 100+K, which routes the subnets and multicast out of nK; the `local` rule
# moves behind them.
#
# With 2 rails (test/vm/run --rails 2) node K has a second netdev nKr1
# (198.19.1.K/24, 2001:db8:0:1::K/64) whose peer pKr1 sits on a second bridge
# vmbr1, with its own device rxeKr1 and the same policy routing through table
# 120+K; both rails' endpoints are one host in each daemon's config.

vm_mac() { printf '02:00:c6:12:00:%02x' "$1"; }
vm_mac1() { printf '02:00:c6:13:00:%02x' "$1"; }

setup_nodes() {
	local n=$1 k j t
	sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv4.conf.all.accept_local=1 net.ipv4.conf.default.accept_local=1 \
		net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 >/dev/null
	ip link add vmbr type bridge mcast_snooping 0 || return 1
	ip link set vmbr up
	for ((k = 1; k <= n; k++)); do
		t=$((100 + k))
		ip link add "n$k" address "$(vm_mac "$k")" type veth peer name "p$k" || return 1
		ip link set "p$k" master vmbr up
		sysctl -qw "net.ipv6.conf.p$k.disable_ipv6=1" >/dev/null
		sysctl -qw "net.ipv4.conf.n$k.rp_filter=0" "net.ipv4.conf.n$k.accept_local=1" >/dev/null
		ip link set "n$k" up
		ip addr add "198.18.0.$k/24" dev "n$k"
		ip -6 addr add "2001:db8::$k/64" dev "n$k" nodad
		for fam in -4 -6; do
			ip "$fam" rule add pref $((10 + k)) iif "n$k" lookup local
			ip "$fam" rule add pref $((100 + k)) oif "n$k" lookup "$t"
		done
		ip -4 rule add pref $((200 + k)) from "198.18.0.$k" lookup "$t"
		ip -6 rule add pref $((200 + k)) from "2001:db8::$k" lookup "$t"
		ip -4 route add 198.18.0.0/24 dev "n$k" src "198.18.0.$k" table "$t"
		ip -4 route add 224.0.0.0/4 dev "n$k" src "198.18.0.$k" table "$t"
		ip -6 route add 2001:db8::/64 dev "n$k" src "2001:db8::$k" table "$t"
		ip -6 route add ff00::/8 dev "n$k" table "$t"
		ip -6 route add fe80::/64 dev "n$k" table "$t"
	done
	ip -4 rule add pref 1000 lookup local && ip -4 rule del pref 0 lookup local
	ip -6 rule add pref 1000 lookup local && ip -6 rule del pref 0 lookup local
	# static neighbours: no ARP or ND between nodes of one host
	for ((k = 1; k <= n; k++)); do
		for ((j = 1; j <= n; j++)); do
			[ "$j" = "$k" ] && continue
			ip -4 neigh replace "198.18.0.$j" lladdr "$(vm_mac "$j")" dev "n$k" nud permanent
			ip -6 neigh replace "2001:db8::$j" lladdr "$(vm_mac "$j")" dev "n$k" nud permanent
		done
	done
	if [ "${VM_RAILS:-1}" = 2 ]; then
		setup_rail1 "$n" || return 1
	fi
	modprobe rdma_rxe || return 1
	for ((k = 1; k <= n; k++)); do
		rdma link add "rxe$k" type rxe netdev "n$k" || return 1
		if [ "${VM_RAILS:-1}" = 2 ]; then
			rdma link add "rxe${k}r1" type rxe netdev "n${k}r1" || return 1
		fi
	done
	# the GID table fills from the addresses asynchronously
	local gid tries
	mkdir -p "$VMDIR"
	printf 'name\tipv4\tipv6\tdevice\tgid\tsocket\n' >"$VMDIR/nodes.tsv"
	for ((k = 1; k <= n; k++)); do
		gid=
		for ((tries = 0; tries < 100; tries++)); do
			gid=$(vm_gid_of "rxe$k" "198.18.0.$k") && break
			sleep 0.1
		done
		[ -n "$gid" ] || { echo "vm: rxe$k has no GID for 198.18.0.$k" >&2; return 1; }
		printf 'node%d\t198.18.0.%d\t2001:db8::%d\trxe%d\t%s\t%s\n' "$k" "$k" "$k" "$k" \
			"$gid" "$(vm_socket_of "$k")" >>"$VMDIR/nodes.tsv"
	done
	[ "${VM_RAILS:-1}" = 2 ] || return 0
	# every rail of every node: $VM_RAILS_TSV
	printf 'name\trail\talias\tipv4\tipv6\tdevice\tnetdev\tpeer\tgid\tsocket\n' \
		>"$VMDIR/rails.tsv"
	local r dev ndev peer v4 v6
	for ((k = 1; k <= n; k++)); do
		for r in 0 1; do
			if [ $r = 0 ]; then
				dev=rxe$k ndev=n$k peer=p$k v4=198.18.0.$k v6=2001:db8::$k
			else
				dev=rxe${k}r1 ndev=n${k}r1 peer=p${k}r1 v4=198.19.1.$k
				v6=2001:db8:0:1::$k
			fi
			gid=
			for ((tries = 0; tries < 100; tries++)); do
				gid=$(vm_gid_of "$dev" "$v4") && break
				sleep 0.1
			done
			[ -n "$gid" ] || { echo "vm: $dev has no GID for $v4" >&2; return 1; }
			printf 'node%d\t%d\tnode%d-ib%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$r" \
				"$k" "$r" "$v4" "$v6" "$dev" "$ndev" "$peer" "$gid" \
				"$(vm_socket_of "$k")" >>"$VMDIR/rails.tsv"
		done
	done
}

# The second rail (--rails 2): netdev nKr1 (198.19.1.K/24, 2001:db8:0:1::K/64)
# with its peer pKr1 on the bridge vmbr1, routed like rail 0 through table
# 120+K (rules 20+K: iif -> local, 120+K: oif, 220+K: from), static neighbours.
setup_rail1() {
	local n=$1 k j t
	ip link add vmbr1 type bridge mcast_snooping 0 || return 1
	ip link set vmbr1 up
	for ((k = 1; k <= n; k++)); do
		t=$((120 + k))
		ip link add "n${k}r1" address "$(vm_mac1 "$k")" type veth peer name "p${k}r1" ||
			return 1
		ip link set "p${k}r1" master vmbr1 up
		sysctl -qw "net.ipv6.conf.p${k}r1.disable_ipv6=1" >/dev/null
		sysctl -qw "net.ipv4.conf.n${k}r1.rp_filter=0" \
			"net.ipv4.conf.n${k}r1.accept_local=1" >/dev/null
		ip link set "n${k}r1" up
		ip addr add "198.19.1.$k/24" dev "n${k}r1"
		ip -6 addr add "2001:db8:0:1::$k/64" dev "n${k}r1" nodad
		for fam in -4 -6; do
			ip "$fam" rule add pref $((20 + k)) iif "n${k}r1" lookup local
			ip "$fam" rule add pref $((120 + k)) oif "n${k}r1" lookup "$t"
		done
		ip -4 rule add pref $((220 + k)) from "198.19.1.$k" lookup "$t"
		ip -6 rule add pref $((220 + k)) from "2001:db8:0:1::$k" lookup "$t"
		ip -4 route add 198.19.1.0/24 dev "n${k}r1" src "198.19.1.$k" table "$t"
		ip -4 route add 224.0.0.0/4 dev "n${k}r1" src "198.19.1.$k" table "$t"
		ip -6 route add 2001:db8:0:1::/64 dev "n${k}r1" src "2001:db8:0:1::$k" table "$t"
		ip -6 route add ff00::/8 dev "n${k}r1" table "$t"
		ip -6 route add fe80::/64 dev "n${k}r1" table "$t"
	done
	for ((k = 1; k <= n; k++)); do
		for ((j = 1; j <= n; j++)); do
			[ "$j" = "$k" ] && continue
			ip -4 neigh replace "198.19.1.$j" lladdr "$(vm_mac1 "$j")" dev "n${k}r1" \
				nud permanent
			ip -6 neigh replace "2001:db8:0:1::$j" lladdr "$(vm_mac1 "$j")" \
				dev "n${k}r1" nud permanent
		done
	done
}

# Node @1's ibresd.conf on standard output: `ibresctl config generate
# --device rxeK --name nodeK`; with 2 rails, rxeKr1's endpoint appended, both
# under the host name nodeK, with the aliases nodeK-ib0 and nodeK-ib1.
vm_config() {
	local k=$1 ctl=$2 r0 r1
	if [ "${VM_RAILS:-1}" != 2 ]; then
		"$ctl" config generate --device "rxe$k" --name "node$k"
		return
	fi
	r0=$("$ctl" config generate --device "rxe$k" --name "node$k") || return 1
	r1=$("$ctl" config generate --device "rxe${k}r1" --name "node$k") || return 1
	printf '%s\n' "$r0" | sed -e "/^name = node$k\$/a name = node$k-ib0"
	echo
	printf '%s\n' "$r1" | sed -n -e '/^\[endpoint /,$p' |
		sed -e "/^name = node$k\$/a name = node$k-ib1"
}

# Whether @1's port 1 GID table holds ::ffff:@2 (an IPv4-mapped GID); print it.
vm_gid_of() {
	local want f g a b c d
	IFS=. read -r a b c d <<<"$2"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		g=$(cat "$f" 2>/dev/null) || continue
		[ "$g" = "$want" ] && { echo "::ffff:$2"; return 0; }
	done
	return 1
}

vm_socket_of() {
	if [ "$VM_SYSTEMD" = 1 ] && [ "$1" = 1 ]; then
		printf '/run/ibres/ibresd.sock'
	elif [ "$VM_DAEMONS" = 1 ]; then
		printf '/run/ibres/node%d.sock' "$1"
	fi
	return 0
}

# --daemons: one ibresd per node (from $VM_BUILD, default the checkout's
# build/), its config from `ibresctl config generate --device rxeK --name
# nodeK` (vm_config: with 2 rails, both devices' endpoints) with its own socket /run/ibres/nodeK.sock (which
# speaks ibacm's protocol too); node1's also serves ibacm's socket
# /run/ibacm.sock for librdmacm, and is the daemon the NSS module asks
# (/run/ibres/ibresd.sock, which passes its host directory), with `ib`
# on the hosts line of nsswitch.conf.
# Configs and logs: /run/nss-ib-vm/nodeK.conf, nodeK.log.
start_daemons() {
	local n=$1 first=$2 k conf build=${VM_BUILD:-$VM_CHECKOUT/build} tries
	for f in ibresd ibresctl libnss_ib.so.2; do
		[ -e "$build/$f" ] || { echo "vm: --daemons: no $build/$f (run make)" >&2; return 1; }
	done
	mkdir -p /run/ibres
	for ((k = first; k <= n; k++)); do
		conf=$VMDIR/node$k.conf
		vm_config "$k" "$build/ibresctl" >"$conf.gen" || return 1
		# each daemon passes its own host directory over its own socket
		sed -e "s|^socket = .*|socket = /run/ibres/node$k.sock|" "$conf.gen" >"$conf"
		[ "$k" = 1 ] && sed -i -e '/^socket = /a acm_socket = /run/ibacm.sock' "$conf"
		rm -f "$conf.gen"
		"$build/ibresd" --foreground --config "$conf" >"$VMDIR/node$k.log" 2>&1 &
		echo $! >"$VMDIR/node$k.pid"
	done
	for ((k = first; k <= n; k++)); do
		for ((tries = 0; tries < 200; tries++)); do
			[ -S "/run/ibres/node$k.sock" ] && break
			sleep 0.05
		done
		[ -S "/run/ibres/node$k.sock" ] || {
			echo "vm: node$k's ibresd did not start:" >&2
			cat "$VMDIR/node$k.log" >&2
			return 1
		}
	done
	[ "$first" = 1 ] || return 0 # node1's is systemd's: setup_systemd installs
	ln -sf node1.sock /run/ibres/ibresd.sock
	cp "$build/libnss_ib.so.2" "/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/"
	python3 "$VM_CHECKOUT/tools/ibres-nsswitch" enable --quiet
}

stop_daemons() {
	local f pid
	for f in "$VMDIR"/node*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		kill -TERM "$pid" 2>/dev/null
	done
	for f in "$VMDIR"/node*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null
		rm -f "$f"
	done
}
# --systemd: nss-ib installed into the overlay, by make install or (--debs)
# by dpkg from the Debian packages, node1's ibresd the system's daemon: its
# config /etc/ibres/ibresd.conf from `ibresctl config generate --device rxe1
# --name node1`, serving ibacm's socket too (ibresd-acm.socket); rdma-core's
# ibacm masked; `ib` in nsswitch.conf (ibres-nsswitch, as libnss-ib's
# postinst tells the administrator). make install enables nothing: the
# harness enables ibresd.socket and ibresd-acm.socket. The packages' own
# scripts enable ibresd.service with its sockets (dh_installsystemd; no start
# while systemd is not running, as in an image build); ibresd-acm.socket,
# which takes ibacm's paths, is the administrator's choice: enabled here.
# systemd then boots nss-ib-vm.target: basic.target and one service running
# COMMAND, which powers the guest off when COMMAND ends.
setup_systemd() {
	local units=/etc/systemd/system ctl=$VM_CHECKOUT/build/ibresctl
	local nsswitch=(python3 "$VM_CHECKOUT/tools/ibres-nsswitch")
	if [ "$VM_DEBS" = 1 ]; then
		# man-db's trigger would index every manual page, for minutes
		# under TCG: off, as image builds do
		rm -f /var/lib/man-db/auto-update
		dpkg -i "$HOST"/debs/*.deb >"$VMDIR/install.log" 2>&1 ||
			{ cat "$VMDIR/install.log" >&2; return 1; }
		ctl=/usr/bin/ibresctl nsswitch=(/usr/sbin/ibres-nsswitch)
		systemctl --quiet enable ibresd-acm.socket || return 1
	else
		make -C "$VM_CHECKOUT" -o all --no-print-directory install DESTDIR=/ PREFIX=/usr \
			>"$VMDIR/install.log" 2>&1 || { cat "$VMDIR/install.log" >&2; return 1; }
		systemctl --quiet enable ibresd.socket ibresd-acm.socket || return 1
	fi
	vm_config 1 "$ctl" |
		sed -e '/^socket = /a acm_socket = /run/ibacm-unix.sock' >/etc/ibres/ibresd.conf ||
		return 1
	systemctl --quiet mask ibacm.socket ibacm.service || return 1
	# a quiet node: time daemons (NTP server names) and this machine's
	# enabled timers (apt, ...) look host names up in the background, through
	# nss-ib once it is in nsswitch.conf, and any such lookup starts a stopped
	# ibresd again through ibresd.socket, under the tests that stop it
	local quiet=(systemd-timesyncd.service chrony.service ntpsec.service) t
	for t in /etc/systemd/system/timers.target.wants/*.timer; do
		[ -e "$t" ] && quiet+=("${t##*/}")
	done
	systemctl --quiet mask "${quiet[@]}" || return 1
	"${nsswitch[@]}" enable --quiet || return 1
	{
		echo "#!/bin/bash"
		declare -p VM_NODES VM_CWD VM_TIMEOUT VM_COMMAND VM_TERM VM_DEBS
		echo 'export VM_NODES VM_DEBS TERM=$VM_TERM PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
		echo 'cd "$VM_CWD" || exit 125'
		echo 'timeout -k 5 "$VM_TIMEOUT" "${VM_COMMAND[@]}" </dev/null >/dev/ttyS1 2>/dev/ttyS0'
		echo 'echo $? >/run/nss-ib-vm/host/status'
		echo 'sync'
		echo 'systemctl poweroff --no-block'
	} >"$VMDIR/command"
	chmod 0755 "$VMDIR/command"
	cat >"$units/nss-ib-vm.service" <<-EOF
		[Unit]
		Description=test/vm/run's command
		Requires=basic.target
		After=basic.target sockets.target
		[Service]
		Type=oneshot
		ExecStart=$VMDIR/command
		TimeoutStartSec=infinity
	EOF
	cat >"$units/nss-ib-vm.target" <<-EOF
		[Unit]
		Description=test/vm/run's boot target
		Requires=basic.target nss-ib-vm.service
		After=basic.target
		AllowIsolate=yes
	EOF
}
