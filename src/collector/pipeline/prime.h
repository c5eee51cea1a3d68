/* SPDX-License-Identifier: MIT */
/*
 * prime.h - sampling frequencies must be prime so that sampling never
 * phase-locks with the scheduler tick or periodic application work.
 */
#ifndef SPANPROF_PRIME_H
#define SPANPROF_PRIME_H

#include <stdbool.h>
#include <stdint.h>

bool sp_is_prime(uint64_t n);
/* Nearest primes below and above n (below = 0 when none). */
void sp_nearest_primes(uint64_t n, uint64_t *below, uint64_t *above);

#endif
