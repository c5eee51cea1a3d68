/* SPDX-License-Identifier: MIT */
/*
 * queue.h - the exporter's bounded FIFO of encoded batches (private).
 *
 * A plain data structure: no locking (the exporter holds its mutex), no
 * allocation (batches are allocated by the submitter and handed over).
 * Bound: the sum of queued batch lengths never exceeds cap.  A batch that
 * does not fit is refused (SP_DROP_NEWEST), or the oldest batches are
 * unlinked until it fits (SP_DROP_OLDEST); a batch longer than cap is
 * refused under either policy.  Unlinked batches are handed back on a list
 * so the caller can count and free them outside its lock.
 */
#ifndef SPANPROF_EXPORT_QUEUE_H
#define SPANPROF_EXPORT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "export/exporter.h"

struct sp_batch {
	struct sp_batch *next;
	uint64_t n_samples;	/* events inside, for drop accounting */
	size_t len;
	uint8_t *data;		/* owned, malloc'd */
};

struct sp_queue {
	struct sp_batch *head;
	struct sp_batch *tail;
	size_t bytes;
	size_t cap;
	uint32_t n;
};

/* Takes ownership of data (freed by sp_batch__free). */
struct sp_batch *sp_batch__new(uint8_t *data, size_t len, uint64_t n_samples);
void sp_batch__free(struct sp_batch *b);	/* NULL-safe, one batch */
void sp_batch__free_list(struct sp_batch *b);	/* NULL-safe, follows next */

void sp_queue__init(struct sp_queue *q, size_t cap);
/* 0: b queued, *dropped = list of older batches unlinked to make room (or
 * NULL).  -ENOSPC: b refused (not linked, still the caller's), *dropped
 * NULL. */
int sp_queue__push(struct sp_queue *q, struct sp_batch *b, enum sp_drop_policy policy,
		   struct sp_batch **dropped);
struct sp_batch *sp_queue__pop(struct sp_queue *q);	/* NULL when empty */
/* Unlinks everything; returns the list. */
struct sp_batch *sp_queue__take_all(struct sp_queue *q);

#endif
