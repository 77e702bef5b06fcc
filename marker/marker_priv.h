/* marker/marker_priv.h - the marker library's state (marker.c: the hit path; marker_read.c:
 * counter reads; marker_out.c: configuration, the file, exit and signals; marker_live.c: the
 * memory shared with perfsh when it started the program, core/catch/marker/markshm.h). */
#ifndef PS_MARKER_PRIV_H
#define PS_MARKER_PRIV_H

#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>

#include "group.h"
#include "markshm.h"
#include "perfsh/marker.h"
#include "psnap.h"
#include "ring.h"
#include "snapshot.h"

#define PM_RING_BYTES (512u << 10) /* a thread's buffer, about */

/* How a thread's group is read (chosen once at start-up, the same for every thread). */
enum pm_read_mode { PM_READ_SYSCALL = 0, PM_READ_RDPMC = 1 };

/* The counters of one thread: its group and, in rdpmc mode, each member's mmap page. */
struct pm_counters {
	struct ps_group g;
	struct perf_event_mmap_page *page[PS_MAX_EVENTS];
};

/* One open hit on a thread's stack. */
struct pm_frame {
	int32_t id;
	uint32_t sampled;
	uint64_t hit;
	uint64_t t_start;
	uint64_t enabled, running;
	int16_t cpu;
	uint64_t args[PS_MARKER_FIELDS];
	uint64_t start[PS_MAX_EVENTS];
};

/*
 * A thread's state. Its ring (core/hitpath/ring.h) is single-producer: the thread writes records at
 * head and publishes head (release). The consumer, who publishes tail: whoever holds the global
 * lock, copying [tail, head) to the file; or perfsh, when the ring is in a shared slot.
 * @cnt and @entries are the thread's own (file mode) or its slot's (shared mode).
 */
struct pm_thread {
	struct pm_thread *next; /* the global list, under the lock */
	uint32_t tid;
	int off; /* its group failed to open: this thread records nothing */
	struct pm_counters c;
	uint64_t rng, every;
	uint32_t depth, too_deep;
	uint64_t seq;
	struct ps_ring *ring;
	uint64_t lost; /* records the writer could not write (file mode); ring->dropped: full ring */
	struct ps_mshm_counts own, *cnt;
	uint64_t *entries;	   /* begins per region id */
	struct ps_mshm_slot *slot; /* shared mode: the thread's slot */
	struct pm_frame stack[PS_MARKER_DEPTH];
};

struct pm_global {
	int on; /* markers set up (a thread's first hit looks): 0 = off in this process */
	/* what a hit reads: the policy and the armed regions, the process's own (file mode) or the
	   shared control block's, which perfsh changes live */
	struct ps_mshm_policy *pol, own_pol;
	uint8_t *armed, own_armed[PS_MARKER_REGIONS];
	struct ps_mshm_ctl *ctl; /* shared mode: perfsh's control block, else NULL */
	size_t ctl_bytes;
	int nev;
	struct ps_event ev[PS_MAX_EVENTS];
	size_t recsize;
	enum pm_read_mode mode;
	double read_ns, rdpmc_ns; /* measured at start-up; rdpmc_ns < 0: not available */
	char rdpmc_why[96];
	/* under the lock */
	int lock; /* tid of its holder, 0 if free */
	struct ps_psnap_writer *w;
	int closed, failed;
	struct pm_thread *threads;
	int nregions;
	char *names[PS_MARKER_REGIONS];
	uint64_t entries[PS_MARKER_REGIONS]; /* of threads gone, as the next four */
	uint64_t lost, unmatched, fast, nthreads;
	struct sigaction prev[2]; /* SIGTERM, SIGINT before ours */
};

extern struct pm_global pm_g;

/* read(2) as a bare system call: not a cancellation point (libc's read() is, and costs its
   enable/disable of asynchronous cancellation on every call). */
static inline long pm_sys_read(int fd, void *buf, unsigned long n)
{
	long rc;

	__asm__ __volatile__("syscall"
			     : "=a"(rc)
			     : "0"(0L /* SYS_read */), "D"((long)fd), "S"(buf), "d"(n)
			     : "rcx", "r11", "memory");
	return rc;
}

/* marker_read.c */
int pm_counters_open(struct pm_counters *c, const struct ps_event *ev, int n, enum pm_read_mode mode,
		     struct ps_error *err);
void pm_counters_close(struct pm_counters *c);
/* Values of the group into @val, its times into @enabled and @running. */
void pm_counters_read(struct pm_counters *c, enum pm_read_mode mode, uint64_t *val, uint64_t *enabled,
		      uint64_t *running);
/* Open the events on this thread, time both ways of reading, fill pm_g.mode and the figures. */
int pm_choose_mode(struct ps_error *err);

/* marker_out.c */
void pm_init(void);
/* The SIGTERM and SIGINT handlers, installed once, at the first thread's first hit. */
void pm_first_hit(void);
uint32_t pm_gettid(void);
int pm_lock(int in_signal);
void pm_unlock(void);
/* Copy @t's buffered records to the file (the lock held). */
void pm_drain(struct pm_thread *t);
/* A full ring: drain it under the lock. */
void pm_ring_full(struct pm_thread *t);
/* Region @id is @name: REGN and its META pairs (the lock held). */
void pm_name_region(int id, const char *name);
/* Drain every thread's buffer (the lock held). */
void pm_drain_all(void);
void pm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* marker_writer.c: the background writer thread */
int pm_writer_start(void);
void pm_writer_wake(void);   /* a thread's buffer is half full */
void pm_writer_stop(void);   /* at exit: the thread joined */
void pm_writer_forget(void); /* in a forked child, where it does not exist */

/* marker.c */
void pm_thread_forget(struct pm_thread *t); /* its totals to pm_g (the lock held) */
void pm_thread_off(void);		    /* in a forked child: the forking thread records nothing */

/* marker_live.c: shared mode */
/* PERFSH_CONTROL=@path: map perfsh's control block, take it, resolve its events. 0, or -1 after
   a warning (markers off, the reason given back to perfsh when the block could be read). */
int pm_live_init(const char *path);
/* This thread's slot: its ring, counts and entries into @t. 0, or -1 (no free slot: counted). */
int pm_live_slot(struct pm_thread *t);
void pm_live_slot_gone(struct pm_thread *t);
/* Region @id is @name: published in the block, armed when perfsh asked for it. */
void pm_live_region(int id, const char *name);
/* Resolve the comma-separated @list into pm_g.ev; -1 with @err. */
int pm_events(const char *list, struct ps_error *err);

#endif
