/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Expectations shared by the datapath tests: the exact bytes the slicer
 * must produce, and one-packet slice / splice steps that check verdict,
 * bytes, validity, slot and counter deltas (katran-style table entries).
 */
#ifndef NFSL_TEST_CHECK_H
#define NFSL_TEST_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfsl_structs.h"

/*
 * x_sliced - what the slicer must output for the frame @in with @keep
 * payload bytes kept and the token of (@slot, @gen): headers + kept bytes +
 * token, DSCP 63 with the ECN bits kept, IP and UDP lengths of the
 * truncated packet, IPv4 header checksum and the right L4 checksum (also
 * for a wrong input checksum: its error is parked with the payload; UDP
 * checksum 0 stays 0). Returns the length.
 */
size_t x_sliced(const uint8_t *in, size_t len, uint32_t keep, uint32_t slot,
		uint32_t gen, uint8_t *out);

/* cr_expect equal frames; on a mismatch print where. */
bool x_bytes(const char *what, const uint8_t *got, size_t glen,
	     const uint8_t *want, size_t wlen);

/*
 * x_slice_ok - slice @in and expect: XDP_PASS, exactly x_sliced() for the
 * next slot of this CPU's partition (@slot, @gen), a valid packet, the
 * slot holding exactly the parked
 * bytes and its park log entry (x_logged), and counters moved by sliced
 * +1, parked_bytes + parked and
 * @extra (NULL: nothing else). The sliced frame goes to @out / *@olen.
 */
bool x_slice_ok(const char *what, const uint8_t *in, size_t len,
		uint32_t slot, uint32_t gen, const struct nfsl_counters *extra,
		uint8_t *out, uint32_t *olen);

/* Expect the park log entry of the slice just made on this CPU (its
 * partition's clock, struct nfsl_alloc seq) to name store slot @slot with
 * generation @gen and the slot's parked time (x_slice_ok checks it). */
bool x_logged(const char *what, uint32_t slot, uint32_t gen);

/* Splice @in (a sliced frame) and expect TC_ACT_OK, the frame @want, the
 * slot of the token freed, and spliced +1. */
bool x_splice_ok(const char *what, const uint8_t *in, size_t len,
		 const uint8_t *want, size_t wlen);

/* Run @in through the slicer and expect @verdict, the frame unchanged and
 * the counters moved by exactly @delta. */
bool x_slice_untouched(const char *what, const uint8_t *in, size_t len,
		       int verdict, const struct nfsl_counters *delta);
/* Same through the splicer. */
bool x_splice_untouched(const char *what, const uint8_t *in, size_t len,
			int verdict, const struct nfsl_counters *delta);

#endif /* NFSL_TEST_CHECK_H */
