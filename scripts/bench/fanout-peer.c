/*
 * The peers syncctl bench fanout is compared with, in one small C program (no libraries):
 *
 *   fanout-peer redis SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]
 *       One writer sends COUNT transactions MULTI{SET bench:k v; PUBLISH bench v} to Redis, PIPELINE
 *       in flight (or one at a time, paced at RATE per second), to SUBSCRIBERS subscriber processes.
 *   fanout-peer raw DIR SUBSCRIBERS COUNT BATCH VALUE_SIZE
 *       The floor under any daemon: one process writes COUNT pre-encoded frames of VALUE_SIZE bytes
 *       to SUBSCRIBERS subscriber processes over Unix sockets, BATCH frames per write.
 *
 * Each value starts with the writer's CLOCK_MONOTONIC time, so each subscriber measures send to
 * receipt. Prints {"writes_per_sec":…,"delivered_per_sec":…,"p50_us":…,"p99_us":…,"p999_us":…}
 * and exits 1 if any subscriber missed a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS 200000 /* 1 µs buckets up to 200 ms; slower lands in the last one */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static int connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof(address.sun_path), "%s", path);
    for (int attempt = 0; attempt < 200; attempt++) {
        if (connect(fd, (struct sockaddr *)&address, sizeof(address)) == 0) return fd;
        usleep(10000);
    }
    die("connect");
    return -1;
}

static void write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t written = write(fd, data, length);
        if (written < 0) {
            if (errno == EINTR) continue;
            die("write");
        }
        data += written;
        length -= (size_t)written;
    }
}

/* The value: send time and sequence, padded to `size` bytes. */
static void make_value(char *value, size_t size, uint64_t sequence) {
    memset(value, 'x', size);
    char head[48];
    int length = snprintf(head, sizeof(head), "%016llx%016llx", (unsigned long long)now_ns(), (unsigned long long)sequence);
    memcpy(value, head, (size_t)length);
}

static uint64_t sent_at(const char *value) {
    char hex[17];
    memcpy(hex, value, 16);
    hex[16] = 0;
    return strtoull(hex, NULL, 16);
}

/* What a subscriber reports to the parent through a pipe. */
struct report {
    uint64_t received;
    uint64_t finished_ns;
    uint32_t histogram[BUCKETS];
};

static void record(struct report *report, const char *value) {
    uint64_t micros = (now_ns() - sent_at(value)) / 1000;
    report->histogram[micros < BUCKETS ? micros : BUCKETS - 1]++;
    report->received++;
}

/* Reads until `count` values of `value_size` arrived, each found after `marker` in the stream. */
static void subscribe_loop(int fd, uint64_t count, size_t value_size, const char *marker, struct report *report) {
    size_t capacity = 1 << 20, filled = 0, marker_length = strlen(marker);
    char *buffer = malloc(capacity);
    while (report->received < count) {
        ssize_t got = read(fd, buffer + filled, capacity - filled);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            break;
        }
        filled += (size_t)got;
        size_t offset = 0;
        for (;;) {
            char *found = memmem(buffer + offset, filled - offset, marker, marker_length);
            if (!found) break;
            size_t start = (size_t)(found - buffer) + marker_length;
            if (start + value_size > filled) break;
            record(report, buffer + start);
            offset = start + value_size;
        }
        /* Keep a partial message: from the last unconsumed byte that could start a marker. */
        size_t keep_from = offset;
        if (filled - keep_from > marker_length + value_size + 64) keep_from = filled - (marker_length + value_size + 64);
        memmove(buffer, buffer + keep_from, filled - keep_from);
        filled -= keep_from;
    }
    report->finished_ns = now_ns();
    free(buffer);
}

