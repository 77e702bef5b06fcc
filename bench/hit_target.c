/* bench/hit_target.c - the program the hit benchmarks trace: a function called N times.
 *
 *   hit_target [N] [hit|movslq|nop5|call]
 *
 * hit (the default, bench/ptrace_hit): built with -fcf-protection=full so hit() starts with
 * endbr64, which both tracers can step over without running anything out of line.
 * movslq (bench/uprobe_floor): hit_movslq() starts with `movslq %edi,%rax`, an ordinary
 * compiler-made entry that a breakpoint cannot simply skip.
 * nop5 (bench/uprobe_floor): hit_nop5() starts with the 5-byte NOP 0f 1f 44 00 00, the entry
 * gcc -pg -mfentry -mnop-mcount makes, which the kernel's uprobes turn into a call.
 * call (bench/uprobe_floor): hit_call() starts as hit_movslq() does but calls a function: not a
 * leaf, so the uprobe catcher catches its returns at its ret, not with a uretprobe.
 * They are written in assembly so the compiler puts nothing (no endbr64) before those bytes.
 * With $BENCH_TARGET_CPU naming a file, it writes its time on the CPU there at its end
 * (bench/default_path: the program's share of a hit's cost, the kernel's probe handling in it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t __attribute__((noinline)) hit(uint64_t x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

long hit_movslq(int x);
long hit_nop5(int x);
long hit_call(int x);

__asm__(".text\n"
	".globl hit_movslq\n"
	".type hit_movslq, @function\n"
	"hit_movslq:\n"
	"\tmovslq %edi, %rax\n"
	"\tleaq 1(%rax,%rax,2), %rax\n"
	"\tret\n"
	".size hit_movslq, .-hit_movslq\n"
	".globl hit_nop5\n"
	".type hit_nop5, @function\n"
	"hit_nop5:\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tmovslq %edi, %rax\n"
	"\tleaq 1(%rax,%rax,2), %rax\n"
	"\tret\n"
	".size hit_nop5, .-hit_nop5\n"
	".type hit_times3, @function\n"
	"hit_times3:\n"
	"\tleaq 1(%rdi,%rdi,2), %rax\n"
	"\tret\n"
	".size hit_times3, .-hit_times3\n"
	".globl hit_call\n"
	".type hit_call, @function\n"
	"hit_call:\n"
	"\tmovslq %edi, %rax\n"
	"\tmovq %rax, %rdi\n"
	"\tcall hit_times3\n"
	"\tret\n"
	".size hit_call, .-hit_call\n");

/* This process's time on the CPU (ns, /proc/self/schedstat) into the file $BENCH_TARGET_CPU. */
static void report_cpu(void)
{
	const char *path = getenv("BENCH_TARGET_CPU");
	unsigned long long ns;
	FILE *in, *out;

	if (!path || !*path || !(in = fopen("/proc/self/schedstat", "r")))
		return;
	if (fscanf(in, "%llu", &ns) == 1 && (out = fopen(path, "w"))) {
		fprintf(out, "%llu\n", ns);
		fclose(out);
	}
	fclose(in);
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000, s = 0;
	const char *mode = argc > 2 ? argv[2] : "hit";

	if (!strcmp(mode, "movslq"))
		for (uint64_t i = 0; i < n; i++)
			s += (uint64_t)hit_movslq((int)i);
	else if (!strcmp(mode, "call"))
		for (uint64_t i = 0; i < n; i++)
			s += (uint64_t)hit_call((int)i);
	else if (!strcmp(mode, "nop5"))
		for (uint64_t i = 0; i < n; i++)
			s += (uint64_t)hit_nop5((int)i);
	else
		for (uint64_t i = 0; i < n; i++)
			s += hit(i);
	report_cpu();
	return s == 42;
}
