// SPDX-License-Identifier: MIT
#include "fabric/transport.h"

const struct transport_ops *transport_for(const struct cfg_endpoint *ep)
{
	switch (ep->transport) {
	case TRANSPORT_IP:
		return &transport_ip_ops;
	case TRANSPORT_IB:
		return &transport_ib_ops;
	default:
		return NULL;
	}
}
