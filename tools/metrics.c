// SPDX-License-Identifier: MIT
/*
 * The daemon's STATS answer carries (name, u64) pairs; what each one is — a
 * counter that only grows or a gauge that goes both ways, its unit and its
 * meaning — is written here once, for the Prometheus output. An integration
 * test (test_metrics.py) fails when the daemon reports a name this table does
 * not describe.
 */
#include <ctype.h>
#include <string.h>

#include "metrics.h"

#define C METRIC_COUNTER
#define G METRIC_GAUGE

static const struct metric_desc metrics[] = {
	/* ibacm's seven global counters, under the names ib_acme -P uses */
	{ "error", C, "acm_errors", "ibacm-protocol requests answered with an error" },
	{ "resolve", C, "acm_resolves", "ibacm RESOLVE requests" },
	{ "nodata", C, "acm_nodata", "ibacm requests answered with no data (unknown destination)" },
	{ "addr_query", C, "acm_addr_queries", "address resolutions sent to the fabric" },
	{ "addr_cache", C, "acm_addr_cache_hits", "address resolutions answered from the cache" },
	{ "route_query", C, "acm_route_queries", "route resolutions that needed a query" },
	{ "route_cache", C, "acm_route_cache_hits", "route resolutions answered from the cache" },
	/* the daemon and its clients */
	{ "uptime_s", G, "uptime_seconds", "seconds since the daemon started" },
	{ "clients_connected", G, "clients_connected", "client connections open now" },
	{ "clients_accepted", C, "clients_accepted", "client connections accepted" },
	{ "clients_rejected", C, "clients_rejected", "client connections refused over max_clients" },
	{ "clients_quota_rejected", C, "clients_quota_rejected",
	  "client connections refused over max_clients_per_uid (none of that user's could go)" },
	{ "clients_evicted", C, "clients_evicted",
	  "client connections closed to make room for a new one" },
	{ "clients_timed_out", C, "clients_timed_out",
	  "client connections closed for an incomplete request or none within client_timeout" },
	{ "clients_output_timed_out", C, "clients_output_timed_out",
	  "client connections closed for leaving an answer unread for client_timeout" },
	{ "requests", C, "requests", "client requests received" },
	{ "bad_requests", C, "bad_requests", "malformed client requests" },
	{ "admin_denied", C, "admin_denied", "state-changing requests refused to a non-root user" },
	{ "host_lookups", C, "host_lookups", "host lookups (NSS and ibresctl)" },
	{ "host_notfound", C, "host_notfound", "host lookups answered not found" },
	{ "pending_timeouts", C, "pending_timeouts", "lookups that ended on their time bound" },
	/* the host store */
	{ "cache_entries", G, "cache_entries", "cache entries: host keys, negative answers, queries" },
	{ "cache_hosts", G, "cache_hosts", "hosts in the cache" },
	{ "cache_learned_hosts", G, "cache_learned_hosts", "hosts in the cache learned from the fabric" },
	{ "cache_negatives", G, "cache_negatives", "negative answers in the cache" },
	{ "cache_bytes", G, "cache_size_bytes", "memory held by the host store" },
	{ "cache_hits", C, "cache_hits", "lookups answered from the cache" },
	{ "cache_misses", C, "cache_misses", "lookups the cache could not answer" },
	{ "cache_inserts", C, "cache_inserts", "host records inserted into the cache" },
	{ "cache_evictions", C, "cache_evictions", "cache entries evicted for room" },
	{ "cache_expirations", C, "cache_expirations", "cache entries dropped at the end of their TTL" },
	/* the shared host directory (host_directory) */
	{ "directory_bytes", G, "directory_size_bytes",
	  "size of the shared host directory published now (0: none)" },
	{ "directory_hosts", G, "directory_hosts", "hosts in the shared host directory" },
	{ "directory_rebuilds", C, "directory_rebuilds",
	  "shared host directory generations written" },
	{ "directory_failures", C, "directory_failures",
	  "shared host directory generations that could not be made" },
	{ "directory_unread_refused", C, "directory_unread_refused",
	  "directory descriptors not passed: the user left too many unread" },
	/* the fabric protocol */
	{ "fabric_tx_mcast", C, "fabric_tx_multicast_messages", "fabric messages sent multicast" },
	{ "fabric_tx_ucast", C, "fabric_tx_unicast_messages", "fabric messages sent unicast" },
	{ "fabric_tx_errors", C, "fabric_tx_errors", "fabric messages that failed to send" },
	{ "fabric_rx", C, "fabric_rx_messages", "fabric messages received" },
	{ "fabric_rx_self", C, "fabric_rx_self_messages", "own fabric messages received back" },
	{ "fabric_rx_malformed", C, "fabric_rx_malformed_messages", "malformed fabric messages" },
	{ "fabric_rx_bad_version", C, "fabric_rx_bad_version_messages",
	  "fabric messages of an unknown protocol version" },
	{ "fabric_rx_auth_failed", C, "fabric_rx_auth_failed_messages",
	  "fabric messages that failed the cluster key check" },
	{ "fabric_rx_auth_second_key", C, "fabric_rx_auth_second_key_messages",
	  "fabric messages that passed with the second cluster key (a key change)" },
	{ "fabric_rx_stale", C, "fabric_rx_stale_messages",
	  "authenticated fabric messages stamped outside the freshness window" },
	{ "fabric_rx_replayed", C, "fabric_rx_replayed_messages",
	  "authenticated fabric messages older than the sender's latest (replays)" },
	{ "fabric_rx_duplicate", C, "fabric_rx_duplicate_messages",
	  "authenticated fabric messages received twice" },
	{ "fabric_rx_unsolicited", C, "fabric_rx_unsolicited_messages",
	  "fabric replies that matched no outstanding request" },
	{ "fabric_rx_mismatch", C, "fabric_rx_mismatch_messages",
	  "fabric replies that did not answer what was asked, and senders of another "
	  "partition" },
	{ "fabric_rx_conflict", C, "fabric_rx_conflict_messages",
	  "fabric messages claiming a key another host owns" },
	{ "fabric_overheard", C, "fabric_overheard_hosts", "hosts learned by overhearing" },
	{ "fabric_requests_sent", C, "fabric_requests_sent", "fabric REQUEST messages sent" },
	{ "fabric_newcomer_repeats", C, "fabric_newcomer_repeats",
	  "NEWCOMER announces sent again in a burst because a peer asked had not heard of this node" },
	{ "fabric_requests_unicast", C, "fabric_requests_unicast",
	  "of them, sent to the one host a peer's hint named" },
	{ "fabric_replies_sent", C, "fabric_replies_sent", "fabric REPLY messages sent" },
	{ "fabric_announces_sent", C, "fabric_announces_sent", "fabric ANNOUNCE messages sent" },
	{ "fabric_goodbyes_rx", C, "fabric_goodbyes_received", "fabric GOODBYE messages received" },
	{ "fabric_rail_downs_sent", C, "fabric_rail_downs_sent",
	  "RAIL_DOWN messages sent for a local rail that went down, repeats included" },
	/* the ib transport's receive queues (recv_depth) */
	{ "fabric_rx_queue_empty", C, "fabric_rx_queue_empty",
	  "times an ib endpoint's receive queue was found empty: datagrams arriving then were "
	  "dropped (the daemon's own count)" },
	{ "fabric_rx_hca_out_of_buffer", C, "fabric_rx_hca_out_of_buffer",
	  "datagrams the HCA ports dropped for want of a receive buffer since the daemon started "
	  "(the port's out_of_buffer counter, every QP on it; 0 where the device has none)" },
	{ "fabric_rx_queue_slots", G, "fabric_rx_queue_slots",
	  "receive buffers of the ib endpoints' UD QPs (recv_depth within the device's limits)" },
	/* the ip transport's sockets */
	{ "fabric_rx_socket_drops", C, "fabric_rx_socket_drops",
	  "datagrams the kernel dropped at the ip endpoints' sockets since the daemon started "
	  "(receive buffer full; SO_RXQ_OVFL)" },
	/* is the directory complete (doc/fabric-protocol.md)? */
	{ "directory_complete", G, "directory_complete",
	  "1 while a name the directory lacks is answered not found at once (settled, the peers' "
	  "digests agree, no loss seen since), else 0" },
	{ "fabric_digest_mismatches", C, "fabric_digest_mismatches",
	  "peers' directory digests that showed hosts this node lacks" },
	{ "fabric_rx_drops_detected", C, "fabric_rx_drops_detected",
	  "losses seen (receive-queue overruns, announce-number gaps) that made the directory "
	  "incomplete" },
	{ "fabric_rx_gaps", C, "fabric_rx_gaps",
	  "announces of a peer found missed (its announce numbers jumped)" },
	{ "fabric_bursts_unvouched", C, "fabric_bursts_unvouched",
	  "start-ups (or resyncs) that ended with nothing against the directory but no peer "
	  "vouching for it: peers were asked before it counted complete" },
	{ "fabric_incomplete_queries", C, "fabric_incomplete_queries",
	  "misses of cluster names asked on the fabric, after the settle time, because the "
	  "directory was incomplete" },
	/* fetching what a peer holds (doc/fabric-protocol.md) */
	{ "fabric_fetch_sessions", C, "fabric_fetch_sessions",
	  "range-query sessions started with a peer while the directory was incomplete" },
	{ "fabric_fetch_queries", C, "fabric_fetch_queries",
	  "range queries sent (attempts included)" },
	{ "fabric_fetch_answers", C, "fabric_fetch_answers", "range answers taken" },
	{ "fabric_fetch_busy", C, "fabric_fetch_busy",
	  "range answers of peers over their rate limit: their digest alone" },
	{ "fabric_fetch_timeouts", C, "fabric_fetch_timeouts",
	  "fetch sessions given up because the peer did not answer" },
	{ "fabric_fetch_losses", C, "fabric_fetch_losses",
	  "range queries answered on a later try, or left unanswered by a peer that answers them" },
	{ "fabric_hints_unanswered", C, "fabric_hints_unanswered",
	  "hints' queries that the host named left unanswered (a host that said goodbye aside)" },
	{ "fabric_departed_explained", C, "fabric_departed_explained",
	  "peers' digests that held more only of hosts this node heard say goodbye" },
	{ "fabric_departed_confirmed", C, "fabric_departed_confirmed",
	  "queries to hosts that said goodbye, named by a peer, left unanswered" },
	{ "fabric_departed_shortened", C, "fabric_departed_shortened",
	  "endpoints not heard for two rounds while peers agreed on fewer hosts (missed "
	  "goodbyes), kept only until their next announce" },
	{ "fabric_gone_sent", C, "fabric_gone_sent",
	  "names of hosts heard saying goodbye put in this node's announces" },
	{ "fabric_gone_heard", C, "fabric_gone_heard",
	  "names of hosts that said goodbye heard in peers' announces" },
	{ "fabric_gone_shortened", C, "fabric_gone_shortened",
	  "endpoints a peer named as gone, kept only until their next announce" },
	{ "fabric_fetch_hints", C, "fabric_fetch_hints",
	  "names a peer held and this node lacked, asked on the fabric" },
	{ "fabric_range_answered", C, "fabric_range_answered", "peers' range queries answered" },
	{ "fabric_range_refused", C, "fabric_range_refused",
	  "peers' range queries not answered in full: over the rate limit" },
	{ "fabric_range_busy", C, "fabric_range_busy",
	  "peers' range queries answered with the digest alone: over the rate limit" },
	{ "fabric_range_index_builds", C, "fabric_range_index_builds",
	  "sorted copies of the directory's digest terms made to answer and compare range queries" },
	{ "fabric_query_retries", C, "fabric_query_retries", "fabric queries sent again" },
	{ "fabric_query_timeouts", C, "fabric_query_timeouts", "fabric queries that got no answer" },
	{ "fabric_queries_joined", C, "fabric_queries_joined",
	  "lookups that joined a fabric query already in flight" },
	{ "fabric_queries_outstanding", G, "fabric_queries_outstanding", "fabric queries in flight" },
	/* the SA client, umad, ports, multicast groups */
	{ "sa_queries", C, "sa_queries", "queries sent to the Subnet Administrator" },
	{ "sa_path_queries", C, "sa_path_queries", "PathRecord queries sent to the SA" },
	{ "sa_queries_joined", C, "sa_queries_joined", "lookups that joined an SA query in flight" },
	{ "sa_queries_outstanding", G, "sa_queries_outstanding", "SA queries in flight" },
	{ "sa_queries_queued", G, "sa_queries_queued", "SA queries waiting for the query window" },
	{ "sa_queries_rejected", C, "sa_queries_rejected", "SA queries refused with the queue full" },
	{ "sa_retries", C, "sa_retries", "SA queries sent again" },
	{ "sa_timeouts", C, "sa_timeouts", "SA queries that got no answer" },
	{ "sa_errors", C, "sa_errors", "SA answers with an error status" },
	{ "sa_rx", C, "sa_rx_mads", "MADs received from the SA" },
	{ "sa_rx_malformed", C, "sa_rx_malformed_mads", "malformed MADs from the SA" },
	{ "sa_rx_unsolicited", C, "sa_rx_unsolicited_mads", "SA answers matching no query" },
	{ "sa_rx_mismatch", C, "sa_rx_mismatch_mads", "SA answers not matching their query" },
	{ "sa_rx_kernel_timeouts", C, "sa_rx_kernel_timeouts",
	  "SA queries the kernel's umad layer timed out" },
	{ "sa_tx_errors", C, "sa_tx_errors", "MADs that failed to send" },
	{ "sa_routes_dropped", C, "sa_routes_dropped", "cached SA routes dropped (port or SM change)" },
	{ "sa_hosts_dropped", C, "sa_hosts_dropped", "hosts dropped after an SA answer" },
	{ "umad_rx_dropped", C, "umad_rx_dropped_mads", "MADs dropped by the umad reader" },
	{ "umad_rx_errors", C, "umad_rx_errors", "umad receive errors" },
	{ "port_polls", C, "port_polls", "IB port state polls" },
	{ "port_events", C, "port_events", "IB port state changes seen" },
	{ "mcast_groups_joined", G, "mcast_groups_joined", "multicast groups joined now" },
	{ "mcast_joins", C, "mcast_joins", "multicast group joins" },
	{ "mcast_join_failures", C, "mcast_join_failures", "multicast group joins that failed" },
	{ "mcast_leaves", C, "mcast_leaves", "multicast groups left" },
	/* the kernel's path queries (NETLINK_RDMA local service, os/kpath) */
	{ "kpath_requests", C, "kernel_path_requests", "path queries received from the kernel" },
	{ "kpath_answered", C, "kernel_path_answered", "kernel path queries answered with records" },
	{ "kpath_refused", C, "kernel_path_refused",
	  "kernel path queries answered with RDMA_NL_LS_F_ERR (the kernel asks the SA)" },
	{ "kpath_malformed", C, "kernel_path_malformed", "malformed netlink messages from the kernel" },
	{ "kpath_ip_requests", C, "kernel_ip_requests", "IP_RESOLVE queries from the kernel" },
	{ "kpath_tx_errors", C, "kernel_path_tx_errors", "netlink replies that failed to send" },
	{ "kpath_outstanding", G, "kernel_path_outstanding", "kernel path queries in flight" },
};

