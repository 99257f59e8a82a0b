// What waking a process costs on this machine: the floor under any paced latency.
//
// A chain of HOPS processes, each blocked in `read` on a Unix socket; the parent writes a
// CLOCK_MONOTONIC timestamp COUNT times, 1,000 a second, each process passes it on, and the last
// prints how long the timestamps took to reach it (p50, p99).
//
//   cc -O2 -o /tmp/wake-chain scripts/bench/wake-chain.c && /tmp/wake-chain [COUNT] [HOPS]
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { max_hops = 16 };

static uint64_t monotonic_nanos(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static int ascending(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// Process `hop` of the chain: reads from its socket, passes each timestamp on, or (the last one)
// records and prints the latencies.
static void relay(int hop, int hops, int count, int links[][2]) {
    uint64_t *latencies = malloc(sizeof(uint64_t) * (size_t)count);
    for (int i = 0; i < count; i++) {
        uint64_t sent;
        if (read(links[hop][1], &sent, sizeof sent) != sizeof sent) exit(1);
        if (hop + 1 < hops) {
            if (write(links[hop + 1][0], &sent, sizeof sent) != sizeof sent) exit(1);
        } else {
            latencies[i] = monotonic_nanos() - sent;
        }
    }
    if (hop + 1 == hops) {
        qsort(latencies, (size_t)count, sizeof(uint64_t), ascending);
        printf("%d hand-off(s), %d messages at 1,000/s: p50 %.1f µs, p99 %.1f µs\n", hops, count,
               latencies[count / 2] / 1000.0, latencies[count * 99 / 100] / 1000.0);
    }
    exit(0);
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 3000;
    int hops = argc > 2 ? atoi(argv[2]) : 1;
    if (count < 1 || hops < 1 || hops > max_hops) {
        fprintf(stderr, "usage: wake-chain [COUNT >= 1] [HOPS 1...%d]\n", max_hops);
        return 2;
    }
    int links[max_hops][2];
    for (int hop = 0; hop < hops; hop++) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, links[hop]) != 0) {
            perror("socketpair");
            return 1;
        }
    }
    for (int hop = 0; hop < hops; hop++) {
        if (fork() == 0) relay(hop, hops, count, links);
    }
    struct timespec gap = {0, 1000000};
    for (int i = 0; i < count; i++) {
        nanosleep(&gap, NULL);
        uint64_t now = monotonic_nanos();
        if (write(links[0][0], &now, sizeof now) != sizeof now) return 1;
    }
    int failed = 0;
    for (int hop = 0; hop < hops; hop++) {
        int status;
        wait(&status);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    return failed;
}
