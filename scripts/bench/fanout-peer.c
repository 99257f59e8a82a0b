/*
 * The peers syncctl bench fanout is compared with, in one small C program (no libraries):
 *
 *   fanout-peer redis SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]
 *       One writer sends COUNT transactions MULTI{SET bench:k v; PUBLISH bench v} to Redis, PIPELINE
 *       in flight (or one at a time, paced at RATE per second), to SUBSCRIBERS subscriber processes.
 *   fanout-peer syncd SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]
 *       The same against syncd, with C clients on both ends (no Swift client library): each subscriber
 *       process says Hello and watches bench/ from now; one writer connection sends COUNT puts of
 *       bench/<i % 1000>, PIPELINE in flight (or one at a time, paced at RATE per second). Frames and
 *       the few protobuf messages needed are encoded by hand (docs/PROTOCOL.md). Each subscriber checks
 *       that it gets every write exactly once, in revision order (a RESYNC counts as a miss).
 *   fanout-peer writers redis|syncd SOCKET CONNECTIONS COUNT PIPELINE VALUE_SIZE
 *       Durable writes from C writers, no subscribers: CONNECTIONS writer processes each connect
 *       (syncd: and say Hello), then together send COUNT writes over 1,000 keys, PIPELINE in flight
 *       on each connection: SET bench:<i % 1000> to Redis, puts of bench/<i % 1000> to syncd (a JSON
 *       string value). Prints {"writes_per_sec":…} from the start signal to the last answer.
 *   fanout-peer raw DIR SUBSCRIBERS COUNT BATCH VALUE_SIZE
 *       The floor under any daemon: one process writes COUNT pre-encoded frames of VALUE_SIZE bytes
 *       to SUBSCRIBERS subscriber processes over Unix sockets, BATCH frames per write.
 *   fanout-peer relay DIR SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]
 *       The floor under any daemon that keeps syncd's contract (a change is committed to SQLite
 *       before anyone sees it): a relay process reads the writer's messages (PIPELINE in flight, or
 *       one at a time paced at RATE per second), commits those of one read in one SQLite transaction,
 *       one row each (WAL, synchronous=NORMAL, the unix-excl VFS, prepared statements: syncd's
 *       settings), then forwards them to SUBSCRIBERS subscriber processes and acknowledges them to
 *       the writer. No decoding, no index, no state in memory: what is left is SQLite and the
 *       sockets. Build with -lsqlite3.
 *   fanout-peer e2e-writer SOCKET KEY COUNT RATE
 *       The writing side of `feature-bench e2e --writer`: COUNT puts of KEY, one at a time paced at
 *       RATE per second (asleep in between, where the other modes spin), each
 *       {"sentAtNanos":<CLOCK_MONOTONIC ns>,"sequence":<1…>} made just before it is sent; prints 0
 *       (no request of it is written by a Swift client's reading thread).
 *
 * Each value starts with the writer's CLOCK_MONOTONIC time, so each subscriber measures send to
 * receipt (for syncd the value is a JSON string of VALUE_SIZE bytes: a quote, the time, the sequence,
 * padding, a quote). Prints {"writes_per_sec":…,"delivered_per_sec":…,"p50_us":…,"p99_us":…,"p999_us":…}
 * and exits 1 if any subscriber missed a message (or, for syncd, got one twice or out of order).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

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

/* A writer's turn to send: PIPELINE in flight unpaced, or one at a time, each at its due time. */
struct pace {
    uint64_t interval, next, in_flight;
};

static struct pace pace_start(int pipeline, int rate) {
    struct pace pace = {.interval = rate > 0 ? 1000000000ull / (uint64_t)rate : 0, .next = now_ns()};
    pace.in_flight = rate > 0 ? 1 : (uint64_t)pipeline;
    return pace;
}

/* Whether message `sent` may go now (waiting for its time when paced). */
static int pace_turn(struct pace *pace, uint64_t sent, uint64_t acknowledged, uint64_t count) {
    if (sent >= count || sent - acknowledged >= pace->in_flight) return 0;
    if (pace->interval > 0) {
        while (now_ns() < pace->next) {}
        pace->next += pace->interval;
    }
    return 1;
}

/* What a syncd subscriber saw besides deliveries (all 0 in the other modes). */
struct anomalies {
    uint64_t duplicated, out_of_order, resyncs, foreign;
    int ended;
};

/* What a subscriber reports to the parent through a pipe. */
struct report {
    uint64_t received;
    uint64_t finished_ns;
    uint64_t cpu_us; /* the subscriber's own CPU (user + system) from its first read to its last */
    struct anomalies anomalies;
    uint32_t histogram[BUCKETS];
};