#undef C
#undef G

const struct metric_desc *metric_find(const char *stat)
{
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		if (!strcmp(metrics[i].stat, stat))
			return &metrics[i];
	return NULL;
}

/* [a-zA-Z0-9_] only: an unknown name from the daemon becomes a valid metric name. */
static void sanitized(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(isalnum((unsigned char)*s) ? *s : '_', f);
}

void metric_write_prom(FILE *f, const char *stat, uint64_t value)
{
	const struct metric_desc *m = metric_find(stat);
	const char *suffix = m && m->kind == METRIC_COUNTER ? "_total" : "";

	if (!m) {
		fputs("# HELP ibresd_", f);
		sanitized(f, stat);
		fputs(" ibresd statistic not described by this ibresctl\n# TYPE ibresd_", f);
		sanitized(f, stat);
		fputs(" untyped\nibresd_", f);
		sanitized(f, stat);
		fprintf(f, " %llu\n", (unsigned long long)value);
		return;
	}
	fprintf(f, "# HELP ibresd_%s%s %s.\n", m->prom, suffix, m->help);
	fprintf(f, "# TYPE ibresd_%s%s %s\n", m->prom, suffix,
		m->kind == METRIC_COUNTER ? "counter" : "gauge");
	fprintf(f, "ibresd_%s%s %llu\n", m->prom, suffix, (unsigned long long)value);
}
