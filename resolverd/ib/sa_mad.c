// SPDX-License-Identifier: MIT
/* Encode and decode the MADs of the SA client (sa_mad.h). Byte offsets are
 * the IBA's: common header, RMPP header, SA header, then the record; SMPs
 * put their attribute at byte 64. Nothing here trusts a length. */
#include "ib/sa_mad.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "ibenum.h"

/* Common header */
#define OFF_BASE_VERSION  0
#define OFF_CLASS	  1
#define OFF_CLASS_VERSION 2
#define OFF_METHOD	  3
#define OFF_STATUS	  4
#define OFF_HOP_PTR	  6 /* directed-route SMP */
#define OFF_HOP_CNT	  7
#define OFF_TID		  8
#define OFF_ATTR_ID	  16
#define OFF_ATTR_MOD	  20
/* SA header */
#define OFF_SA_COMP_MASK 48
/* Directed-route SMP */
#define OFF_SMP_DR_SLID 32
#define OFF_SMP_DR_DLID 34

#define SMP_DIRECTION  0x8000 /* D bit of the status field */
#define PERMISSIVE_LID 0xffff

#define SA_STATUS(s) (((s) >> 8) & 0xff) /* class-specific status bits */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void hdr_init(uint8_t *mad, uint8_t mgmt_class, uint8_t class_version, uint8_t method,
		     uint32_t tid, uint16_t attr_id, uint32_t attr_mod)
{
	memset(mad, 0, MAD_LEN);
	mad[OFF_BASE_VERSION] = 1;
	mad[OFF_CLASS] = mgmt_class;
	mad[OFF_CLASS_VERSION] = class_version;
	mad[OFF_METHOD] = method;
	put64(mad + OFF_TID, tid);
	put16(mad + OFF_ATTR_ID, attr_id);
	put32(mad + OFF_ATTR_MOD, attr_mod);
}

enum mad_error mad_parse_hdr(const uint8_t *buf, size_t len, struct mad_hdr *h)
{
	if (!buf || len < MAD_HDR_LEN)
		return MAD_ERR_SHORT;
	h->base_version = buf[OFF_BASE_VERSION];
	h->mgmt_class = buf[OFF_CLASS];
	h->class_version = buf[OFF_CLASS_VERSION];
	h->method = buf[OFF_METHOD];
	h->status = get16(buf + OFF_STATUS);
	if (h->mgmt_class == MAD_CLASS_SMI_DR)
		h->status &= ~SMP_DIRECTION;
	h->tid = get64(buf + OFF_TID);
	h->attr_id = get16(buf + OFF_ATTR_ID);
	h->attr_mod = get32(buf + OFF_ATTR_MOD);
	return h->base_version == 1 ? MAD_OK : MAD_ERR_VERSION;
}

enum mad_error mad_check_response(const struct mad_hdr *h, uint8_t mgmt_class, uint8_t method,
				  uint16_t attr_id)
{
	uint8_t version = mgmt_class == MAD_CLASS_SA ? MAD_SA_CLASS_VERSION : MAD_SMI_CLASS_VERSION;
	uint8_t resp = method == MAD_METHOD_DELETE ? MAD_METHOD_DELETE_RESP : MAD_METHOD_GET_RESP;

	if (h->mgmt_class != mgmt_class)
		return MAD_ERR_CLASS;
	if (h->class_version != version)
		return MAD_ERR_VERSION;
	if (h->method != resp)
		return MAD_ERR_METHOD;
	if (h->attr_id != attr_id)
		return MAD_ERR_ATTR;
	return h->status ? MAD_ERR_STATUS : MAD_OK;
}

int mad_status_errno(const struct mad_hdr *h)
{
	if (!h->status)
		return 0;
	if (h->status & 0x1) /* busy */
		return -EAGAIN;
	if (h->mgmt_class == MAD_CLASS_SA) {
		switch (SA_STATUS(h->status)) {
		case 1: /* no resources */
			return -EAGAIN;
		case 2: /* request invalid */
		case 6: /* insufficient components */
			return -EINVAL;
		case 3: /* no records */
		case 5: /* invalid GID */
			return -ENODATA;
		case 7: /* request denied */
			return -EACCES;
		}
	}
	if (h->status & 0x1c) /* invalid field: bad version, method, attribute, value */
		return -EINVAL;
	return -EPROTO;
}

/* --- SA ------------------------------------------------------------------- */

