// Test program for symbolication: the executable whose frame calls into libcrash.dylib.
int lib_entry(int *p, int v);
__attribute__((noinline)) int caller(int v) {
    int r = lib_entry((int *)0, v);  // @call-lib-entry
    return r + 7;
}
int main(int argc, char **argv) {
    (void)argv;
    return caller(argc);
}
