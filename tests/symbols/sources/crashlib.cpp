// Test program for symbolication: a crash in an inlined function, called from another image.
// The "@name" markers name the lines the tests expect; keep them on the statements they mark.
extern "C" int printf(const char *, ...);
namespace hawk {
static inline __attribute__((always_inline)) int deep(int *p, int v) {
    *p = v * 3;  // @deep-store
    return *p + 1;
}
__attribute__((noinline)) int crash_here(int *p, int v) {
    int r = deep(p, v);  // @call-deep
    printf("%d\n", r);
    return r;
}
}  // namespace hawk
extern "C" __attribute__((noinline)) int lib_entry(int *p, int v) {
    return hawk::crash_here(p, v) + 1;  // @call-crash-here
}
