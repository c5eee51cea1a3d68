/* SPDX-License-Identifier: MIT */
/*
 * agent.h - `spanprof agent`: continuous profiling of the whole machine,
 * exported every interval as OTLP Profiles (HTTP and/or rotating files),
 * with a memory guard, Prometheus metrics and reduced privileges.
 * agent.c's top comment has the threads, buffers and drop policies.
 */
#ifndef SPANPROF_AGENT_H
#define SPANPROF_AGENT_H

/* Returns the process exit code: 0 after a clean stop (SIGTERM/SIGINT,
 * flushed within --shutdown-timeout), 1 runtime failure, 2 usage error;
 * a second signal during the flush exits at once with 128 + signal. */
int sp_agent__main(int argc, char **argv);

#endif
