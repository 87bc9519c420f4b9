/* SPDX-License-Identifier: GPL-2.0 */
/* Commands of the nfslice CLI and the helpers they share. */
#ifndef NFSL_NFSLICE_H
#define NFSL_NFSLICE_H

#include <stdbool.h>
#include "util/caps.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/params.h"
#include "nfsl/domain.h"
#include "nfsl/errors.h"

extern const struct nfsl_cmd nfsl_cmd_attach, nfsl_cmd_detach,
	nfsl_cmd_repair, nfsl_cmd_status, nfsl_cmd_stats, nfsl_cmd_list,
	nfsl_cmd_gc, nfsl_cmd_set, nfsl_cmd_upgrade, nfsl_cmd_checkpoint,
	nfsl_cmd_restore, nfsl_cmd_migrate, nfsl_cmd_adopt, nfsl_cmd_evict, nfsl_cmd_tenants,
	nfsl_cmd_events;

/* Capabilities of the commands that change interfaces and pins, and of
 * those that read program ids (BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN). */
#define NFSL_CAPS_CHANGE (NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_NET_ADMIN) | NFSL_CAP(CAP_SYS_ADMIN))
#define NFSL_CAPS_CHANGE_WHY \
	"CAP_BPF loads programs and pins maps, CAP_NET_ADMIN attaches them to " \
	"interfaces (XDP, tc) and sets sysctls, CAP_SYS_ADMIN reads the programs " \
	"already attached (libxdp) and enters the host's mount namespace"
#define NFSL_CAPS_READ (NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_SYS_ADMIN))
#define NFSL_CAPS_READ_WHY \
	"CAP_BPF opens the pinned maps, CAP_SYS_ADMIN reads the attached programs " \
	"by id and enters namespaces"

#endif /* NFSL_NFSLICE_H */
