/* SPDX-License-Identifier: MIT */
/*
 * Wire formats shared by ibresd and its clients.
 *
 * The first part is the ibacm client protocol, version 1, byte for byte
 * (what ib_acme and librdmacm speak). The second part is the nss-ib
 * extension: more opcodes in the same 16-byte framing whose bodies are
 * sequences of TLV items. doc/protocol.md describes both.
 */
#ifndef IBRES_PROTO_H
#define IBRES_PROTO_H

#include <stdint.h>
#include <stddef.h>

#define IBRES_ACM_VERSION 1

/* Opcodes. ibacm masks the opcode with 0x0F; extension opcodes use low-nibble
 * values ibacm does not know, so a real ibacm answers them with EINVAL. */
enum {
	IBRES_OP_RESOLVE = 0x01,
	IBRES_OP_PERF_QUERY = 0x02,
	IBRES_OP_EP_QUERY = 0x03,
	IBRES_OP_HOST = 0x08,        /* host lookup by name, IPv4, IPv6 or GID */
	IBRES_OP_CACHE_LIST = 0x09,  /* list cache entries, paged */
	IBRES_OP_CACHE_FLUSH = 0x0a, /* drop entries (all, or one key); uid 0 */
	IBRES_OP_STATS = 0x0b,       /* named counters */
	IBRES_OP_ENDPOINTS = 0x0c,   /* local endpoints with all their data */
	IBRES_OP_DIRECTORY = 0x0d,   /* the shared host directory, passed as a descriptor */
	IBRES_OP_MASK = 0x0f,
	IBRES_OP_ACK = 0x80,
};

/* Status codes: ibacm's, plus two of ours for the extension. */
enum {
	IBRES_STATUS_SUCCESS = 0,
	IBRES_STATUS_ENOMEM = 1,
	IBRES_STATUS_EINVAL = 2,
	IBRES_STATUS_ENODATA = 3,
	IBRES_STATUS_ENOTCONN = 5,
	IBRES_STATUS_ETIMEDOUT = 6,
	IBRES_STATUS_ESRCADDR = 7,
	IBRES_STATUS_ESRCTYPE = 8,
	IBRES_STATUS_EDESTADDR = 9,
	IBRES_STATUS_EDESTTYPE = 10,
	IBRES_STATUS_EPERM = 11,   /* extension: admin operation needs uid 0 */
	IBRES_STATUS_EAGAIN = 12,  /* extension: daemon busy, try again */
};

#define IBRES_HDR_LEN 16
#define IBRES_EP_LEN 72
#define IBRES_ADDR_MAX 64
/* Largest ibacm-format message (what ib_acme and librdmacm recv into). */
#define IBRES_ACM_MSG_MAX (IBRES_HDR_LEN + 8 * IBRES_EP_LEN)
/* Largest message of any kind: the 16-bit length field. */
#define IBRES_MSG_MAX 65535

struct ibres_hdr {
	uint8_t version;
	uint8_t opcode;
	uint8_t status;
	uint8_t data[3]; /* [0] src_out, [1] src_index, [2] dst_index */
	uint16_t length; /* RESOLVE: host order; every other opcode: big-endian */
	uint64_t tid;
} __attribute__((packed));

/* struct ibv_path_record, all multi-byte fields big-endian. */
struct ibres_path_record {
	uint64_t service_id;
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint16_t dlid;
	uint16_t slid;
	uint32_t flowlabel_hoplimit;
	uint8_t tclass;
	uint8_t reversible_numpath;
	uint16_t pkey;
	uint16_t qosclass_sl;
	uint8_t mtu;
	uint8_t rate;
	uint8_t packetlifetime;
	uint8_t preference;
	uint8_t reserved[6];
} __attribute__((packed));

/* Path flags (IBV_PATH_FLAG_*) as they appear in RESOLVE answers. */
enum {
	IBRES_PATH_FLAG_GMP = 1 << 0,
	IBRES_PATH_FLAG_PRIMARY = 1 << 1,
	IBRES_PATH_FLAG_ALTERNATE = 1 << 2,
	IBRES_PATH_FLAG_OUTBOUND = 1 << 3,
	IBRES_PATH_FLAG_INBOUND = 1 << 4,
	IBRES_PATH_FLAG_INBOUND_REVERSE = 1 << 5,
	IBRES_PATH_FLAGS_ACM = 0x2b, /* GMP|PRIMARY|OUTBOUND|INBOUND_REVERSE */
};

/* RESOLVE entry flags and types. */
enum {
	IBRES_EP_FLAG_SOURCE = 1u << 0,
	IBRES_EP_FLAG_DEST = 1u << 1,
	IBRES_FLAG_NODELAY = 1u << 30,
	IBRES_FLAG_QUERY_SA = 1u << 31,
};

enum {
	IBRES_EP_TYPE_NAME = 0x01,
	IBRES_EP_TYPE_IP = 0x02,
	IBRES_EP_TYPE_IP6 = 0x03,
	IBRES_EP_TYPE_PATH = 0x10,
};

/* One RESOLVE entry; overlays struct ibv_path_data exactly. */
struct ibres_ep_entry {
	uint32_t flags; /* host order */
	uint16_t type;  /* host order */
	uint16_t reserved;
	union {
		uint8_t addr[IBRES_ADDR_MAX];
		char name[IBRES_ADDR_MAX];
		struct ibres_path_record path;
	} info;
} __attribute__((packed));

