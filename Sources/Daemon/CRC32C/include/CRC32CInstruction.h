#ifndef CRC32C_INSTRUCTION_H
#define CRC32C_INSTRUCTION_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C with the processor's own instruction: SSE 4.2's crc32 on x86-64, the CRC extension's
 * crc32c on ARMv8. Swift cannot reach either, hence this small C target. */

/* Whether this processor has the instruction (checked once, then remembered). */
int crc32c_instruction_available(void);

/* The CRC-32C of `count` bytes at `bytes`, continuing from `crc` (the checksum of what came
 * before them; 0 to start). Only where crc32c_instruction_available() says so. */
uint32_t crc32c_instruction_checksum(const void *bytes, size_t count, uint32_t crc);

#endif
