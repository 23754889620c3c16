/* The system-call floor of a stale-safe Sieve lookup: list a table's folders and stat every data
 * file, as sieve's local listing does (os.scandir, then one fstatat per file relative to its
 * folder), in C with nothing else around it. Hidden ('.', '_') entries are skipped like the
 * listing skips them. Prints the median of REPEATS walks in ms and the number of files.
 *
 *   cc -O2 -o stat_floor stat_floor.c && ./stat_floor /path/to/table [repeats]
 *
 * sieve_scale.py --lookups compiles and runs it when a C compiler is on the PATH.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long walk(int dirfd) {
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return 0;
    }
    long n = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_') continue;
        if (e->d_type == DT_DIR) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY);
            if (sub >= 0) n += walk(sub);
        } else if (fstatat(dirfd, e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
            n += 1;
        }
    }
    closedir(d);
    return n;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TABLE_ROOT [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 15;
    if (repeats < 1) repeats = 1;
    double *ms = malloc(sizeof(double) * repeats);
    long files = 0;
    for (int r = 0; r < repeats; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int fd = open(argv[1], O_RDONLY | O_DIRECTORY);
        if (fd < 0) {
            perror(argv[1]);
            return 1;
        }
        files = walk(fd);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms[r] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    qsort(ms, repeats, sizeof(double), cmp);
    printf("%.3f %ld\n", ms[repeats / 2], files);
    free(ms);
    return 0;
}
