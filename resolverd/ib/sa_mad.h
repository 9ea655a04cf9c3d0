/* SPDX-License-Identifier: MIT */
/*
 * InfiniBand management datagrams the daemon sends and receives through
 * libibumad: SA PathRecord GET, MCMemberRecord SET/DELETE, and directed-route
 * SubnGet(PortInfo / P_KeyTable / NodeInfo) to the local port. Pure encode
 * and decode on 256-byte buffers, all fields big-endian on the wire; every
 * received byte is checked here before the daemon looks at it.
 *
 * Transaction ids: the kernel (and umad2sim) overwrite the upper 32 bits of
 * a request's TID with the agent's id, so only the lower 32 bits are ours
 * and responses are matched on those (sa_tid_low()).
 */
#ifndef IBRESD_SA_MAD_H
#define IBRESD_SA_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibres_proto.h"

#define MAD_LEN		    256 /* every MAD buffer; RMPP is not used */
#define MAD_HDR_LEN	    24	/* common header */
#define SA_HDR_LEN	    56	/* common + RMPP + SA headers: where an SA record starts */
#define SMP_DATA_OFF	    64	/* directed-route SMP: where the attribute starts */
#define SMP_DATA_LEN	    64
#define SA_PATH_REC_LEN	    64
#define SA_MCMEMBER_REC_LEN 52

enum {
	MAD_CLASS_SA = 0x03,
	MAD_CLASS_SMI_DR = 0x81,
	MAD_SA_CLASS_VERSION = 2,
	MAD_SMI_CLASS_VERSION = 1,
};

enum {
	MAD_METHOD_GET = 0x01,
	MAD_METHOD_SET = 0x02,
	MAD_METHOD_GET_RESP = 0x81,
	MAD_METHOD_DELETE = 0x15,
	MAD_METHOD_DELETE_RESP = 0x95,
};

enum {
	SA_ATTR_PATH_REC = 0x0035,
	SA_ATTR_MCMEMBER_REC = 0x0038,
	SMP_ATTR_NODE_INFO = 0x0011,
	SMP_ATTR_PORT_INFO = 0x0015,
	SMP_ATTR_PKEY_TABLE = 0x0016,
};

/* PathRecord component mask bits (IBA 15.2.5.16). */
enum {
	PR_COMP_SERVICE_ID = 3ull << 0,
	PR_COMP_DGID = 1ull << 2,
	PR_COMP_SGID = 1ull << 3,
	PR_COMP_DLID = 1ull << 4,
	PR_COMP_SLID = 1ull << 5,
	PR_COMP_RAW_TRAFFIC = 1ull << 6,
	PR_COMP_FLOW_LABEL = 1ull << 8,
	PR_COMP_HOP_LIMIT = 1ull << 9,
	PR_COMP_TCLASS = 1ull << 10,
	PR_COMP_REVERSIBLE = 1ull << 11,
	PR_COMP_NUMB_PATH = 1ull << 12,
	PR_COMP_PKEY = 1ull << 13,
	PR_COMP_QOS_CLASS = 1ull << 14,
	PR_COMP_SL = 1ull << 15,
	PR_COMP_MTU_SEL = 1ull << 16,
	PR_COMP_MTU = 1ull << 17,
	PR_COMP_RATE_SEL = 1ull << 18,
	PR_COMP_RATE = 1ull << 19,
	PR_COMP_PKT_LIFE_SEL = 1ull << 20,
	PR_COMP_PKT_LIFE = 1ull << 21,
	PR_COMP_PREFERENCE = 1ull << 22,
};

