// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's worker (nfsliced.h): one thread for the jobs that wait for
 * the host-wide lock (a set request, the gc, a move of tenant quotas).
 * flock(2) cannot be waited for in epoll; a thread of its own keeps the
 * event loop, and with it the TTL scans and the other clients, running
 * while another process (nfslice attach, migrate, ...) holds the lock.
 * One thread, so the jobs that take the lock never contend with each
 * other and run in the order posted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "nfsliced.h"

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct mgr_job *todo, **todo_tail = &todo; /* under mu */
static struct mgr_job *done, **done_tail = &done; /* under mu */
static bool stopping;                             /* under mu */
static int efd = -1;

static void run_job(struct mgr_job *j)
{
	switch (j->kind) {
	case MGR_JOB_REQUEST:
		/* A client that left before its turn (its timeout ran out
		 * while the lock was held) changes nothing. */
		if (!atomic_load(&j->cancelled))
			j->resp = mgr_handle(&j->req);
		break;
	case MGR_JOB_GC:
		j->result = mgr_gc();
		break;
	case MGR_JOB_TENANTS:
		mgr_tenants_tick(j->now);
		break;
	}
}

static void *worker(void *arg)
{
	__u64 one = 1;

	pthread_mutex_lock(&mu);
	for (;;) {
		struct mgr_job *j;

		while (!todo && !stopping)
			pthread_cond_wait(&cv, &mu);
		if (stopping)
			break;
		j = todo;
		todo = j->next;
		if (!todo)
			todo_tail = &todo;
		j->next = NULL;
		pthread_mutex_unlock(&mu);
		run_job(j);
		pthread_mutex_lock(&mu);
		*done_tail = j;
		done_tail = &j->next;
		if (write(efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow at one per job. */
		}
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

int mgr_worker_start(void)
{
	int err;

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	err = pthread_create(&thread, NULL, worker, NULL);
	if (err) {
		close(efd);
		efd = -1;
		return -err;
	}
	return efd;
}

void mgr_worker_post(struct mgr_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&mu);
	*todo_tail = j;
	todo_tail = &j->next;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

struct mgr_job *mgr_worker_done(void)
{
	struct mgr_job *list;
	__u64 n;

	if (read(efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing new since the last call. */
	}
	pthread_mutex_lock(&mu);
	list = done;
	done = NULL;
	done_tail = &done;
	pthread_mutex_unlock(&mu);
	return list;
}

bool mgr_worker_stop(unsigned int wait_ms)
{
	struct timespec until;
	bool stopped;

	if (efd < 0)
		return true;
	pthread_mutex_lock(&mu);
	stopping = true;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += wait_ms % 1000 * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	/* A job waiting for the lock cannot be interrupted: leave it to the
	 * process's exit rather than wait for another process. */
	stopped = !pthread_timedjoin_np(thread, NULL, &until);
	while (stopped && todo) {
		struct mgr_job *j = todo;

		todo = j->next;
		free(j);
	}
	while (stopped && done) {
		struct mgr_job *j = done;

		done = j->next;
		json_decref(j->resp);
		free(j);
	}
	if (stopped) {
		close(efd);
		efd = -1;
	}
	return stopped;
}
