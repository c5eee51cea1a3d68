/* SPDX-License-Identifier: MIT */
/*
 * cap_last.h - the highest capability number this kernel knows
 * (/proc/sys/kernel/cap_last_cap, capabilities(7)), for loops over every
 * capability (the bounding set is dropped one capability at a time).
 */
#ifndef SPANPROF_BASE_CAP_LAST_H
#define SPANPROF_BASE_CAP_LAST_H

/* 0..63; CAP_LAST_CAP of the build's headers when the file cannot be
 * read. */
int sp_cap_last(void);

#endif
