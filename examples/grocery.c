/* examples/grocery.c - three ways to update every product of a grocery.
 *
 * The same work done three ways (after the callgrind seed's Rust program):
 *   update_1        one thread updates each product (name, price, vendor, site);
 *   update_2_thread two threads, each over one half of the one array of structs
 *                   (the halves meet in one cache line: false sharing at the seam);
 *   update_3_thread two threads over the structs split in two: one updates the
 *                   names and prices (struct sub1), the other the vendors and sites
 *                   (struct sub2); no line is written by both.
 * Each function is a region; the two threads of update_2 and of update_3 each
 * enter their function once, so per thread = the total over 2 hits (--per-hit):
 *   perfsh compare --engine callgrind -e Ir,D1mr,DLmr --per-hit \
 *       -r update_1 -r update_2_thread -r update_3_thread ./examples/grocery
 * Under callgrind the instructions of update_2_thread's two threads add up to those
 * of update_1 and a job's indirection per product (< 1% more), those of
 * update_3_thread to those of update_1 and a test per struct (< 5% more).
 * update_2 and update_3 run a strategy in the main thread, from the first thread's
 * creation to the last join: their wall time (wall_ns) is the strategy's:
 *   perfsh compare -e task-clock -r update_1 -r update_2 -r update_3 ./examples/grocery
 *
 *   usage: grocery [N]     N products, default 100000
 *   prints: checksum = ...
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN 24

struct product {
	char name[LEN];
	double price;
	char vendor[LEN];
	char site[LEN];
};

struct sub1 {
	char name[LEN];
	double price;
};

struct sub2 {
	char vendor[LEN];
	char site[LEN];
};

/* What one thread updates: n products, or n sub1 or n sub2 structs. */
struct job {
	struct product *p;
	struct sub1 *s1;
	struct sub2 *s2;
	size_t n;
};

static void process_text(char *s)
{
	size_t i;

	for (i = 0; i < LEN - 1 && s[i]; i++)
		s[i] = (char)('a' + (s[i] - 'a' + 1) % 26);
}

static void process_price(double *price)
{
	*price = *price * 1.01 + 0.5;
}

static void update_product(struct product *p)
{
	process_text(p->name);
	process_price(&p->price);
	process_text(p->vendor);
	process_text(p->site);
}

void __attribute__((noinline)) update_1(struct product *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		update_product(&p[i]);
}

void *__attribute__((noinline)) update_2_thread(void *arg)
{
	struct job *j = arg;
	size_t i;

	for (i = 0; i < j->n; i++)
		update_product(&j->p[i]);
	return NULL;
}

void *__attribute__((noinline)) update_3_thread(void *arg)
{
	struct job *j = arg;
	size_t i;

	for (i = 0; i < j->n; i++) {
		if (j->s1) {
			process_text(j->s1[i].name);
			process_price(&j->s1[i].price);
		} else {
			process_text(j->s2[i].vendor);
			process_text(j->s2[i].site);
		}
	}
	return NULL;
}

/* Run fn on two threads with jobs a and b; exits on failure. */
static void two_threads(void *(*fn)(void *), struct job *a, struct job *b)
{
	pthread_t t1, t2;

	if (pthread_create(&t1, NULL, fn, a) || pthread_create(&t2, NULL, fn, b)) {
		fprintf(stderr, "grocery: pthread_create failed\n");
		exit(1);
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
}

/* update_2 and update_3: each strategy from the first thread's creation to the last join, so
 * their wall time (wall_ns of the region) is the strategy's. */
void __attribute__((noinline)) update_2(struct product *p, size_t n)
{
	struct job h1 = {.p = p, .n = n / 2}, h2 = {.p = p + n / 2, .n = n - n / 2};

	two_threads(update_2_thread, &h1, &h2);
}

void __attribute__((noinline)) update_3(struct sub1 *s1, struct sub2 *s2, size_t n)
{
	struct job j1 = {.s1 = s1, .n = n}, j2 = {.s2 = s2, .n = n};

	two_threads(update_3_thread, &j1, &j2);
}

static void fill(char *s, size_t i, const char *what)
{
	snprintf(s, LEN, "%s%zu", what, i);
	for (; *s; s++)
		if (*s < 'a' || *s > 'z')
			*s = (char)('a' + *s % 26);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000, i;
	struct product *p = calloc(n ? n : 1, sizeof(*p));
	struct sub1 *s1 = calloc(n ? n : 1, sizeof(*s1));
	struct sub2 *s2 = calloc(n ? n : 1, sizeof(*s2));
	double sum = 0;

	if (!p || !s1 || !s2) {
		fprintf(stderr, "grocery: out of memory for %zu products\n", n);
		return 1;
	}
	for (i = 0; i < n; i++) {
		fill(p[i].name, i, "name");
		fill(p[i].vendor, i, "vendor");
		fill(p[i].site, i, "site");
		p[i].price = (double)i;
		memcpy(s1[i].name, p[i].name, LEN);
		s1[i].price = p[i].price;
		memcpy(s2[i].vendor, p[i].vendor, LEN);
		memcpy(s2[i].site, p[i].site, LEN);
	}

	update_1(p, n);

	update_2(p, n);
	update_3(s1, s2, n);

	for (i = 0; i < n; i++)
		sum += p[i].price + s1[i].price + p[i].name[0] + s2[i].site[0];
	printf("checksum = %.1f\n", sum);
	free(p);
	free(s1);
	free(s2);
	return 0;
}
