/* tests/c/test_tracer.c - the tracer (core/proc/) with the ptrace catcher's breakpoints (core/catch/ptrace/
 * ptrace_bp.h) and core/binary/x86/x86insn.c against real processes.
 *
 * tests/fixtures/tracer_fx.c is compiled at run time (cc -O2 -g, PIE and -no-pie) into a
 * temporary directory; function addresses come from nm plus ps_tracer_load_bias().
 */
#include "ctest.h"
#include "fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptrace_bp.h"
#include "symbols.h"
#include "x86insn.h"

#define FX_SRC "tracer_fx.c"

static const char *fixtures(void)
{
	return fixtures_dir(FX_SRC);
}

/* The fixture binary, built once: PIE (@pie=1) or -no-pie. NULL if cc fails. */
static const char *fx(int pie)
{
	static char path[2][600];
	static int tried[2];
	char cmd[2048];

	if (tried[pie])
		return path[pie][0] ? path[pie] : NULL;
	tried[pie] = 1;
	const char *tmpdir = fixtures_tmpdir();
	if (!tmpdir)
		return NULL;
	snprintf(path[pie], sizeof path[pie], "%s/fx%s", tmpdir, pie ? "" : "-nopie");
	/* the -no-pie build also has endbr64 at function entries (emulated entry) */
	snprintf(cmd, sizeof cmd, "cc -O2 -g %s -pthread %s/%s -o %s",
		 pie ? "-fPIE -pie" : "-no-pie -fcf-protection=full",
		 fixtures(), FX_SRC, path[pie]);
	if (system(cmd) != 0)
		path[pie][0] = '\0';
	return path[pie][0] ? path[pie] : NULL;
}

/* Address of symbol @name in the file @bin (from nm), 0 if not found. */
static uint64_t nm_addr(const char *bin, const char *name)
{
	char cmd[700], line[512], sym[256], type;
	unsigned long long a;
	uint64_t r = 0;
	FILE *f;

	snprintf(cmd, sizeof cmd, "nm %s", bin);
	if (!(f = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, name))
			r = a;
	pclose(f);
	return r;
}

/* Address (in the file) of the @k-th instruction (from 0) of function @func, from
 * objdump -d; 0 if not found. */
static uint64_t objdump_insn(const char *bin, const char *func, int k)
{
	char cmd[700], line[512], head[300];
	unsigned long long a;
	uint64_t r = 0;
	int in = 0;
	FILE *f;

	snprintf(cmd, sizeof cmd, "objdump -d --no-show-raw-insn %s", bin);
	snprintf(head, sizeof head, "<%s>:", func);
	if (!(f = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (!in) {
			in = strstr(line, head) != NULL;
			continue;
		}
		if (sscanf(line, " %llx:", &a) != 1)
			break;
		if (k-- == 0) {
			r = a;
			break;
		}
	}
	while (fgets(line, sizeof line, f))
		;
	pclose(f);
	return r;
}

/* ---- recording callbacks */

struct ev {
	char type; /* h: hit, r: return */
	pid_t tid;
	int bp;
	uint64_t cookie;
	int unwound;
};

struct rec {
	struct ev ev[8192];
	int n;
	uint64_t next_cookie;
	int catch_ret;  /* hit() returns CATCH_RETURN */
	int pause_at;   /* hit() returns PAUSE at this many hits (0: never) */
	int hits, rets, unwound, nnew, nexit, nexec;
};

static int cb_new(void *ud, pid_t tid)
{
	(void)tid;
	((struct rec *)ud)->nnew++;
	return 0;
}

static void cb_exit(void *ud, pid_t tid)
{
	(void)tid;
	((struct rec *)ud)->nexit++;
}

static int cb_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct rec *r = ud;

	(void)regs;
	*cookie = ++r->next_cookie;
	if (r->n < (int)(sizeof r->ev / sizeof r->ev[0]))
		r->ev[r->n++] = (struct ev){'h', tid, bp, *cookie, 0};
	r->hits++;
	int rc = r->catch_ret ? PS_TRACER_CATCH_RETURN : 0;
	if (r->pause_at && r->hits == r->pause_at)
		rc |= PS_TRACER_PAUSE;
	return rc;
}