/* MCMemberRecord component mask bits (IBA 15.2.5.17). */
enum {
	MCR_COMP_MGID = 1ull << 0,
	MCR_COMP_PORT_GID = 1ull << 1,
	MCR_COMP_QKEY = 1ull << 2,
	MCR_COMP_MLID = 1ull << 3,
	MCR_COMP_MTU_SEL = 1ull << 4,
	MCR_COMP_MTU = 1ull << 5,
	MCR_COMP_TCLASS = 1ull << 6,
	MCR_COMP_PKEY = 1ull << 7,
	MCR_COMP_RATE_SEL = 1ull << 8,
	MCR_COMP_RATE = 1ull << 9,
	MCR_COMP_PKT_LIFE_SEL = 1ull << 10,
	MCR_COMP_PKT_LIFE = 1ull << 11,
	MCR_COMP_SL = 1ull << 12,
	MCR_COMP_FLOW_LABEL = 1ull << 13,
	MCR_COMP_HOP_LIMIT = 1ull << 14,
	MCR_COMP_SCOPE = 1ull << 15,
	MCR_COMP_JOIN_STATE = 1ull << 16,
};

#define MAD_SEL_EXACTLY	     2u	 /* selector in bits 7:6 of MTU, rate, packet life */
#define MCAST_SCOPE_SITE     0x5 /* site-local, as ibacm's groups */
#define MCAST_JOIN_FULL	     0x1 /* JoinState FullMember */
#define IBRES_MGID_SIGNATURE 0x4962
/* "IBRS" with the high bit set: a controlled Q_Key. Only a privileged
 * process (CAP_NET_RAW) may give a QP such a Q_Key, so a datagram an ordinary
 * user sends to the daemons' QPs never carries it and is dropped by the HCA. */
#define IBRES_QKEY	     0xc9425253u

/* The parts of the common header the daemon looks at. */
struct mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status; /* SMP: without the direction bit */
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

struct sa_mcmember {
	uint8_t mgid[16];
	uint8_t port_gid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu; /* selector << 6 | MTU enum */
	uint8_t tclass;
	uint16_t pkey;
	uint8_t rate;	     /* selector << 6 | rate enum */
	uint8_t packet_life; /* selector << 6 | exponent */
	uint8_t sl;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t scope;
	uint8_t join_state;
	bool proxy_join;
};

/* What the daemon takes from PortInfo (directed-route GET to its own port). */
struct smp_port_info {
	uint64_t gid_prefix;
	uint16_t lid;
	uint16_t sm_lid;
	uint32_t cap_mask;
	uint8_t local_port;
	uint8_t state; /* 1 down, 2 init, 3 armed, 4 active */
	uint8_t phys_state;
	uint8_t lmc;
	uint8_t mtu; /* active (NeighborMTU), IB enum */
	uint8_t mtu_cap;
	uint8_t rate; /* IB rate enum from the active width and speed; 0 unknown */
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	bool client_reregister;
};

struct smp_node_info {
	uint8_t node_type;
	uint8_t num_ports;
	uint64_t node_guid;
	uint64_t port_guid;
	uint16_t partition_cap;
	uint8_t local_port;
};

/* Why a received MAD was not taken. */
enum mad_error {
	MAD_OK = 0,
	MAD_ERR_SHORT,	 /* shorter than its header or its record */
	MAD_ERR_VERSION, /* base or class version */
	MAD_ERR_CLASS,	 /* not SA, not directed-route SMI */
	MAD_ERR_METHOD,	 /* not the response to what we sent */
	MAD_ERR_ATTR,	 /* another attribute */
	MAD_ERR_STATUS,	 /* the responder reports an error (see mad_status_errno) */
};

/* Lower 32 bits of a TID: the part that survives the kernel. */
static inline uint32_t sa_tid_low(uint64_t tid)
{
	return (uint32_t)tid;
}

/* Parse the common header of @len received bytes. MAD_OK, MAD_ERR_SHORT or
 * MAD_ERR_VERSION (base version other than 1). */
enum mad_error mad_parse_hdr(const uint8_t *buf, size_t len, struct mad_hdr *h);

/* Check that @h answers a request of @mgmt_class, @method and @attr_id:
 * right class and class version, the response method (GET and SET are
 * answered with GetResp, DELETE with DeleteResp), the same attribute, and
 * status 0 (else MAD_ERR_STATUS). */
