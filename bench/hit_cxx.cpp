// bench/hit_cxx.cpp - bench/default_path's C++ target: a function in a namespace called N times.
//
//   hit_cxx [N] [plain|nop5]
//
// plain calls hits::plain(int) (_ZN4hits5plainEi), an ordinary entry as g++ -O2 makes it
// (movslq %edi,%rdi); nop5 calls hits::nop5(int), whose first bytes are the 5-byte NOP
// 0f 1f 44 00 00 (an asm statement first in a frameless leaf; g++'s own -mnop-mcount entry is
// refused under Debian's default PIE). Built with -fcf-protection=none so no endbr64 comes
// before it; bench/default_path checks the bytes. With $BENCH_TARGET_CPU naming a file, it
// writes its time on the CPU there at its end (the program's share of a hit's cost).
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hits {

long __attribute__((noinline)) plain(int x)
{
	asm volatile("" ::: "memory");
	return static_cast<long>(x) * 3 + 1;
}

long __attribute__((noinline)) nop5(int x)
{
	asm volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00" ::: "memory");
	return static_cast<long>(x) * 3 + 1;
}

} // namespace hits

// This process's time on the CPU (ns, /proc/self/schedstat) into the file $BENCH_TARGET_CPU.
static void report_cpu()
{
	const char *path = std::getenv("BENCH_TARGET_CPU");
	unsigned long long ns;
	std::FILE *in, *out;

	if (!path || !*path || !(in = std::fopen("/proc/self/schedstat", "r")))
		return;
	if (std::fscanf(in, "%llu", &ns) == 1 && (out = std::fopen(path, "w"))) {
		std::fprintf(out, "%llu\n", ns);
		std::fclose(out);
	}
	std::fclose(in);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 10000, s = 0;
	bool nop = argc > 2 && !std::strcmp(argv[2], "nop5");

	for (unsigned long i = 0; i < n; i++)
		s += static_cast<unsigned long>(nop ? hits::nop5(static_cast<int>(i)) : hits::plain(static_cast<int>(i)));
	report_cpu();
	return s == 42;
}