/* PERF_QUERY counters, in answer order. */
enum {
	IBRES_CNTR_ERROR,
	IBRES_CNTR_RESOLVE,
	IBRES_CNTR_NODATA,
	IBRES_CNTR_ADDR_QUERY,
	IBRES_CNTR_ADDR_CACHE,
	IBRES_CNTR_ROUTE_QUERY,
	IBRES_CNTR_ROUTE_CACHE,
	IBRES_CNTR_MAX
};

/* EP_QUERY answer body (after the header). */
struct ibres_ep_config {
	uint64_t dev_guid; /* big-endian */
	uint8_t port_num;
	uint8_t phys_port_cnt;
	uint8_t rsvd[2];
	uint16_t pkey;     /* big-endian */
	uint16_t addr_cnt; /* big-endian */
	char prov_name[64];
	/* followed by addr_cnt 64-byte NUL-terminated strings */
} __attribute__((packed));

/*
 * Extension bodies: a sequence of items, each
 *	uint16_t type (big-endian), uint16_t length (big-endian), value[length]
 * with no padding. Strings carry no NUL. A NEST item's value is itself a
 * sequence of items (one cache entry, one counter, one endpoint).
 */
struct ibres_tlv_hdr {
	uint16_t type;
	uint16_t length;
} __attribute__((packed));

enum {
	IBRES_T_NAME = 1,      /* string: canonical name (first) or lookup key */
	IBRES_T_ALIAS = 2,     /* string */
	IBRES_T_IPV4 = 3,      /* 4 bytes, network order */
	IBRES_T_IPV6 = 4,      /* 16 bytes */
	IBRES_T_GID = 5,       /* 16 bytes */
	IBRES_T_LID = 6,       /* u16 */
	IBRES_T_QPN = 7,       /* u32 */
	IBRES_T_PKEY = 8,      /* u16 */
	IBRES_T_TTL = 9,       /* u32 seconds left */
	IBRES_T_FLAGS = 10,    /* u32: request flags (IBRES_HOST_*), answer flags (IBRES_LIST_*) */
	IBRES_T_STATE = 11,    /* u8: enum ibres_entry_state (an ENDPOINTS record: ibres_ep_state) */
	IBRES_T_ORIGIN = 12,   /* u8: enum ibres_origin */
	IBRES_T_NEST = 13,     /* a nested sequence: one record */
	IBRES_T_COUNTER = 14,  /* u64 counter value; follows the NAME of a counter */
	IBRES_T_OFFSET = 15,   /* u32: listing starts at this record index */
	IBRES_T_NEXT = 16,     /* u32: more records follow from this index */
	IBRES_T_COUNT = 17,    /* u64: number of records (flushed, total) */
	IBRES_T_KEYTYPE = 18,  /* u8: enum ibres_key_type of a cache entry */
	IBRES_T_MTU = 19,      /* u8: IB MTU enum */
	IBRES_T_RATE = 20,     /* u8: IB rate enum */
	IBRES_T_SL = 21,       /* u8 */
	IBRES_T_PATH = 22,     /* struct ibres_path_record */
	IBRES_T_KEY = 23,      /* string: a cache entry's key in text ("node2", "198.18.0.2") */
	IBRES_T_LABEL = 24,    /* string: an endpoint's label from the config */
	IBRES_T_MAX
};

/* IBRES_T_FLAGS bits in a HOST request. */
enum {
	IBRES_HOST_CACHE_ONLY = 1u << 0, /* answer from the cache; never ask the fabric */
};

/* IBRES_T_FLAGS bits in a CACHE_LIST answer. */
enum {
	/* negative answers and queries in flight were left out: they show what other users
	 * looked up, and are listed to uid 0 only */
	IBRES_LIST_WITHHELD = 1u << 0,
};

enum ibres_key_type {
	IBRES_KEY_NAME = 1,
	IBRES_KEY_IPV4 = 2,
	IBRES_KEY_IPV6 = 3,
	IBRES_KEY_GID = 4,
	IBRES_KEY_LID = 5,
};

enum ibres_entry_state {
	IBRES_STATE_INIT = 0,
	IBRES_STATE_QUERYING = 1,
	IBRES_STATE_RESOLVED = 2,
	IBRES_STATE_ROUTED = 3,
	IBRES_STATE_NEGATIVE = 4,
};

/* An endpoint's state in an ENDPOINTS answer: a rail that is down (its port
 * not ACTIVE, or an ip endpoint's interface without carrier) answers nothing. */
enum ibres_ep_state {
	IBRES_EP_UP = 1,
	IBRES_EP_DOWN = 2,
};

enum ibres_origin {
	IBRES_ORIGIN_LOCAL = 0,  /* one of this node's endpoints */
	IBRES_ORIGIN_STATIC = 1, /* the hosts file */
	IBRES_ORIGIN_FABRIC = 2, /* learned from the fabric protocol */
};

/* Limits a client can rely on. */
#define IBRES_NAME_MAX 255     /* host name length, bytes, without NUL */
/* One host record: a host of several endpoints (one per rail and
 * partition) has every rail's names and addresses in one. */
#define IBRES_HOST_NAMES_MAX 16 /* canonical name + aliases per record */
#define IBRES_HOST_ADDRS_MAX 32 /* per family, per record */
#define IBRES_HOST_GIDS_MAX 32
/* One endpoint's own: what the config, the hosts file and the kernel give it
 * (its announcements stay small). */
#define IBRES_EP_NAMES_MAX 8
#define IBRES_EP_ADDRS_MAX 8
#define IBRES_EP_GIDS_MAX 4

#define IBRES_DEFAULT_SOCKET "/run/ibres/ibresd.sock"
#define IBRES_SOCKET_ENV "IBRES_SOCKET"

#endif /* IBRES_PROTO_H */