/* This process's CPU time so far (user + system, every thread), in µs. */
static uint64_t own_cpu_us(int who) {
    struct rusage usage;
    getrusage(who, &usage);
    return (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000u + (uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

static void record(struct report *report, const char *value) {
    uint64_t micros = (now_ns() - sent_at(value)) / 1000;
    report->histogram[micros < BUCKETS ? micros : BUCKETS - 1]++;
    report->received++;
}

/* Reads until `count` values of `value_size` arrived, each found after `marker` in the stream. */
static void subscribe_loop(int fd, uint64_t count, size_t value_size, const char *marker, struct report *report) {
    size_t capacity = 1 << 20, filled = 0, marker_length = strlen(marker);
    char *buffer = malloc(capacity);
    uint64_t cpu_started = own_cpu_us(RUSAGE_SELF);
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
    report->cpu_us = own_cpu_us(RUSAGE_SELF) - cpu_started;
    free(buffer);
}

/* ---- syncd: frames (4-byte big-endian length, then one protobuf message) and hand-coded protobuf ---- */

static size_t varint_size(uint64_t value) {
    size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

static char *put_varint(char *out, uint64_t value) {
    while (value >= 0x80) {
        *out++ = (char)(value | 0x80);
        value >>= 7;
    }
    *out++ = (char)value;
    return out;
}

/* A length-delimited field's tag and length; the caller writes the `length` bytes after it. */
static char *put_header(char *out, unsigned field, size_t length) {
    out = put_varint(out, (uint64_t)field << 3 | 2);
    return put_varint(out, length);
}

static char *put_bytes(char *out, unsigned field, const char *data, size_t length) {
    out = put_header(out, field, length);
    memcpy(out, data, length);
    return out + length;
}

static char *put_frame_length(char *out, size_t length) {
    out[0] = (char)(length >> 24);
    out[1] = (char)(length >> 16);
    out[2] = (char)(length >> 8);
    out[3] = (char)length;
    return out + 4;
}

/* ClientFrame { hello = 1: Hello { protocol_version = 1: 1, client_name = 2 } }. Returns its length. */
static size_t encode_hello(char *out, const char *name) {
    size_t name_length = strlen(name), hello = 2 + 1 + varint_size(name_length) + name_length;
    size_t frame = 1 + varint_size(hello) + hello;
    char *at = put_frame_length(out, frame);
    at = put_header(at, 1, hello);
    *at++ = 0x08; /* protocol_version */
    *at++ = 0x01;
    at = put_bytes(at, 2, name, name_length);
    return (size_t)(at - out);
}

/* ClientFrame { request = 2: Request { id = 1, watch = 7: WatchRequest { prefixes = 1 } } }, start unset:
 * every change after the current revision. */
static size_t encode_watch(char *out, uint64_t id, const char *prefix) {
    size_t prefix_length = strlen(prefix), watch = 1 + varint_size(prefix_length) + prefix_length;
    size_t request = 1 + varint_size(id) + 1 + varint_size(watch) + watch, frame = 1 + varint_size(request) + request;
    char *at = put_frame_length(out, frame);
    at = put_header(at, 2, request);
    *at++ = 0x08;
    at = put_varint(at, id);
    at = put_header(at, 7, watch);
    at = put_bytes(at, 1, prefix, prefix_length);
    return (size_t)(at - out);
}

/* ClientFrame { request = 2: Request { id = 1, put = 3: PutRequest { key = 1, value = 2 } } }. */
static size_t encode_put(char *out, uint64_t id, const char *key, const char *value, size_t value_length) {
    size_t key_length = strlen(key);
    size_t put = 1 + varint_size(key_length) + key_length + 1 + varint_size(value_length) + value_length;
    size_t request = 1 + varint_size(id) + 1 + varint_size(put) + put, frame = 1 + varint_size(request) + request;
    char *at = put_frame_length(out, frame);
    at = put_header(at, 2, request);
    *at++ = 0x08;
    at = put_varint(at, id);
    at = put_header(at, 3, put);
    at = put_bytes(at, 1, key, key_length);
    at = put_bytes(at, 2, value, value_length);
    return (size_t)(at - out);
}

/* A protobuf message being read: one field at a time, unknown fields skipped by the caller. */
struct message {
    const uint8_t *at, *end;
};

struct field {
    unsigned number, wire_type;
    uint64_t varint;             /* wire type 0 */
    const uint8_t *data;         /* wire type 2 */
    size_t length;
};

static int get_varint(struct message *message, uint64_t *value) {
    *value = 0;
    for (int shift = 0; shift < 64 && message->at < message->end; shift += 7) {
        uint8_t byte = *message->at++;
        *value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return 1;
    }
    return 0;
}

/* The next field: 1, 0 at the end of the message. Exits on malformed input. */
static int next_field(struct message *message, struct field *field) {
    if (message->at >= message->end) return 0;
    uint64_t tag, length;
    if (!get_varint(message, &tag)) goto bad;
    field->number = (unsigned)(tag >> 3);
    field->wire_type = (unsigned)(tag & 7);
    switch (field->wire_type) {
    case 0:
        if (!get_varint(message, &field->varint)) goto bad;
        return 1;
    case 1:
    case 5: {
        size_t size = field->wire_type == 1 ? 8 : 4;
        if ((size_t)(message->end - message->at) < size) goto bad;
        message->at += size;
        return 1;
    }
    case 2:
        if (!get_varint(message, &length) || length > (uint64_t)(message->end - message->at)) goto bad;
        field->data = message->at;
        field->length = (size_t)length;
        message->at += length;
        return 1;
    }
bad:
    fprintf(stderr, "fanout-peer: malformed protobuf from syncd\n");
    exit(2);
}

static struct message submessage(const struct field *field) {
    return (struct message){field->data, field->data + field->length};
}

/* Error { code = 1, message = 2 }, printed. */
static void print_error(const char *context, const struct field *error) {
    struct message message = submessage(error);
    struct field field;
    uint64_t code = 0;
    const uint8_t *text = (const uint8_t *)"";
    size_t text_length = 0;
    while (next_field(&message, &field)) {
        if (field.number == 1 && field.wire_type == 0) code = field.varint;
        if (field.number == 2 && field.wire_type == 2) text = field.data, text_length = field.length;
    }
    fprintf(stderr, "fanout-peer: %s: syncd error %llu: %.*s\n", context, (unsigned long long)code, (int)text_length, (const char *)text);
}

/* One syncd connection's incoming frames. */
struct connection {
    int fd;
    uint8_t *buffer;
    size_t capacity, start, filled;
};

/* One read from the socket: 1 if bytes came, 0 at the end of the stream, -1 on a receive timeout. */
static int fill(struct connection *connection) {
    if (connection->start > 0) {
        memmove(connection->buffer, connection->buffer + connection->start, connection->filled - connection->start);
        connection->filled -= connection->start;
        connection->start = 0;
    }
    if (connection->filled == connection->capacity) {
        connection->capacity *= 2;
        connection->buffer = realloc(connection->buffer, connection->capacity);
        if (!connection->buffer) die("realloc");
    }
    for (;;) {
        ssize_t got = read(connection->fd, connection->buffer + connection->filled, connection->capacity - connection->filled);
        if (got > 0) {
            connection->filled += (size_t)got;
            return 1;
        }
        if (got == 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
        die("read");
    }
}

/* A whole ServerFrame already received, if there is one (no read). */
static int take_frame(struct connection *connection, struct message *frame) {
    size_t available = connection->filled - connection->start;
    if (available < 4) return 0;
    const uint8_t *head = connection->buffer + connection->start;
    size_t length = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3];
    if (available - 4 < length) {
        while (connection->capacity < length + 4) connection->capacity *= 2;
        connection->buffer = realloc(connection->buffer, connection->capacity);
        if (!connection->buffer) die("realloc");
        return 0;
    }
    frame->at = connection->buffer + connection->start + 4;
    frame->end = frame->at + length;
    connection->start += 4 + length;
    return 1;
}

/* Blocks until a whole frame is there: 1, 0 at the end of the stream, -1 on a receive timeout. */
static int next_frame(struct connection *connection, struct message *frame) {
    for (;;) {
        if (take_frame(connection, frame)) return 1;
        int got = fill(connection);
        if (got <= 0) return got;
    }
}

static struct connection *syncd_connect(const char *path, const char *name) {
    struct connection *connection = calloc(1, sizeof(struct connection));
    connection->fd = connect_unix(path);
    connection->capacity = 1 << 16;
    connection->buffer = malloc(connection->capacity);
    char hello[256];
    write_all(connection->fd, hello, encode_hello(hello, name));
    struct message frame;
    struct field field;
    if (next_frame(connection, &frame) != 1) die("syncd closed the connection before its Welcome");
    while (next_field(&frame, &field)) {
        if (field.number == 1 && field.wire_type == 2) return connection; /* welcome */
        if (field.number == 4 && field.wire_type == 2) print_error("hello", &field), exit(2);
    }
    fprintf(stderr, "fanout-peer: syncd answered the Hello with something other than a Welcome\n");
    exit(2);
}

/* Response { id = 1, error = 2, … }: its id, 0 and a message if it is an error. */
static int response_ok(const struct field *response, uint64_t *id, unsigned *result, const char *context) {
    struct message message = submessage(response);
    struct field field;
    int ok = 1;
    *id = 0;
    *result = 0;
    while (next_field(&message, &field)) {
        if (field.number == 1 && field.wire_type == 0) *id = field.varint;
        else if (field.wire_type == 2 && field.number >= 2) {
            *result = field.number;
            if (field.number == 2) print_error(context, &field), ok = 0;
        }
    }
    return ok;
}

static uint64_t hex_at(const char *text) {
    char hex[17];
    memcpy(hex, text, 16);
    hex[16] = 0;
    return strtoull(hex, NULL, 16);
}

/* The value of a syncd write: a JSON string of `size` bytes, "<time><sequence>xxx…". */
static void make_json_value(char *value, size_t size, uint64_t sequence) {
    value[0] = '"';
    make_value(value + 1, size - 2, sequence);
    value[size - 1] = '"';
}

/* A syncd subscriber: watches bench/ (the watch is live when this returns), then call syncd_subscribe_loop. */
static struct connection *syncd_watch(const char *path) {
    struct connection *connection = syncd_connect(path, "fanout-peer subscriber");
    char request[64];
    write_all(connection->fd, request, encode_watch(request, 1, "bench/"));
    struct message frame;
    struct field field;
    for (;;) {
        if (next_frame(connection, &frame) != 1) die("syncd closed the connection before the watch response");
        while (next_field(&frame, &field)) {
            if (field.number == 4 && field.wire_type == 2) print_error("watch", &field), exit(2);
            if (field.number != 2 || field.wire_type != 2) continue;
            uint64_t id;
            unsigned result;
            if (!response_ok(&field, &id, &result, "watch")) exit(2);
            if (id == 1 && result == 8) return connection;
        }
    }
}

/* The changes of one WatchEvent: records each write in `report`, checks it against what came before. */
static int syncd_event(const struct field *event, uint64_t count, size_t value_size, uint8_t *seen, uint64_t *last_revision,
                       uint64_t *last_sequence, struct report *report, struct anomalies *anomalies) {
    struct message message = submessage(event);
    struct field field;
    uint64_t kind = 0, revision = 0; /* a missing kind is CHANGES (0) */
    int finished = 0;
    /* Kind and revision first: protobuf allows any field order. */
    while (next_field(&message, &field)) {
        if (field.number == 2 && field.wire_type == 0) kind = field.varint;
        if (field.number == 3 && field.wire_type == 0) revision = field.varint;
    }
    if (kind == 2) return 0; /* PROGRESS */
    if (kind == 4) {         /* ENDED */
        anomalies->ended = 1;
        return 1;
    }
    if (revision <= *last_revision) anomalies->out_of_order++;
    *last_revision = revision;
    if (kind != 0) anomalies->resyncs++; /* SNAPSHOT or RESYNC: writes in between were skipped */
    message = submessage(event);
    while (next_field(&message, &field)) {
        if (field.number != 4 || field.wire_type != 2) continue;
        struct message change = submessage(&field), entry = {NULL, NULL};
        struct field part;
        uint64_t type = 0;
        while (next_field(&change, &part)) {
            if (part.number == 1 && part.wire_type == 0) type = part.varint;
            if (part.number == 2 && part.wire_type == 2) entry = submessage(&part);
        }
        const char *value = NULL;
        size_t value_length = 0;
        while (entry.at && next_field(&entry, &part)) {
            if (part.number == 2 && part.wire_type == 2) value = (const char *)part.data, value_length = part.length;
        }
        if (type != 0 || value_length != value_size || value[0] != '"') {
            anomalies->foreign++;
            continue;
        }
        uint64_t sequence = hex_at(value + 17);
        if (sequence >= count) {
            anomalies->foreign++;
            continue;
        }
        if (sequence == count - 1) finished = 1; /* the last write: everything before it came, or never will */
        if (kind != 0) continue;                 /* a resync's entries are not deliveries */
        if (seen[sequence]) {
            anomalies->duplicated++;
            continue;
        }
        if (*last_sequence != UINT64_MAX && sequence < *last_sequence) anomalies->out_of_order++;
        *last_sequence = sequence;
        seen[sequence] = 1;
        record(report, value + 1);
    }
    return finished;
}

/* Reads events until the last write arrived, the watch ended, or nothing came for 60 s. */
static void syncd_subscribe_loop(struct connection *connection, uint64_t count, size_t value_size, struct report *report,
                                 struct anomalies *anomalies) {
    struct timeval second = {.tv_sec = 1};
    setsockopt(connection->fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof(second));
    uint8_t *seen = calloc(count, 1);
    uint64_t last_revision = 0, last_sequence = UINT64_MAX, last_change = now_ns(), cpu_started = own_cpu_us(RUSAGE_SELF);
    int finished = 0;
    while (!finished) {
        struct message frame;
        int got = next_frame(connection, &frame);
        if (got == 0) {
            fprintf(stderr, "fanout-peer: syncd closed a subscriber's connection\n");
            break;
        }
        if (got < 0) {
            if (now_ns() - last_change > 60000000000ull) {
                fprintf(stderr, "fanout-peer: a subscriber got no change for 60 s\n");
                break;
            }
            continue;
        }
        struct field field;
        while (next_field(&frame, &field)) {
            if (field.number == 4 && field.wire_type == 2) {
                print_error("subscriber", &field);
                finished = 1;
            } else if (field.number == 3 && field.wire_type == 2) {
                uint64_t before = report->received;
                finished |= syncd_event(&field, count, value_size, seen, &last_revision, &last_sequence, report, anomalies);
                if (report->received != before) last_change = now_ns();
            }
        }
    }
    if (anomalies->ended) fprintf(stderr, "fanout-peer: syncd ended a subscriber's watch\n");
    report->finished_ns = now_ns();
    report->cpu_us = own_cpu_us(RUSAGE_SELF) - cpu_started;
    free(seen);
}

/* The writer: COUNT puts, `pipeline` in flight, or one at a time paced at `rate` per second. */
static void syncd_write(struct connection *connection, uint64_t count, int pipeline, size_t value_size, int rate, pid_t *children,
                        int subscribers) {
    size_t frame_bound = value_size + 64;
    char *batch = malloc((size_t)pipeline * frame_bound), *value = malloc(value_size), key[32];
    uint64_t sent = 0, acknowledged = 0;
    struct pace pace = pace_start(pipeline, rate);
    while (acknowledged < count) {
        size_t length = 0;
        while (pace_turn(&pace, sent, acknowledged, count)) {
            snprintf(key, sizeof(key), "bench/%d", (int)(sent % 1000));
            make_json_value(value, value_size, sent);
            length += encode_put(batch + length, sent + 1, key, value, value_size);
            sent++;
        }
        if (length > 0) write_all(connection->fd, batch, length);
        int got = fill(connection);
        if (got <= 0) {
            fprintf(stderr, "fanout-peer: syncd closed the writer's connection\n");
            goto fail;
        }
        struct message frame;
        while (take_frame(connection, &frame)) {
            struct field field;
            while (next_field(&frame, &field)) {
                if (field.number == 4 && field.wire_type == 2) {
                    print_error("writer", &field);
                    goto fail;
                }
                if (field.number != 2 || field.wire_type != 2) continue;
                uint64_t id;
                unsigned result;
                if (!response_ok(&field, &id, &result, "put")) goto fail;
                if (result != 4 || id < 1 || id > sent) {
                    fprintf(stderr, "fanout-peer: unexpected response %llu (result field %u)\n", (unsigned long long)id, result);
                    goto fail;
                }
                acknowledged++;
            }
        }
    }
    free(batch);
    free(value);
    return;
fail:
    for (int index = 0; index < subscribers; index++) kill(children[index], SIGTERM);
    exit(2);
}

/* ---- e2e-writer: a C writer for feature-bench e2e's Swift reducer ---- */

static int e2e_write(const char *path, const char *key, uint64_t count, int rate) {
    struct connection *connection = syncd_connect(path, "fanout-peer e2e-writer");
    char frame[256], value[96];
    /* Asleep between writes, as the Swift writer is (the other modes spin to their due time). */
    uint64_t interval = 1000000000ull / (uint64_t)rate, due = now_ns();
    for (uint64_t sent = 0; sent < count; sent++, due += interval) {
        struct timespec until = {.tv_sec = (time_t)(due / 1000000000ull), .tv_nsec = (long)(due % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
        int length = snprintf(value, sizeof(value), "{\"sentAtNanos\":%llu,\"sequence\":%llu}", (unsigned long long)now_ns(),
                              (unsigned long long)(sent + 1));
        write_all(connection->fd, frame, encode_put(frame, sent + 1, key, value, (size_t)length));
        int answered = 0;
        while (!answered) {
            struct message message;
            if (next_frame(connection, &message) != 1) {
                fprintf(stderr, "fanout-peer: syncd closed the e2e writer's connection\n");
                return 2;
            }
            struct field field;
            while (next_field(&message, &field)) {
                if (field.number == 4 && field.wire_type == 2) {
                    print_error("e2e writer", &field);
                    return 2;
                }
                if (field.number != 2 || field.wire_type != 2) continue;
                uint64_t id;
                unsigned result;
                if (!response_ok(&field, &id, &result, "put")) return 2;
                answered = id == sent + 1;
            }
        }
    }
    printf("0\n");
    return 0;
}

/* ---- writers: durable writes from several C connections, no subscribers ---- */

/* One Redis connection's share: COUNT SETs, `pipeline` in flight, each answered "+OK\r\n". */
static void redis_put_loop(int fd, uint64_t count, int pipeline, size_t value_size) {
    char *batch = malloc((size_t)pipeline * (value_size + 64)), *value = malloc(value_size), replies[1 << 16];
    uint64_t sent = 0, acknowledged = 0;
    while (acknowledged < count) {
        size_t length = 0;
        while (sent < count && sent - acknowledged < (uint64_t)pipeline) {
            make_value(value, value_size, sent);
            length += (size_t)sprintf(batch + length, "*3\r\n$3\r\nSET\r\n$9\r\nbench:%03d\r\n$%zu\r\n", (int)(sent % 1000),
                                      value_size);
            memcpy(batch + length, value, value_size);
            length += value_size;
            memcpy(batch + length, "\r\n", 2);
            length += 2;
            sent++;
        }
        if (length > 0) write_all(fd, batch, length);
        ssize_t got = read(fd, replies, sizeof(replies));
        if (got <= 0) die("redis reply");
        for (ssize_t index = 0; index < got; index++) {
            if (replies[index] == '-') {
                fprintf(stderr, "fanout-peer: Redis refused a SET: %.*s\n", (int)(got - index), replies + index);
                exit(2);
            }
            if (replies[index] == '\n') acknowledged++; /* each "+OK\r\n" ends with the only newline */
        }
    }
    free(batch);
    free(value);
}

/* CONNECTIONS writer processes, connected first, then started together; the writes they made per second. */
static int run_writers(int to_redis, const char *socket_path, int connections, uint64_t count, int pipeline, size_t value_size) {
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) die("pipe");
    pid_t *children = calloc((size_t)connections, sizeof(pid_t));
    for (int index = 0; index < connections; index++) {
        uint64_t share = count / (uint64_t)connections + ((uint64_t)index < count % (uint64_t)connections ? 1 : 0);
        if ((children[index] = fork()) != 0) {
            if (children[index] < 0) die("fork");
            continue;
        }
        close(go[1]);
        struct connection *connection = to_redis ? NULL : syncd_connect(socket_path, "fanout-peer writer");
        int fd = to_redis ? connect_unix(socket_path) : connection->fd;
        write_all(ready[1], "r", 1);
        char byte;
        if (read(go[0], &byte, 1) < 0) die("start");
        if (to_redis) redis_put_loop(fd, share, pipeline, value_size);
        else syncd_write(connection, share, pipeline, value_size, 0, NULL, 0);
        _exit(0);
    }
    close(ready[1]); /* a writer that dies before it is ready ends the wait below */
    for (int index = 0; index < connections; index++) {
        char byte;
        if (read(ready[0], &byte, 1) != 1) {
            fprintf(stderr, "fanout-peer: a writer could not connect\n");
            return 2;
        }
    }
    uint64_t started = now_ns();
    close(go[1]); /* every writer's read of the start signal returns now */
    int failed = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    uint64_t finished = now_ns();
    if (failed) {
        fprintf(stderr, "fanout-peer: a writer failed\n");
        return 2;
    }
    /* The writers' own CPU: every child's user and system time, reaped above. */
    printf("{\"writes_per_sec\":%.0f,\"cpu_us\":%llu}\n", (double)count / ((double)(finished - started) / 1e9),
           (unsigned long long)own_cpu_us(RUSAGE_CHILDREN));
    return 0;
}

/* ---- relay: commit to SQLite, then forward (messages are '#' and VALUE_SIZE bytes, as raw's) ---- */

static void sqlite_check(sqlite3 *database, int status, const char *what) {
    if (status == SQLITE_OK || status == SQLITE_DONE) return;
    fprintf(stderr, "fanout-peer: relay: %s: %s\n", what, sqlite3_errmsg(database));
    exit(2);
}

/* Accepts SUBSCRIBERS connections, then the writer's; exits once COUNT messages went through. */
static void relay_serve(int listener, const char *directory, int subscribers, uint64_t count, size_t value_size) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/relay.sqlite", directory);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int index = 0; index < 3; index++) {
        char file[4200];
        snprintf(file, sizeof(file), "%s%s", path, suffixes[index]);
        unlink(file);
    }
    sqlite3 *database;
    if (sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "unix-excl") != SQLITE_OK) {
        fprintf(stderr, "fanout-peer: relay: cannot open %s\n", path);
        exit(2);
    }
    sqlite_check(database,
                 sqlite3_exec(database,
                              "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                              "CREATE TABLE changes(revision INTEGER PRIMARY KEY, key TEXT NOT NULL, value BLOB NOT NULL)",
                              NULL, NULL, NULL),
                 "schema");
    sqlite3_stmt *insert, *begin, *commit;
    sqlite_check(database, sqlite3_prepare_v2(database, "INSERT INTO changes VALUES (?, ?, ?)", -1, &insert, NULL), "prepare");
    sqlite_check(database, sqlite3_prepare_v2(database, "BEGIN IMMEDIATE", -1, &begin, NULL), "prepare");
    sqlite_check(database, sqlite3_prepare_v2(database, "COMMIT", -1, &commit, NULL), "prepare");

    int *clients = calloc((size_t)subscribers, sizeof(int));
    for (int index = 0; index < subscribers; index++) clients[index] = accept(listener, NULL, NULL);
    int writer = accept(listener, NULL, NULL);
    size_t frame = value_size + 1, capacity = frame * 1024, filled = 0;
    char *buffer = malloc(capacity), *acks = malloc(1024), key[32];
    memset(acks, 'k', 1024);
    uint64_t revision = 0;
    while (revision < count) {
        ssize_t got = read(writer, buffer + filled, capacity - filled);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            die("relay read");
        }
        filled += (size_t)got;
        size_t whole = filled / frame;
        if (whole == 0) continue;
        sqlite_check(database, sqlite3_step(begin), "begin");
        sqlite3_reset(begin);
        for (size_t index = 0; index < whole; index++) {
            revision++;
            snprintf(key, sizeof(key), "bench/%d", (int)(revision % 1000));
            sqlite3_bind_int64(insert, 1, (sqlite3_int64)revision);
            sqlite3_bind_text(insert, 2, key, -1, SQLITE_STATIC);
            sqlite3_bind_blob(insert, 3, buffer + index * frame + 1, (int)value_size, SQLITE_STATIC);
            sqlite_check(database, sqlite3_step(insert), "insert");
            sqlite3_reset(insert);
        }
        sqlite_check(database, sqlite3_step(commit), "commit");
        sqlite3_reset(commit);
        for (int index = 0; index < subscribers; index++) write_all(clients[index], buffer, whole * frame);
        write_all(writer, acks, whole);
        memmove(buffer, buffer + whole * frame, filled - whole * frame);
        filled -= whole * frame;
    }
    sqlite3_finalize(insert);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(database);
}

/* The relay's writer: '#' and a value per message, PIPELINE in flight or one at a time at RATE. */
static void relay_write(int fd, uint64_t count, int pipeline, size_t value_size, int rate) {
    size_t frame = value_size + 1;
    char *batch = malloc((size_t)pipeline * frame), acks[1024];
    uint64_t sent = 0, acknowledged = 0;
    struct pace pace = pace_start(pipeline, rate);
    while (acknowledged < count) {
        size_t length = 0;
        while (pace_turn(&pace, sent, acknowledged, count)) {
            batch[length] = '#';
            make_value(batch + length + 1, value_size, sent);
            length += frame;
            sent++;
        }
        if (length > 0) write_all(fd, batch, length);
        ssize_t got = read(fd, acks, sizeof(acks));
        if (got <= 0) die("relay acknowledgement");
        acknowledged += (uint64_t)got;
    }
    free(batch);
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
    if (argc == 8 && strcmp(argv[1], "writers") == 0) {
        int to_redis = strcmp(argv[2], "redis") == 0, connections = atoi(argv[4]), pipeline = atoi(argv[6]);
        uint64_t count = strtoull(argv[5], NULL, 10);
        size_t value_size = (size_t)atoi(argv[7]);
        if ((!to_redis && strcmp(argv[2], "syncd") != 0) || connections < 1 || count < 1 || pipeline < 1 || value_size < 34) {
            fprintf(stderr, "fanout-peer: writers redis|syncd SOCKET CONNECTIONS COUNT PIPELINE VALUE_SIZE (connections, count and\n"
                            "pipeline at least 1, value size at least 34)\n");
            return 2;
        }
        return run_writers(to_redis, argv[3], connections, count, pipeline, value_size);
    }
    if (argc == 6 && strcmp(argv[1], "e2e-writer") == 0) {
        uint64_t count = strtoull(argv[4], NULL, 10);
        int rate = atoi(argv[5]);
        if (count < 1 || rate < 1 || strlen(argv[3]) > 128) {
            fprintf(stderr, "fanout-peer: e2e-writer SOCKET KEY COUNT RATE (count and rate at least 1, a key of at most 128 bytes)\n");
            return 2;
        }
        return e2e_write(argv[2], argv[3], count, rate);
    }
    if (argc < 7) {
        fprintf(stderr, "usage: fanout-peer redis SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]\n"
                        "       fanout-peer syncd SOCKET SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]\n"
                        "       fanout-peer writers redis|syncd SOCKET CONNECTIONS COUNT PIPELINE VALUE_SIZE\n"
                        "       fanout-peer raw DIR SUBSCRIBERS COUNT BATCH VALUE_SIZE\n"
                        "       fanout-peer relay DIR SUBSCRIBERS COUNT PIPELINE VALUE_SIZE [RATE]\n"
                        "       fanout-peer e2e-writer SOCKET KEY COUNT RATE\n");
        return 2;
    }
    int redis = strcmp(argv[1], "redis") == 0, syncd = strcmp(argv[1], "syncd") == 0, raw = strcmp(argv[1], "raw") == 0;
    int relay = strcmp(argv[1], "relay") == 0;
    if (!redis && !syncd && !raw && !relay) {
        fprintf(stderr, "fanout-peer: the mode is redis, syncd, raw or relay\n");
        return 2;
    }
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
    if (syncd && value_size < 34) {
        fprintf(stderr, "fanout-peer: value size at least 34 for syncd (a JSON string: quotes, time, sequence)\n");
        return 2;
    }

    char raw_path[108];
    int listener = -1;
    if (raw || relay) {
        snprintf(raw_path, sizeof(raw_path), "%s/%s.sock", where, raw ? "raw-fanout" : "relay");
        unlink(raw_path);
        listener = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof(address.sun_path), "%s", raw_path);
        if (bind(listener, (struct sockaddr *)&address, sizeof(address)) != 0) die("bind");
        if (listen(listener, subscribers + 1) != 0) die("listen");
    }
    /* The relay accepts the subscribers first, then the writer, which connects once they are ready. */
    pid_t relay_pid = 0;
    if (relay) {
        if ((relay_pid = fork()) < 0) die("fork");
        if (relay_pid == 0) {
            relay_serve(listener, where, subscribers, count, value_size);
            _exit(0);
        }
    }

    /* One results pipe per subscriber: a report is larger than the pipe writes that stay whole. */
    int ready[2], (*results)[2] = calloc((size_t)subscribers, sizeof(int[2]));
    pid_t *children = calloc((size_t)subscribers, sizeof(pid_t));
    if (pipe(ready) != 0) die("pipe");
    for (int index = 0; index < subscribers; index++) {
        if (pipe(results[index]) != 0) die("pipe");
        if ((children[index] = fork()) != 0) {
            if (children[index] < 0) die("fork");
            continue;
        }
        struct report *report = calloc(1, sizeof(struct report));
        if (syncd) {
            struct connection *connection = syncd_watch(where);
            write_all(ready[1], "r", 1);
            syncd_subscribe_loop(connection, count, value_size, report, &report->anomalies);
            write_all(results[index][1], (const char *)report, sizeof(struct report));
            _exit(0);
        }
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
    if (raw) {
        raw_clients = calloc((size_t)subscribers, sizeof(int));
        for (int index = 0; index < subscribers; index++) raw_clients[index] = accept(listener, NULL, NULL);
    }
    for (int index = 0; index < subscribers; index++) {
        char byte;
        if (read(ready[0], &byte, 1) != 1) die("ready");
    }

    /* The syncd writer says Hello before the clock starts. */
    struct connection *writer = syncd ? syncd_connect(where, "fanout-peer writer") : NULL;
    uint64_t started = now_ns(), writer_cpu_started = own_cpu_us(RUSAGE_SELF);
    char *value = malloc(value_size);
    if (syncd) {
        syncd_write(writer, count, pipeline, value_size, rate, children, subscribers);
    } else if (relay) {
        relay_write(connect_unix(raw_path), count, pipeline, value_size, rate);
    } else if (redis) {
        int fd = connect_unix(where);
        char *batch = malloc((size_t)pipeline * (value_size * 2 + 256));
        char replies[1 << 16];
        uint64_t sent = 0, acknowledged = 0;
        struct pace pace = pace_start(pipeline, rate);
        size_t reply_bytes = 0;
        while (acknowledged < count) {
            size_t length = 0;
            while (pace_turn(&pace, sent, acknowledged, count)) {
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
    uint64_t writes_done = now_ns(), writer_cpu_us = own_cpu_us(RUSAGE_SELF) - writer_cpu_started, subscriber_cpu_us = 0;

    uint64_t *histogram = calloc(BUCKETS, sizeof(uint64_t)), delivered = 0, last_finish = writes_done;
    struct report *report = malloc(sizeof(struct report));
    int complete = 1;
    struct anomalies anomalies = {0};
    for (int index = 0; index < subscribers; index++) {
        size_t got = 0;
        while (got < sizeof(struct report)) {
            ssize_t n = read(results[index][0], (char *)report + got, sizeof(struct report) - got);
            if (n <= 0) die("results");
            got += (size_t)n;
        }
        if (report->received != count) complete = 0;
        delivered += report->received;
        subscriber_cpu_us += report->cpu_us;
        anomalies.duplicated += report->anomalies.duplicated;
        anomalies.out_of_order += report->anomalies.out_of_order;
        anomalies.resyncs += report->anomalies.resyncs;
        anomalies.foreign += report->anomalies.foreign;
        anomalies.ended |= report->anomalies.ended;
        if (report->finished_ns > last_finish) last_finish = report->finished_ns;
        for (int bucket = 0; bucket < BUCKETS; bucket++) histogram[bucket] += report->histogram[bucket];
    }
    while (wait(NULL) > 0) {}
    if (raw || relay) unlink(raw_path);

    printf("{\"writes_per_sec\":%.0f,\"delivered_per_sec\":%.0f,\"p50_us\":%d,\"p99_us\":%d,\"p999_us\":%d,"
           "\"writer_cpu_us\":%llu,\"subscriber_cpu_us\":%llu}\n",
           (double)count / ((double)(writes_done - started) / 1e9), (double)delivered / ((double)(last_finish - started) / 1e9),
           percentile(histogram, delivered, 0.5), percentile(histogram, delivered, 0.99), percentile(histogram, delivered, 0.999),
           (unsigned long long)writer_cpu_us, (unsigned long long)subscriber_cpu_us);
    if (!complete) {
        fprintf(stderr, "fanout-peer: a subscriber missed messages (%llu of %llu delivered)\n", (unsigned long long)delivered,
                (unsigned long long)(count * (uint64_t)subscribers));
    }
    int wrong = anomalies.duplicated || anomalies.out_of_order || anomalies.resyncs || anomalies.ended;
    if (wrong) {
        fprintf(stderr, "fanout-peer: delivery was wrong: %llu duplicated, %llu out of order, %llu resyncs%s\n",
                (unsigned long long)anomalies.duplicated, (unsigned long long)anomalies.out_of_order,
                (unsigned long long)anomalies.resyncs, anomalies.ended ? ", a watch ended" : "");
    }
    if (!complete || wrong) return 1;
    if (anomalies.foreign)
        fprintf(stderr, "fanout-peer: ignored %llu changes under bench/ that this run did not write\n",
                (unsigned long long)anomalies.foreign);
    return 0;
}