static int cb_ret(void *ud, pid_t tid, int bp, uint64_t cookie, int unwound)
{
	struct rec *r = ud;

	if (r->n < (int)(sizeof r->ev / sizeof r->ev[0]))
		r->ev[r->n++] = (struct ev){'r', tid, bp, cookie, unwound};
	r->rets++;
	r->unwound += unwound;
	return 0;
}

static int cb_exec(void *ud, pid_t pid)
{
	(void)pid;
	((struct rec *)ud)->nexec++;
	return 0;
}

static const struct ps_tracer_ops ops = {cb_new, cb_exit, cb_hit, cb_ret, cb_exec};

/* Every return matches the latest open entry of its own thread (LIFO per tid). */
static int paired(const struct rec *r)
{
	struct open {
		pid_t tid;
		uint64_t cookie;
	} *st = malloc(sizeof *st * (size_t)(r->n + 1));
	int n = 0, ok = 1;

	for (int i = 0; i < r->n && ok; i++) {
		const struct ev *e = &r->ev[i];
		if (e->type == 'h') {
			st[n++] = (struct open){e->tid, e->cookie};
			continue;
		}
		int j = n - 1;
		while (j >= 0 && st[j].tid != e->tid)
			j--;
		if (j < 0 || st[j].cookie != e->cookie) {
			fprintf(stderr, "  event %d: return of %" PRIu64 " on %d unpaired\n", i, e->cookie,
				(int)e->tid);
			ok = 0;
			break;
		}
		memmove(&st[j], &st[j + 1], sizeof *st * (size_t)(n - j - 1));
		n--;
	}
	free(st);
	return ok;
}

/* Spawn @argv with stdout to @out (NULL: /dev/null). */
static struct ps_tracer *spawn_out(char *const argv[], const char *out, struct rec *r,
				   struct ps_error *err)
{
	struct ps_tracer *t = NULL;
	int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644), saved;

	fflush(stdout);
	saved = dup(1);
	dup2(fd, 1);
	close(fd);
	ps_tracer_spawn(&t, argv, &ops, r, err);
	dup2(saved, 1);
	close(saved);
	return t;
}

/* Output of an untraced run of the fixture. */
static void plain_run(char *const argv[], const char *out)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(c, &st, 0);
}