static int percentile(const uint64_t *histogram, uint64_t total, double p) {
    uint64_t target = (uint64_t)((double)total * p), seen = 0;
    for (int bucket = 0; bucket < BUCKETS; bucket++) {
        seen += histogram[bucket];
        if (seen > target) return bucket;
    }
    return BUCKETS - 1;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: fanout-peer redis SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]\n"
                        "       fanout-peer raw DIR SUBSCRIBERS COUNT BATCH VALUE_SIZE\n");
        return 2;
    }
    int redis = strcmp(argv[1], "redis") == 0;
    const char *where = argv[2];
    int subscribers = atoi(argv[3]);
    uint64_t count = strtoull(argv[4], NULL, 10);
    int pipeline = atoi(argv[5]);
    size_t value_size = (size_t)atoi(argv[6]);
    int rate = argc > 7 ? atoi(argv[7]) : 0;
    if (subscribers < 1 || count < 1 || pipeline < 1 || value_size < 32) {
        fprintf(stderr, "fanout-peer: subscribers, count and pipeline must be at least 1, value size at least 32\n");
        return 2;
    }

    char raw_path[108];
    int listener = -1;
    if (!redis) {
        snprintf(raw_path, sizeof(raw_path), "%s/raw-fanout.sock", where);
        unlink(raw_path);
        listener = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof(address.sun_path), "%s", raw_path);
        if (bind(listener, (struct sockaddr *)&address, sizeof(address)) != 0) die("bind");
        if (listen(listener, subscribers) != 0) die("listen");
    }

    /* One results pipe per subscriber: a report is larger than the pipe writes that stay whole. */
    int ready[2], (*results)[2] = calloc((size_t)subscribers, sizeof(int[2]));
    if (pipe(ready) != 0) die("pipe");
    for (int index = 0; index < subscribers; index++) {
        if (pipe(results[index]) != 0) die("pipe");
        if (fork() != 0) continue;
        struct report *report = calloc(1, sizeof(struct report));
        int fd = connect_unix(redis ? where : raw_path);
        char marker[64];
        if (redis) {
            const char *command = "*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nbench\r\n";
            write_all(fd, command, strlen(command));
            char confirmation[64];
            size_t got = 0; /* "*3\r\n$9\r\nsubscribe\r\n$5\r\nbench\r\n:1\r\n" */
            while (got < 34) {
                ssize_t n = read(fd, confirmation + got, 34 - got);
                if (n <= 0) die("subscribe");
                got += (size_t)n;
            }
            snprintf(marker, sizeof(marker), "$5\r\nbench\r\n$%zu\r\n", value_size);
        } else {
            snprintf(marker, sizeof(marker), "#");
        }
        write_all(ready[1], "r", 1);
        subscribe_loop(fd, count, value_size, marker, report);
        write_all(results[index][1], (const char *)report, sizeof(struct report));
        _exit(0);
    }

    int *raw_clients = NULL;
    if (!redis) {
        raw_clients = calloc((size_t)subscribers, sizeof(int));
        for (int index = 0; index < subscribers; index++) raw_clients[index] = accept(listener, NULL, NULL);
    }
    for (int index = 0; index < subscribers; index++) {
        char byte;
        if (read(ready[0], &byte, 1) != 1) die("ready");
    }

    uint64_t started = now_ns();
    char *value = malloc(value_size);
    if (redis) {
        int fd = connect_unix(where);
        char *batch = malloc((size_t)pipeline * (value_size * 2 + 256));
        char replies[1 << 16];
        uint64_t sent = 0, acknowledged = 0;
        uint64_t interval = rate > 0 ? 1000000000ull / (uint64_t)rate : 0, next = now_ns();
        size_t reply_bytes = 0;
        while (acknowledged < count) {
            size_t length = 0;
            while (sent < count && sent - acknowledged < (uint64_t)(rate > 0 ? 1 : pipeline)) {
                if (rate > 0) {
                    while (now_ns() < next) {}
                    next += interval;
                }
                make_value(value, value_size, sent);
                length += (size_t)sprintf(batch + length, "*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$%d\r\nbench:%03d\r\n$%zu\r\n",
                                          9, (int)(sent % 1000), value_size);
                memcpy(batch + length, value, value_size);
                length += value_size;
                length += (size_t)sprintf(batch + length, "\r\n*3\r\n$7\r\nPUBLISH\r\n$5\r\nbench\r\n$%zu\r\n", value_size);
                memcpy(batch + length, value, value_size);
                length += value_size;
                length += (size_t)sprintf(batch + length, "\r\n*1\r\n$4\r\nEXEC\r\n");
                sent++;
            }
            if (length > 0) write_all(fd, batch, length);
            /* Each transaction ends with EXEC's reply, an array of two: "*2\r\n+OK\r\n:N\r\n". */
            ssize_t got = read(fd, replies + reply_bytes, sizeof(replies) - reply_bytes);
            if (got <= 0) die("redis reply");
            reply_bytes += (size_t)got;
            size_t offset = 0;
            char *found;
            while ((found = memmem(replies + offset, reply_bytes - offset, "*2\r\n+OK\r\n:", 10)) != NULL) {
                char *end = memmem(found + 10, reply_bytes - (size_t)(found + 10 - replies), "\r\n", 2);
                if (!end) break;
                acknowledged++;
                offset = (size_t)(end + 2 - replies);
            }
            memmove(replies, replies + offset, reply_bytes - offset);
            reply_bytes -= offset;
        }
    } else {
        size_t frame = value_size + 1;
        char *batch = malloc((size_t)pipeline * frame);
        for (uint64_t sent = 0; sent < count;) {
            size_t length = 0;
            for (int index = 0; index < pipeline && sent < count; index++, sent++) {
                batch[length] = '#';
                make_value(batch + length + 1, value_size, sent);
                length += frame;
            }
            for (int index = 0; index < subscribers; index++) write_all(raw_clients[index], batch, length);
        }
    }
    uint64_t writes_done = now_ns();

    uint64_t *histogram = calloc(BUCKETS, sizeof(uint64_t)), delivered = 0, last_finish = writes_done;
    struct report *report = malloc(sizeof(struct report));
    int complete = 1;
    for (int index = 0; index < subscribers; index++) {
        size_t got = 0;
        while (got < sizeof(struct report)) {
            ssize_t n = read(results[index][0], (char *)report + got, sizeof(struct report) - got);
            if (n <= 0) die("results");
            got += (size_t)n;
        }
        if (report->received != count) complete = 0;
        delivered += report->received;
        if (report->finished_ns > last_finish) last_finish = report->finished_ns;
        for (int bucket = 0; bucket < BUCKETS; bucket++) histogram[bucket] += report->histogram[bucket];
    }
    while (wait(NULL) > 0) {}
    if (!redis) unlink(raw_path);

    printf("{\"writes_per_sec\":%.0f,\"delivered_per_sec\":%.0f,\"p50_us\":%d,\"p99_us\":%d,\"p999_us\":%d}\n",
           (double)count / ((double)(writes_done - started) / 1e9), (double)delivered / ((double)(last_finish - started) / 1e9),
           percentile(histogram, delivered, 0.5), percentile(histogram, delivered, 0.99), percentile(histogram, delivered, 0.999));
    if (!complete) {
        fprintf(stderr, "fanout-peer: a subscriber missed messages (%llu of %llu delivered)\n", (unsigned long long)delivered,
                (unsigned long long)(count * (uint64_t)subscribers));
        return 1;
    }
    return 0;
}
