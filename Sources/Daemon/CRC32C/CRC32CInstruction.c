#include "CRC32CInstruction.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

int crc32c_instruction_available(void) {
    static int known = -1;
    if (known < 0) {
        unsigned int eax, ebx, ecx, edx;
        known = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) ? 1 : 0;
    }
    return known;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_instruction_checksum(const void *bytes, size_t count, uint32_t crc) {
    const unsigned char *next = bytes;
    uint64_t state = ~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        state = __builtin_ia32_crc32di(state, word);
        next += 8;
        count -= 8;
    }
    uint32_t tail = (uint32_t)state;
    while (count > 0) {
        tail = __builtin_ia32_crc32qi(tail, *next);
        next++;
        count--;
    }
    return ~tail;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7) /* the kernel's bit for the CRC extension (bits/hwcap.h) */
#endif

int crc32c_instruction_available(void) {
    static int known = -1;
    if (known < 0) known = (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
    return known;
}

__attribute__((target("crc"))) uint32_t crc32c_instruction_checksum(const void *bytes, size_t count, uint32_t crc) {
    const unsigned char *next = bytes;
    uint32_t state = ~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        state = __builtin_arm_crc32cd(state, word);
        next += 8;
        count -= 8;
    }
    while (count > 0) {
        state = __builtin_arm_crc32cb(state, *next);
        next++;
        count--;
    }
    return ~state;
}

#else

int crc32c_instruction_available(void) { return 0; }

uint32_t crc32c_instruction_checksum(const void *bytes, size_t count, uint32_t crc) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