static char *slurp(const char *path)
{
	static char buf[2][1 << 16];
	static int k;
	char *b = buf[k ^= 1];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof buf[0] - 1) : -1;

	b[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return b;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int tmpfile_path(char *buf, size_t n, const char *name)
{
	return snprintf(buf, n, "%s/%s", fixtures_tmpdir(), name) < (int)n;
}

/* ---- tests */

TEST(tracer_x86_decode_table)
{
	static const struct {
		const char *bytes;
		int len, riprel;
	} rows[] = {
		{"\xf3\x0f\x1e\xfa", 4, 0},                         /* endbr64 */
		{"\x55", 1, 0},                                     /* push %rbp */
		{"\x41\x57", 2, 0},                                 /* push %r15 */
		{"\x48\x89\xe5", 3, 0},                             /* mov %rsp,%rbp */
		{"\x48\x83\xec\x10", 4, 0},                         /* sub $0x10,%rsp */
		{"\x48\x81\xec\x00\x10\x00\x00", 7, 0},             /* sub $0x1000,%rsp */
		{"\x48\x8b\x05\x10\x20\x30\x40", 7, 1},             /* mov 0x..(%rip),%rax */
		{"\x48\x83\x05\x10\x20\x30\x40\x01", 8, 1},         /* addq $1,0x..(%rip) */
		{"\xe8\x00\x00\x00\x00", 5, 0},                     /* call rel32 */
		{"\x0f\x84\x00\x00\x00\x00", 6, 0},                 /* je rel32 */
		{"\x66\x0f\x1f\x44\x00\x00", 6, 0},                 /* nopw 0(%rax,%rax) */
		{"\x66\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00", 10, 0}, /* cs nopw */
		{"\x48\xb8\x01\x02\x03\x04\x05\x06\x07\x08", 10, 0}, /* movabs */
		{"\x66\xb8\x01\x02", 4, 0},                         /* mov $imm16,%ax */
		{"\xc5\xf9\x6f\x05\x00\x00\x00\x00", 8, 1},         /* vmovdqa 0(%rip),%xmm0 */
		{"\xc4\xe3\x79\x0f\xc1\x08", 6, 0},                 /* vpalignr $8 */
		{"\x62\xf1\x7c\x48\x28\x05\x00\x00\x00\x00", 10, 1}, /* vmovaps 0(%rip),%zmm0 */
		{"\xf7\x05\x00\x00\x00\x00\x01\x00\x00\x00", 10, 1}, /* testl $1,0(%rip) */
		{"\xf6\xc1\x01", 3, 0},                             /* test $1,%cl */
		{"\xf7\xd8", 2, 0},                                 /* neg %eax */
		{"\x66\x0f\x3a\x0f\xc1\x08", 6, 0},                 /* palignr */
		{"\x0f\x38\xf0\x07", 4, 0},                         /* movbe (%rdi),%eax */
		{"\xff\x25\x00\x00\x00\x00", 6, 1},                 /* jmp *0(%rip) */
		{"\x8b\x44\x24\x08", 4, 0},                         /* mov 8(%rsp),%eax */
		{"\x8b\x04\x25\x00\x00\x00\x00", 7, 0},             /* mov abs32,%eax (SIB, no base) */
		{"\xc8\x10\x00\x01", 4, 0},                         /* enter */
		{"\x0f\x05", 2, 0},                                 /* syscall */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_x86_insn in;
		const uint8_t *b = (const uint8_t *)rows[i].bytes;
		uint8_t buf[16] = {0};
		memcpy(buf, b, (size_t)rows[i].len);
		int rc = ps_x86_decode(buf, sizeof buf, 0x1000, &in);
		CHECK_EQ_INT(rc, 0);
		if (rc == 0 && (in.len != rows[i].len || in.riprel != rows[i].riprel))
			fprintf(stderr, "  row %zu: len %d riprel %d\n", i, in.len, in.riprel);
		CHECK_EQ_INT(in.len, rows[i].len);
		CHECK_EQ_INT(in.riprel, rows[i].riprel);
	}
	uint8_t bad[16] = {0x06};
	struct ps_x86_insn in;
	CHECK_EQ_INT(ps_x86_decode(bad, sizeof bad, 0x1000, &in), -1);
}

/* Every instruction objdump shows in libc's text decodes to objdump's length. */
TEST(tracer_x86_decode_libc)
{
	FILE *f = popen("objdump -d --no-addresses /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null", "r");
	char line[512];
	uint8_t cur[32];
	int ncur = 0, total = 0, wrong = 0, have = 0;

	if (!f)
		SKIP("no objdump");
	/* lines: "\t<bytes>\t<mnemonic>" and continuation lines "\t<bytes>" */
	for (;;) {
		int eof = !fgets(line, sizeof line, f);
		int newinsn = 0, bad = 0;
		uint8_t bytes[16];
		int nb = 0;
		if (!eof) {
			char *p = line, *tab2;
			if (*p != '\t') {
				newinsn = -1; /* label or blank: ends the instruction */
			} else {
				p++;
				tab2 = strchr(p, '\t');
				newinsn = tab2 != NULL;
				if (tab2) {
					bad = strstr(tab2, "(bad)") != NULL || strstr(tab2, ".byte") != NULL;
					*tab2 = '\0';
				}
				unsigned v;
				int k;
				while (nb < 16 && sscanf(p, " %2x%n", &v, &k) == 1) {
					bytes[nb++] = (uint8_t)v;
					p += k;
				}
			}
		}
		if ((eof || newinsn) && have && ncur > 0) {
			struct ps_x86_insn in;
			total++;
			if (ps_x86_decode(cur, (size_t)ncur, 0x1000, &in) || in.len != ncur) {
				if (wrong++ < 5) {
					fprintf(stderr, "  len %d, objdump %d:", ps_x86_decode(cur, (size_t)ncur, 0x1000, &in) ? -1 : in.len, ncur);
					for (int i = 0; i < ncur; i++)
						fprintf(stderr, " %02x", cur[i]);
					fprintf(stderr, "\n");
				}
			}
			have = 0;
			ncur = 0;
		}
		if (eof)
			break;
		if (newinsn == 1) {
			have = !bad;
			ncur = 0;
		}
		if (newinsn >= 0)
			for (int i = 0; i < nb && ncur < 32; i++)
				cur[ncur++] = bytes[i];
	}
	pclose(f);
	if (total < 1000)
		SKIP("objdump gave %d instructions", total);
	if (wrong)
		fprintf(stderr, "  %d of %d instructions decoded to another length\n", wrong, total);
	CHECK_EQ_INT(wrong, 0);
}

/* Spawn the fixture in @mode, FUNC breakpoint on @func catching returns, run to the end. */
static void run_calls(struct ctest *ctest_self, int pie)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(pie);
	char n[] = "1000";

	if (!bin) {
		snprintf(ctest_self->skipped, sizeof ctest_self->skipped, "cc failed");
		return;
	}
	char *argv[] = {(char *)bin, "calls", n, NULL};
	memset(&r, 0, sizeof r);
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "  %s\n", err.msg);
		return;
	}
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(bias != PS_TRACER_NO_BIAS);
	if (!pie)
		CHECK_EQ_INT(bias, 0);
	int id = ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err);
	CHECK(id >= 0);
	double t0 = now();
	uint64_t s0 = ps_tracer_stops(t);
	int rc = ps_tracer_run(t, &err);
	double dt = now() - t0;
	CHECK_EQ_INT(rc, 1);
	if (rc < 0)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK_EQ_INT(r.hits, 1000);
	CHECK_EQ_INT(r.rets, 1000);
	CHECK_EQ_INT(r.unwound, 0);
	CHECK(paired(&r));
	CHECK_EQ_INT(r.nnew, 1);
	CHECK_EQ_INT(r.nexit, 1);
	int exited, code, signo;
	CHECK_EQ_INT(ps_tracer_status(t, &exited, &code, &signo), 1);
	CHECK_EQ_INT(code, 3);
	CHECK_EQ_INT(signo, 0);
	printf("     %s: %.2f stops/call, %.1f us/call (entry+return caught)\n", pie ? "pie" : "no-pie",
	       (double)(ps_tracer_stops(t) - s0) / 1000.0, dt * 1e6 / 1000.0);
	ps_tracer_free(t);
}

