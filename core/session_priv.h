/* core/session_priv.h - the inside of struct ps_session, shared by session.c (the hit path)
 * and session_regions.c (names to breakpoints). Not for use outside the core. */
#ifndef PS_SESSION_PRIV_H
#define PS_SESSION_PRIV_H

#include <limits.h>

#include "group.h"
#include "lines.h"
#include "ring.h"
#include "session.h"
#include "symbols.h"
#include "tracer.h"

/* What a breakpoint means to a region. */
enum role_kind { ROLE_ENTRY = 1, ROLE_START, ROLE_END, ROLE_MAIN };

#define ROLES_PER_BP 8
struct bpent {
	int nroles;
	struct {
		int region;
		enum role_kind kind;
	} roles[ROLES_PER_BP];
};

/* An open measurement: the start of a hit, waiting for its end. */
struct slot {
	int region;
	int next_free;
	uint32_t depth;
	int16_t cpu;
	uint64_t t;
	struct ps_reading r;
};

#define PS_MAX_GROUPS 4

struct thr {
	pid_t tid;
	struct thr *next;
	struct ps_group g[PS_MAX_GROUPS];
	struct slot *slots;
	int nslots, cap, free_head;
	int32_t active[PS_MAX_REGIONS]; /* open slot of a region on this thread, -1 */
	uint32_t depth[PS_MAX_REGIONS]; /* recursion depth (every-level regions) */
};

#define THR_BUCKETS 256

struct ps_session {
	struct ps_tracer *t;
	pid_t pid;
	struct ps_event ev[PS_MAX_EVENTS];
	int nev;
	int ngroups;                /* the events form ngroups groups, in order */
	int gsize[PS_MAX_GROUPS];
	int started;
	struct thr *threads[THR_BUCKETS];
	struct ps_region_info reg[PS_MAX_REGIONS];
	int nreg;
	struct bpent *bps;
	int nbps;
	int main_bp; /* where pending library regions get armed, -1 */
	struct ps_ring *ring;
	unsigned char *store;
	uint64_t nstore, capstore;
	size_t recsize;
	uint64_t seq, written_at_run_start, max_records, deadline;
	uint64_t dropped;
	struct ps_symtab *sym;
	struct ps_lines *lines;
	char exe[PATH_MAX];
	char notice[2048];
	struct ps_error fail; /* an error met inside a callback */
	int failed;
};

/* session_regions.c */
int ps__bp_role(struct ps_session *s, uint64_t addr, int kind, int region, enum role_kind role, struct ps_error *err);
int ps__arm_pending(struct ps_session *s);
int ps__rearm_after_exec(struct ps_session *s);
void ps__forget_images(struct ps_session *s);
void ps__notice(struct ps_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