enum mad_error mad_check_response(const struct mad_hdr *h, uint8_t mgmt_class, uint8_t method,
				  uint16_t attr_id);

/* A response's status as a negative errno: 0; -ENODATA (SA: no records,
 * invalid GID), -EAGAIN (busy, no resources), -EACCES (request denied),
 * -EINVAL (invalid request or fields, insufficient components), -EPROTO
 * (anything else). */
int mad_status_errno(const struct mad_hdr *h);

/* --- SA ---------------------------------------------------------------- */

/* PathRecord GET for @pr with @comp_mask. Returns the MAD length (256). */
size_t sa_encode_path_get(uint8_t mad[MAD_LEN], uint32_t tid, const struct ibres_path_record *pr,
			  uint64_t comp_mask);

/* The component mask of everything set (non-zero) in @pr, as ibacm builds it
 * to verify a client's path (QUERY_SA). */
uint64_t sa_path_comp_mask(const struct ibres_path_record *pr);

/* The record of a PathRecord response (@len bytes, header already checked). */
enum mad_error sa_decode_path(const uint8_t *buf, size_t len, struct ibres_path_record *pr);

/* MCMemberRecord @method (SET: join, DELETE: leave). Returns 256. */
size_t sa_encode_mcmember(uint8_t mad[MAD_LEN], uint8_t method, uint32_t tid,
			  const struct sa_mcmember *m, uint64_t comp_mask);
enum mad_error sa_decode_mcmember(const uint8_t *buf, size_t len, struct sa_mcmember *m);

/* The component mask a join that may create the group carries: everything
 * OpenSM needs to create it (MGID, PortGID, JoinState, Q_Key, TClass, P_Key,
 * FlowLabel, SL) plus exact MTU and rate, hop limit and scope. */
uint64_t sa_join_comp_mask(void);
/* A leave: MGID, PortGID, JoinState. */
uint64_t sa_leave_comp_mask(void);

/* The MGID of one of our groups (doc/fabric-protocol.md, "IB multicast
 * groups"): ff1S:4962:PPPP:0000:MMRR:0000:IIII:IIII with S the scope, P the
 * P_Key (full member bit set), M the MTU enum, R the rate enum and I the last
 * 32 bits of the group's configured IP address, so that distinct configured
 * groups never share an IB group. */
void sa_group_mgid(uint8_t mgid[16], uint8_t scope, uint16_t pkey, uint8_t mtu, uint8_t rate,
		   uint32_t id);

/* --- SMI (directed route, hop count 0: the local port) ---------------------- */

/* SubnGet(@attr_id) with @attr_mod to the local port. Returns 256. */
size_t smp_encode_get(uint8_t mad[MAD_LEN], uint32_t tid, uint16_t attr_id, uint32_t attr_mod);

/* Check a directed-route SubnGetResp (direction bit set) for @attr_id. */
enum mad_error smp_check_response(const uint8_t *buf, size_t len, const struct mad_hdr *h,
				  uint16_t attr_id);

enum mad_error smp_decode_port_info(const uint8_t *buf, size_t len, struct smp_port_info *pi);
enum mad_error smp_decode_node_info(const uint8_t *buf, size_t len, struct smp_node_info *ni);
/* 32 P_Keys of one block, host order. */
enum mad_error smp_decode_pkeys(const uint8_t *buf, size_t len, uint16_t pkeys[32]);

/* IB rate enum of a link: @width LinkWidthActive (1 1x, 2 4x, 4 8x, 8 12x,
 * 16 2x), @speed LinkSpeedActive (1 2.5, 2 5, 4 10 Gb/s per lane), @ext
 * LinkSpeedExtActive (1 14, 2 25, 4 50, 8 100 Gb/s; 0 none). 0 if unknown. */
uint8_t ib_rate_of_link(uint8_t width, uint8_t speed, uint8_t ext);

#endif