TEST(tracer_calls_pie)
{
	run_calls(ctest_self, 1);
}

TEST(tracer_calls_nopie)
{
	run_calls(ctest_self, 0);
}

TEST(tracer_recursion)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "rec", NULL};
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_rec") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	/* fx_rec(10) opens 10 levels (10..1); 5 calls: 50 entries, 50 returns */
	CHECK_EQ_INT(r.hits, 50);
	CHECK_EQ_INT(r.rets, 50);
	CHECK_EQ_INT(r.unwound, 0);
	CHECK(paired(&r));
	/* returns come in LIFO order: depth 10 opens 10 frames before the first return */
	CHECK(r.n == 100 && r.ev[9].type == 'h' && r.ev[10].type == 'r' &&
	      r.ev[10].cookie == r.ev[9].cookie && r.ev[19].cookie == r.ev[0].cookie);
	ps_tracer_free(t);
}

TEST(tracer_two_threads)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "threads", "1000", NULL};
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err) >= 0);
	int rc = ps_tracer_run(t, &err);
	CHECK_EQ_INT(rc, 1);
	if (rc < 0)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK_EQ_INT(r.hits, 2000);
	CHECK_EQ_INT(r.rets, 2000);
	CHECK_EQ_INT(r.unwound, 0);
	CHECK(paired(&r));
	CHECK_EQ_INT(r.nnew, 3);
	CHECK_EQ_INT(r.nexit, 3);
	int tids = 0;
	pid_t seen[4] = {0};
	for (int i = 0; i < r.n; i++) {
		int k = 0;
		while (k < tids && seen[k] != r.ev[i].tid)
			k++;
		if (k == tids && tids < 4)
			seen[tids++] = r.ev[i].tid;
	}
	CHECK_EQ_INT(tids, 2);
	int code;
	ps_tracer_status(t, NULL, &code, NULL);
	CHECK_EQ_INT(code, 0);
	ps_tracer_free(t);
}

/* PS_BP_ADDR on a rip-relative instruction in a loop body (run out of line), and on
 * the second instruction of fx_work; the output is unchanged. */
