// examples/cxx.cpp - C++ symbols: a method in a namespace and an overloaded function.
//
// Each of LOOPS iterations calls geo::Shape::area(double) once,
// geo::measure(int) once and geo::measure(double) once, so each of the three
// is entered LOOPS times. Mangled names:
//   _ZN3geo5Shape4areaEd   geo::Shape::area(double)
//   _ZN3geo7measureEi      geo::measure(int)
//   _ZN3geo7measureEd      geo::measure(double)
//
//   usage: cxx [LOOPS]     default 1000
#include <cstdio>
#include <cstdlib>

namespace geo
{

class Shape
{
      public:
	explicit Shape(double scale) : scale_(scale)
	{
	}
	__attribute__((noinline)) double area(double side);

      private:
	double scale_;
};

double Shape::area(double side)
{
	__asm__ volatile("" ::: "memory");
	return scale_ * side * side;
}

__attribute__((noinline)) long measure(int n)
{
	__asm__ volatile("" ::: "memory");
	return n * 2L;
}

__attribute__((noinline)) double measure(double x)
{
	__asm__ volatile("" ::: "memory");
	return x / 2;
}

} // namespace geo

int main(int argc, char **argv)
{
	int loops = argc > 1 ? std::atoi(argv[1]) : 1000;
	geo::Shape square(1.0);
	double total = 0;

	for (int i = 0; i < loops; i++) {
		total += square.area(i);
		total += geo::measure(i);
		total += geo::measure(i * 0.5);
	}
	std::printf("total = %.1f\n", total);
	return 0;
}