size_t sa_encode_path_get(uint8_t mad[MAD_LEN], uint32_t tid, const struct ibres_path_record *pr,
			  uint64_t comp_mask)
{
	hdr_init(mad, MAD_CLASS_SA, MAD_SA_CLASS_VERSION, MAD_METHOD_GET, tid, SA_ATTR_PATH_REC, 0);
	put64(mad + OFF_SA_COMP_MASK, comp_mask);
	/* struct ibres_path_record is the wire format, big-endian fields */
	memcpy(mad + SA_HDR_LEN, pr, SA_PATH_REC_LEN);
	return MAD_LEN;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

uint64_t sa_path_comp_mask(const struct ibres_path_record *pr)
{
	uint32_t fl_hop = be32toh(pr->flowlabel_hoplimit);
	uint16_t qos_sl = be16toh(pr->qosclass_sl);
	uint64_t m = 0;

	if (pr->service_id)
		m |= PR_COMP_SERVICE_ID;
	if (!all_zero(pr->dgid, 16))
		m |= PR_COMP_DGID;
	if (!all_zero(pr->sgid, 16))
		m |= PR_COMP_SGID;
	if (pr->dlid)
		m |= PR_COMP_DLID;
	if (pr->slid)
		m |= PR_COMP_SLID;
	if (fl_hop & 0x0fffff00)
		m |= PR_COMP_FLOW_LABEL;
	if (fl_hop & 0xff)
		m |= PR_COMP_HOP_LIMIT;
	if (pr->tclass)
		m |= PR_COMP_TCLASS;
	if (pr->reversible_numpath & 0x80)
		m |= PR_COMP_REVERSIBLE;
	if (pr->reversible_numpath & 0x7f)
		m |= PR_COMP_NUMB_PATH;
	if (pr->pkey)
		m |= PR_COMP_PKEY;
	if (qos_sl & 0xf)
		m |= PR_COMP_SL;
	if (pr->mtu & 0x3f)
		m |= PR_COMP_MTU_SEL | PR_COMP_MTU;
	if (pr->rate & 0x3f)
		m |= PR_COMP_RATE_SEL | PR_COMP_RATE;
	if (pr->packetlifetime & 0x3f)
		m |= PR_COMP_PKT_LIFE_SEL | PR_COMP_PKT_LIFE;
	if (pr->preference)
		m |= PR_COMP_PREFERENCE;
	return m;
}

enum mad_error sa_decode_path(const uint8_t *buf, size_t len, struct ibres_path_record *pr)
{
	if (!buf || len < SA_HDR_LEN + SA_PATH_REC_LEN)
		return MAD_ERR_SHORT;
	memcpy(pr, buf + SA_HDR_LEN, SA_PATH_REC_LEN);
	return MAD_OK;
}

/* MCMemberRecord field offsets within the record. */
#define MCR_MGID	0
#define MCR_PORT_GID	16
#define MCR_QKEY	32
#define MCR_MLID	36
#define MCR_MTU		38
#define MCR_TCLASS	39
#define MCR_PKEY	40
#define MCR_RATE	42
#define MCR_PKT_LIFE	43
#define MCR_SL_FLOW_HOP 44
#define MCR_SCOPE_JOIN	48
#define MCR_PROXY	49

size_t sa_encode_mcmember(uint8_t mad[MAD_LEN], uint8_t method, uint32_t tid,
			  const struct sa_mcmember *m, uint64_t comp_mask)
{
	uint8_t *r = mad + SA_HDR_LEN;

	hdr_init(mad, MAD_CLASS_SA, MAD_SA_CLASS_VERSION, method, tid, SA_ATTR_MCMEMBER_REC, 0);
	put64(mad + OFF_SA_COMP_MASK, comp_mask);
	memcpy(r + MCR_MGID, m->mgid, 16);
	memcpy(r + MCR_PORT_GID, m->port_gid, 16);
	put32(r + MCR_QKEY, m->qkey);
	put16(r + MCR_MLID, m->mlid);
	r[MCR_MTU] = m->mtu;
	r[MCR_TCLASS] = m->tclass;
	put16(r + MCR_PKEY, m->pkey);
	r[MCR_RATE] = m->rate;
	r[MCR_PKT_LIFE] = m->packet_life;
	put32(r + MCR_SL_FLOW_HOP,
	      (uint32_t)(m->sl & 0xf) << 28 | (m->flow_label & 0xfffff) << 8 | m->hop_limit);
	r[MCR_SCOPE_JOIN] = (uint8_t)((m->scope & 0xf) << 4 | (m->join_state & 0xf));
	r[MCR_PROXY] = m->proxy_join ? 0x80 : 0;
	return MAD_LEN;
}

enum mad_error sa_decode_mcmember(const uint8_t *buf, size_t len, struct sa_mcmember *m)
{
	const uint8_t *r = buf + SA_HDR_LEN;
	uint32_t sfh;

	if (!buf || len < SA_HDR_LEN + SA_MCMEMBER_REC_LEN)
		return MAD_ERR_SHORT;
	memset(m, 0, sizeof(*m));
	memcpy(m->mgid, r + MCR_MGID, 16);
	memcpy(m->port_gid, r + MCR_PORT_GID, 16);
	m->qkey = get32(r + MCR_QKEY);
	m->mlid = get16(r + MCR_MLID);
	m->mtu = r[MCR_MTU];
	m->tclass = r[MCR_TCLASS];
	m->pkey = get16(r + MCR_PKEY);
	m->rate = r[MCR_RATE];
	m->packet_life = r[MCR_PKT_LIFE];
	sfh = get32(r + MCR_SL_FLOW_HOP);
	m->sl = (uint8_t)(sfh >> 28);
	m->flow_label = (sfh >> 8) & 0xfffff;
	m->hop_limit = (uint8_t)sfh;
	m->scope = r[MCR_SCOPE_JOIN] >> 4;
	m->join_state = r[MCR_SCOPE_JOIN] & 0xf;
	m->proxy_join = r[MCR_PROXY] & 0x80;
	return MAD_OK;
}

uint64_t sa_join_comp_mask(void)
{
	return MCR_COMP_MGID | MCR_COMP_PORT_GID | MCR_COMP_QKEY | MCR_COMP_MTU_SEL | MCR_COMP_MTU |
	       MCR_COMP_TCLASS | MCR_COMP_PKEY | MCR_COMP_RATE_SEL | MCR_COMP_RATE | MCR_COMP_SL |
	       MCR_COMP_FLOW_LABEL | MCR_COMP_HOP_LIMIT | MCR_COMP_SCOPE | MCR_COMP_JOIN_STATE;
}

uint64_t sa_leave_comp_mask(void)
{
	return MCR_COMP_MGID | MCR_COMP_PORT_GID | MCR_COMP_JOIN_STATE;
}

void sa_group_mgid(uint8_t mgid[16], uint8_t scope, uint16_t pkey, uint8_t mtu, uint8_t rate,
		   uint32_t id)
{
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = (uint8_t)(0x10 | (scope & 0xf)); /* T flag: not a well-known group */
	put16(mgid + 2, IBRES_MGID_SIGNATURE);
	put16(mgid + 4, pkey | 0x8000);
	mgid[8] = mtu;
	mgid[9] = rate;
	put32(mgid + 12, id);
}

/* --- SMI -------------------------------------------------------------------- */

size_t smp_encode_get(uint8_t mad[MAD_LEN], uint32_t tid, uint16_t attr_id, uint32_t attr_mod)
{
	hdr_init(mad, MAD_CLASS_SMI_DR, MAD_SMI_CLASS_VERSION, MAD_METHOD_GET, tid, attr_id,
		 attr_mod);
	/* hop count 0: the SMP goes to our own port; permissive LIDs both ends */
	mad[OFF_HOP_PTR] = 0;
	mad[OFF_HOP_CNT] = 0;
	put16(mad + OFF_SMP_DR_SLID, PERMISSIVE_LID);
	put16(mad + OFF_SMP_DR_DLID, PERMISSIVE_LID);
	return MAD_LEN;
}

enum mad_error smp_check_response(const uint8_t *buf, size_t len, const struct mad_hdr *h,
				  uint16_t attr_id)
{
	enum mad_error err = mad_check_response(h, MAD_CLASS_SMI_DR, MAD_METHOD_GET, attr_id);

	if (err != MAD_OK)
		return err;
	if (len < SMP_DATA_OFF + SMP_DATA_LEN)
		return MAD_ERR_SHORT;
	/* a response travels back: the direction bit must be set */
	if (!(get16(buf + OFF_STATUS) & SMP_DIRECTION))
		return MAD_ERR_METHOD;
	return MAD_OK;
}

uint8_t ib_rate_of_link(uint8_t width, uint8_t speed, uint8_t ext)
{
	unsigned lanes, lane10, total;
	int rate;

	switch (width) {
	case 1:
		lanes = 1;
		break;
	case 2:
		lanes = 4;
		break;
	case 4:
		lanes = 8;
		break;
	case 8:
		lanes = 12;
		break;
	case 16:
		lanes = 2;
		break;
	default:
		return 0;
	}
	switch (ext) {
	case 0:
		switch (speed) {
		case 1:
			lane10 = 25;
			break;
		case 2:
			lane10 = 50;
			break;
		case 4:
			lane10 = 100;
			break;
		default:
			return 0;
		}
		break;
	case 1:
		lane10 = 140;
		break;
	case 2:
		lane10 = 250;
		break;
	case 4:
		lane10 = 500;
		break;
	case 8:
		lane10 = 1000;
		break;
	default:
		return 0;
	}
	total = lanes * lane10;
	rate = ib_rate_from_gbps10(total);
	return rate > 0 ? (uint8_t)rate : 0;
}

/* PortInfo offsets within the attribute. */
#define PI_GID_PREFIX	 8
#define PI_LID		 16
#define PI_SM_LID	 18
#define PI_CAP_MASK	 20
#define PI_LOCAL_PORT	 28
#define PI_WIDTH_ACTIVE	 31
#define PI_SPEED_STATE	 32
#define PI_PHYS		 33
#define PI_LMC		 34
#define PI_SPEED_ACTIVE	 35
#define PI_MTU_SMSL	 36
#define PI_MTU_CAP	 41
#define PI_REREG_TIMEOUT 51
#define PI_EXT_SPEED	 62

#define CAP_EXT_SPEEDS (1u << 14)

enum mad_error smp_decode_port_info(const uint8_t *buf, size_t len, struct smp_port_info *pi)
{
	const uint8_t *a = buf + SMP_DATA_OFF;
	uint8_t ext;

	if (!buf || len < SMP_DATA_OFF + SMP_DATA_LEN)
		return MAD_ERR_SHORT;
	memset(pi, 0, sizeof(*pi));
	pi->gid_prefix = get64(a + PI_GID_PREFIX);
	pi->lid = get16(a + PI_LID);
	pi->sm_lid = get16(a + PI_SM_LID);
	pi->cap_mask = get32(a + PI_CAP_MASK);
	pi->local_port = a[PI_LOCAL_PORT];
	pi->state = a[PI_SPEED_STATE] & 0xf;
	pi->phys_state = a[PI_PHYS] >> 4;
	pi->lmc = a[PI_LMC] & 0x7;
	pi->mtu = a[PI_MTU_SMSL] >> 4;
	pi->sm_sl = a[PI_MTU_SMSL] & 0xf;
	pi->mtu_cap = a[PI_MTU_CAP] & 0xf;
	pi->client_reregister = a[PI_REREG_TIMEOUT] & 0x80;
	pi->subnet_timeout = a[PI_REREG_TIMEOUT] & 0x1f;
	ext = (pi->cap_mask & CAP_EXT_SPEEDS) ? a[PI_EXT_SPEED] >> 4 : 0;
	pi->rate = ib_rate_of_link(a[PI_WIDTH_ACTIVE], a[PI_SPEED_ACTIVE] >> 4, ext);
	return MAD_OK;
}

/* NodeInfo offsets within the attribute. */
#define NI_NODE_TYPE  2
#define NI_NUM_PORTS  3
#define NI_NODE_GUID  12
#define NI_PORT_GUID  20
#define NI_PART_CAP   28
#define NI_LOCAL_PORT 36

enum mad_error smp_decode_node_info(const uint8_t *buf, size_t len, struct smp_node_info *ni)
{
	const uint8_t *a = buf + SMP_DATA_OFF;

	if (!buf || len < SMP_DATA_OFF + SMP_DATA_LEN)
		return MAD_ERR_SHORT;
	memset(ni, 0, sizeof(*ni));
	ni->node_type = a[NI_NODE_TYPE];
	ni->num_ports = a[NI_NUM_PORTS];
	ni->node_guid = get64(a + NI_NODE_GUID);
	ni->port_guid = get64(a + NI_PORT_GUID);
	ni->partition_cap = get16(a + NI_PART_CAP);
	ni->local_port = a[NI_LOCAL_PORT];
	return MAD_OK;
}

enum mad_error smp_decode_pkeys(const uint8_t *buf, size_t len, uint16_t pkeys[32])
{
	if (!buf || len < SMP_DATA_OFF + SMP_DATA_LEN)
		return MAD_ERR_SHORT;
	for (unsigned i = 0; i < 32; i++)
		pkeys[i] = get16(buf + SMP_DATA_OFF + 2 * i);
	return MAD_OK;
}