TEST(tracer_addr_bp)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);
	char out[700], want[700];

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "loop", "500", NULL};
	tmpfile_path(out, sizeof out, "addr.out");
	tmpfile_path(want, sizeof want, "addr.want");
	plain_run(argv, want);
	struct ps_tracer *t = spawn_out(argv, out, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	int a = ps_tracer_bp_add(t, nm_addr(bin, "fx_mid") + bias, PS_BP_ADDR, &err);
	CHECK(a >= 0);
	uint64_t s0 = ps_tracer_stops(t);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	CHECK_EQ_INT(r.hits, 500);
	CHECK_EQ_INT(r.rets, 0);
	CHECK_STR(slurp(out), slurp(want));
	CHECK(strstr(slurp(out), " 500\n") != NULL);
	printf("     out of line: %.2f stops/hit\n", (double)(ps_tracer_stops(t) - s0) / 500.0);
	ps_tracer_free(t);

	/* the 2nd instruction of fx_work, whatever it is */
	char *argv2[] = {(char *)bin, "calls", "300", NULL};
	tmpfile_path(out, sizeof out, "addr2.out");
	tmpfile_path(want, sizeof want, "addr2.want");
	plain_run(argv2, want);
	memset(&r, 0, sizeof r);
	t = spawn_out(argv2, out, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	bias = ps_tracer_load_bias(t, NULL);
	a = ps_tracer_bp_add(t, objdump_insn(bin, "fx_work", 1) + bias, PS_BP_ADDR, &err);
	CHECK(a >= 0);
	if (a < 0)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	CHECK_EQ_INT(r.hits, 300);
	CHECK_STR(slurp(out), slurp(want));
	ps_tracer_free(t);
}

TEST(tracer_segv)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "segv", NULL};
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_crash") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	CHECK_EQ_INT(r.hits, 1);
	CHECK_EQ_INT(r.rets, 1);
	CHECK_EQ_INT(r.unwound, 1);
	CHECK(r.n == 2 && r.ev[0].type == 'h');
	int exited, code, signo;
	ps_tracer_status(t, &exited, &code, &signo);
	CHECK_EQ_INT(exited, 1);
	CHECK_EQ_INT(signo, SIGSEGV);
	ps_tracer_free(t);
}

/* Start the fixture's "slow" mode (@n calls, 2 ms apart), its output into file @out, after an
   untraced run into @want (both @len bytes, named after @tag); its pid, 100 ms after. */
static pid_t start_slow(const char *bin, const char *n, char *out, char *want, size_t len, const char *tag)
{
	char *argv[] = {(char *)bin, "slow", (char *)n, NULL}, name[64];

	snprintf(name, sizeof name, "%s.out", tag);
	tmpfile_path(out, len, name);
	snprintf(name, sizeof name, "%s.want", tag);
	tmpfile_path(want, len, name);
	plain_run(argv, want);
	pid_t c = fork();
	if (c == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		execv(bin, argv);
		_exit(127);
	}
	usleep(100000);
	return c;
}

TEST(tracer_attach_detach)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);
	char out[700], want[700];
	int st;

	if (!bin)
		SKIP("cc failed");
	pid_t c = start_slow(bin, "300", out, want, sizeof out, "slow");
	r.catch_ret = 1;
	r.pause_at = 20;
	struct ps_tracer *t = NULL;
	int rc = ps_tracer_attach(&t, c, &ops, &r, &err);
	CHECK_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "  %s\n", err.msg);
		kill(c, SIGKILL);
		waitpid(c, &st, 0);
		return;
	}
	CHECK_EQ_INT(ps_tracer_pid(t), c);
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err) >= 0);
	rc = ps_tracer_run(t, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(r.hits, 20);
	CHECK_EQ_INT(r.nnew, 1);
	int cpu = ps_tracer_cpu(t, c);
	CHECK(cpu >= 0 && cpu < 1024);
	CHECK_EQ_INT(ps_tracer_detach(t, &err), 0);
	ps_tracer_free(t);
	/* the 20th call's return address was swapped and is restored: the program ends well */
	CHECK_EQ_INT(waitpid(c, &st, 0), c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_STR(slurp(out), slurp(want));
}

/* /proc/@pid/maps into @buf (@n bytes), read to its end. */
static void read_maps(pid_t pid, char *buf, size_t n)
{
	char path[64];
	size_t len = 0;
	ssize_t got = 1;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY)) < 0)
		return;
	while (len + 1 < n && (got = read(fd, buf + len, n - 1 - len)) > 0)
		len += (size_t)got;
	buf[len] = '\0';
	close(fd);
}

