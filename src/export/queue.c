/* SPDX-License-Identifier: MIT */
/*
 * queue.c - bounded FIFO of encoded batches (contract: queue.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "export/queue.h"

struct sp_batch *sp_batch__new(uint8_t *data, size_t len, uint64_t n_samples)
{
	struct sp_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->data = data;
	b->len = len;
	b->n_samples = n_samples;
	return b;
}

void sp_batch__free(struct sp_batch *b)
{
	if (!b)
		return;
	free(b->data);
	free(b);
}

void sp_batch__free_list(struct sp_batch *b)
{
	while (b) {
		struct sp_batch *next = b->next;

		sp_batch__free(b);
		b = next;
	}
}

void sp_queue__init(struct sp_queue *q, size_t cap)
{
	q->head = q->tail = NULL;
	q->bytes = 0;
	q->n = 0;
	q->cap = cap;
}

struct sp_batch *sp_queue__pop(struct sp_queue *q)
{
	struct sp_batch *b = q->head;

	if (!b)
		return NULL;
	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	b->next = NULL;
	q->bytes -= b->len;
	q->n--;
	return b;
}

int sp_queue__push(struct sp_queue *q, struct sp_batch *b, enum sp_drop_policy policy,
		   struct sp_batch **dropped)
{
	struct sp_batch *dl = NULL, **dt = &dl;

	*dropped = NULL;
	if (b->len > q->cap)
		return -ENOSPC;
	if (q->cap - q->bytes < b->len) {
		if (policy == SP_DROP_NEWEST)
			return -ENOSPC;
		while (q->cap - q->bytes < b->len) {
			*dt = sp_queue__pop(q);
			dt = &(*dt)->next;
		}
	}
	b->next = NULL;
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->bytes += b->len;
	q->n++;
	*dropped = dl;
	return 0;
}

struct sp_batch *sp_queue__take_all(struct sp_queue *q)
{
	struct sp_batch *l = q->head;

	q->head = q->tail = NULL;
	q->bytes = 0;
	q->n = 0;
	return l;
}
