/* SPDX-License-Identifier: GPL-2.0 */
/* Copy mode of a migration (migrate_copy.c; migrate.h). */
#ifndef NFSL_MIGRATE_COPY_H
#define NFSL_MIGRATE_COPY_H

#include "nfsl/migrate_steps.h"

/*
 * nfsl_mig_copy - copy mode, here or to a host: the new instance attached
 * holding and ready, the old slicer stopped, the image taken and
 * imported, the new instance slicing with both keys, the old instance
 * detached without a drain, the copies followed to their end. Returns 0
 * or -1 (printed; a failure after the old slicer stopped and before the
 * new one sliced is rolled back). @res->done once the copies ended.
 */
int nfsl_mig_copy(struct nfsl_migration *m, struct nfsl_migrate_result *res);

#endif /* NFSL_MIGRATE_COPY_H */