/* Each attach ran a displaced instruction out of line in a scratch page it mapped; each detach
   unmaps it: the memory map is the one found before the first attach, and the program ends as
   if never traced. */
TEST(tracer_detach_leaves_the_memory_map_as_found)
{
	static struct rec r;
	static char before[1 << 14], during[1 << 14], after[1 << 14];
	struct ps_error err = {0};
	const char *bin = fx(1);
	char out[700], want[700];
	int st;

	if (!bin)
		SKIP("cc failed");
	pid_t c = start_slow(bin, "400", out, want, sizeof out, "maps");
	read_maps(c, before, sizeof before);
	for (int cycle = 0; cycle < 4; cycle++) {
		struct ps_tracer *t = NULL;
		memset(&r, 0, sizeof r);
		r.catch_ret = 1;
		r.pause_at = 5;
		CHECK_EQ_INT(ps_tracer_attach(&t, c, &ops, &r, &err), 0);
		if (!t) {
			fprintf(stderr, "  %s\n", err.msg);
			break;
		}
		/* fx_work begins with a rip-relative load: run out of line */
		uint64_t work = nm_addr(bin, "fx_work") + ps_tracer_load_bias(t, NULL);
		CHECK(ps_tracer_bp_add(t, work, PS_BP_FUNC, &err) >= 0);
		CHECK_EQ_INT(ps_tracer_run(t, &err), 0);
		CHECK_EQ_INT(r.hits, 5);
		read_maps(c, during, sizeof during);
		CHECK(strcmp(during, before) != 0); /* the scratch page is there */
		CHECK_EQ_INT(ps_tracer_detach(t, &err), 0);
		ps_tracer_free(t);
		read_maps(c, after, sizeof after);
		CHECK_STR(after, before);
	}
	CHECK_EQ_INT(waitpid(c, &st, 0), c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_STR(slurp(out), slurp(want));
}

/* Field 39 of /proc/PID/task/TID/stat: the CPU the thread last ran on. */
static int stat_cpu(pid_t tid)
{
	char path[64], buf[1024];
	int fd, cpu = -1;

	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)tid, (int)tid);
	if ((fd = open(path, O_RDONLY)) < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *s = strrchr(buf, ')');
	for (int field = 2; s && field < 39; field++)
		s = strchr(s + 1, ' ');
	if (s)
		cpu = atoi(s + 1);
	return cpu;
}

/* ps_tracer_cpu() reads the rseq area's cpu_id: at a stop it is the CPU /proc says (it may
   differ only when the thread moved inside the kernel between its last instruction and the
   stop, so most stops, not all, must agree). */
TEST(tracer_cpu_rseq)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);
	char n[] = "1000";
	int agree = 0, samples = 0;

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "calls", n, NULL};
	memset(&r, 0, sizeof r);
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + ps_tracer_load_bias(t, NULL), PS_BP_FUNC, &err) >= 0);
	for (r.pause_at = 1; samples < 40 && ps_tracer_run(t, &err) == 0; r.pause_at = r.hits + 1, samples++) {
		int cpu = ps_tracer_cpu(t, ps_tracer_pid(t)), want = stat_cpu(ps_tracer_pid(t));
		CHECK(cpu >= 0 && cpu < 4096);
		agree += cpu == want;
	}
	CHECK_EQ_INT(samples, 40);
	CHECK(agree >= samples / 2);
	ps_tracer_free(t);
}

TEST(tracer_longjmp_unwound)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "jmp", NULL};
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_jumper") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	CHECK_EQ_INT(r.hits, 4);
	CHECK_EQ_INT(r.rets, 4);
	CHECK_EQ_INT(r.unwound, 3);
	/* h1 u1 h2 u2 h3 u3 h4 r4 */
	CHECK(r.n == 8);
	for (int i = 0; i + 1 < r.n; i += 2) {
		CHECK(r.ev[i].type == 'h' && r.ev[i + 1].type == 'r');
		CHECK(r.ev[i].cookie == r.ev[i + 1].cookie);
		CHECK_EQ_INT(r.ev[i + 1].unwound, i < 6);
	}
	int code;
	ps_tracer_status(t, NULL, &code, NULL);
	CHECK_EQ_INT(code, 0);
	ps_tracer_free(t);
}

TEST(tracer_spawn_missing)
{
	struct ps_tracer *t = (struct ps_tracer *)1;
	struct ps_error err = {0};
	char *argv[] = {"/nonexistent/perfsh-no-such-program", NULL};

	CHECK_EQ_INT(ps_tracer_spawn(&t, argv, &ops, NULL, &err), -1);
	CHECK(t == NULL);
	CHECK_EQ_INT(err.code, ENOENT);
	CHECK_STR(err.msg, "cannot run '/nonexistent/perfsh-no-such-program': no such program; give the path of a "
			   "program");
}

TEST(tracer_fork_released)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);
	char out[700], want[700];

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "fork", NULL};
	tmpfile_path(out, sizeof out, "fork.out");
	tmpfile_path(want, sizeof want, "fork.want");
	plain_run(argv, want);
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, out, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_forker") + bias, PS_BP_FUNC, &err) >= 0);
	int rc = ps_tracer_run(t, &err);
	CHECK_EQ_INT(rc, 1);
	if (rc < 0)
		fprintf(stderr, "  %s\n", err.msg);
	/* the parent only: fx_forker once, fx_work once */
	CHECK_EQ_INT(r.hits, 2);
	CHECK_EQ_INT(r.rets, 2);
	CHECK_EQ_INT(r.unwound, 0);
	CHECK(paired(&r));
	CHECK_STR(slurp(out), slurp(want));
	CHECK(strstr(slurp(out), "child-status 0\n") != NULL);
	ps_tracer_free(t);
}

TEST(tracer_fork_followed)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "fork", NULL};
	r.catch_ret = 1;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	ps_tracer_set_follow_fork(t, 1);
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_forker") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	/* parent: fx_forker + fx_work; child: 100 fx_work, and the inherited fx_forker frame */
	CHECK_EQ_INT(r.hits, 102);
	CHECK_EQ_INT(r.rets, 103);
	CHECK_EQ_INT(r.nnew, 2);
	CHECK_EQ_INT(r.nexit, 2);
	int code;
	ps_tracer_status(t, NULL, &code, NULL);
	CHECK_EQ_INT(code, 0);
	ps_tracer_free(t);
}

/* Freeing a tracer in the middle kills and reaps the spawned child. */
TEST(tracer_free_kills)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "threads", "100000", NULL};
	r.catch_ret = 1;
	r.pause_at = 50;
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	pid_t pid = ps_tracer_pid(t);
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK(ps_tracer_bp_add(t, nm_addr(bin, "fx_work") + bias, PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 0);
	CHECK_EQ_INT(r.hits, 50);
	ps_tracer_free(t);
	CHECK(kill(pid, 0) == -1 && errno == ESRCH);
}

/* Pause at main (libraries are mapped by then), add a breakpoint in libc, continue. */
static int lib_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct rec *r = ud;

	(void)tid;
	(void)regs;
	*cookie = (uint64_t)bp;
	r->hits++;
	return bp == 0 ? PS_TRACER_PAUSE : PS_TRACER_CATCH_RETURN;
}

TEST(tracer_pause_libc)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(1);
	struct ps_tracer_ops o = ops;

	if (!bin)
		SKIP("cc failed");
	o.hit = lib_hit;
	char *argv[] = {(char *)bin, "calls", "10", NULL};
	struct ps_tracer *t = NULL;
	int fd = open("/dev/null", O_WRONLY), saved;
	fflush(stdout);
	saved = dup(1);
	dup2(fd, 1);
	close(fd);
	ps_tracer_spawn(&t, argv, &o, &r, &err);
	dup2(saved, 1);
	close(saved);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_INT(ps_tracer_load_bias(t, "libc.so.6"), PS_TRACER_NO_BIAS);
	uint64_t bias = ps_tracer_load_bias(t, NULL);
	CHECK_EQ_INT(ps_tracer_bp_add(t, nm_addr(bin, "main") + bias, PS_BP_FUNC, &err), 0);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 0);
	CHECK_EQ_INT(r.hits, 1);
	uint64_t lb = ps_tracer_load_bias(t, "libc.so.6");
	CHECK(lb != PS_TRACER_NO_BIAS && lb != 0);
	/* the tracer and the symbol reader agree on load biases (one rule: core/binary/procmaps.c) */
	char mpath[1024];
	uint64_t sb = 1;
	CHECK_EQ_INT(ps_sym_find_mapping(ps_tracer_pid(t), "libc.so.6", mpath, sizeof mpath, &sb, &err), 0);
	CHECK_EQ_INT(sb, lb);
	CHECK_EQ_INT(ps_sym_find_mapping(ps_tracer_pid(t), NULL, mpath, sizeof mpath, &sb, &err), 0);
	CHECK_EQ_INT(sb, bias);
	/* the libc function printf's output goes through */
	char cmd[200], line[256], sym[200], type;
	unsigned long long a, fa = 0;
	snprintf(cmd, sizeof cmd, "nm -D /lib/x86_64-linux-gnu/libc.so.6");
	FILE *f = popen(cmd, "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%llx %c %199s", &a, &type, sym) == 3 && (!strcmp(sym, "printf") || !strncmp(sym, "printf@@", 8)))
			fa = a;
	if (f)
		pclose(f);
	if (!fa) {
		ps_tracer_free(t);
		SKIP("no printf in libc's dynamic symbols");
	}
	int id = ps_tracer_bp_add(t, fa + lb, PS_BP_FUNC, &err);
	CHECK_EQ_INT(id, 1);
	if (id < 0)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 1);
	CHECK_EQ_INT(r.hits, 2);
	CHECK_EQ_INT(r.rets, 1);
	CHECK_EQ_INT(r.unwound, 0);
	int code;
	ps_tracer_status(t, NULL, &code, NULL);
	CHECK_EQ_INT(code, 3);
	ps_tracer_free(t);
}

/* ps_tracer_interrupt() makes run return 0; running again goes on to the end. */
static struct ps_tracer *intr_t;
static int intr_hit(void *ud, pid_t tid, int bp, const struct user_regs_struct *regs, uint64_t *cookie)
{
	struct rec *r = ud;

	(void)tid, (void)bp, (void)regs, (void)cookie;
	if (++r->hits == 10)
		ps_tracer_interrupt(intr_t);
	return 0;
}

TEST(tracer_interrupt)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(0);
	struct ps_tracer_ops o = ops;

	if (!bin)
		SKIP("cc failed");
	o.hit = intr_hit;
	char *argv[] = {(char *)bin, "calls", "100", NULL};
	int fd = open("/dev/null", O_WRONLY), saved;
	fflush(stdout);
	saved = dup(1);
	dup2(fd, 1);
	close(fd);
	ps_tracer_spawn(&intr_t, argv, &o, &r, &err);
	dup2(saved, 1);
	close(saved);
	CHECK(intr_t != NULL);
	if (!intr_t)
		return;
	CHECK(ps_tracer_bp_add(intr_t, nm_addr(bin, "fx_work"), PS_BP_FUNC, &err) >= 0);
	CHECK_EQ_INT(ps_tracer_run(intr_t, &err), 0);
	CHECK_EQ_INT(r.hits, 10);
	CHECK_EQ_INT(ps_tracer_run(intr_t, &err), 1);
	CHECK_EQ_INT(r.hits, 100);
	CHECK_EQ_INT(ps_tracer_run(intr_t, &err), 1);
	ps_tracer_free(intr_t);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A deadline ends the run on time although no stop comes (the program sleeps in usleep and
   has no breakpoint); the program is still there afterwards. */
TEST(tracer_deadline_without_stops)
{
	static struct rec r;
	struct ps_error err = {0};
	const char *bin = fx(0);
	struct timespec now;

	if (!bin)
		SKIP("cc failed");
	char *argv[] = {(char *)bin, "slow", "100000", NULL};
	struct ps_tracer *t = spawn_out(argv, NULL, &r, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t t0 = mono_ms(), start_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	ps_tracer_set_deadline(t, start_ns + 300000000u);
	CHECK_EQ_INT(ps_tracer_run(t, &err), 0);
	uint64_t took = mono_ms() - t0;
	CHECK(took >= 290 && took < 3000);
	CHECK(kill(ps_tracer_pid(t), 0) == 0);
	ps_tracer_free(t);
}
