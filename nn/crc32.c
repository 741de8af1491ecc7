/* nn/crc32.c — CRC-32 as in zlib, PNG and gzip: the reflected polynomial
 * 0xEDB88320 (x^32 + x^26 + ... + 1 read bit-reversed), register preset to
 * all ones and inverted at the end. bertc stores it in the files it writes
 * (ST_CRC32_KEY in nn/safetensors.h) so that a flipped bit in the tensor
 * data is caught when the file is opened.
 *
 * Check value: bertc_st_crc32(0, "123456789", 9) == 0xCBF43926.
 *
 * Two forms, simple to fast (test_safetensors.c checks one against the other
 * on every byte value and on random data of every alignment):
 *   bertc_st_crc32_bitwise  the definition, one bit at a time (~170 MB/s)
 *   bertc_st_crc32          slicing-by-8: eight bytes per step through eight tables
 *                     (~2.5 GB/s; one table, a byte per step, ran at
 *                     ~500 MB/s, which doubled the time of a small
 *                     checkpoint write) */
#include "nn/safetensors.h"

#include "nn/crc32_tables.h"

/* Shift the register right; when the bit shifted out is 1, xor in the
 * polynomial. crc_tables[0][b] is eight of these steps starting from b. */
uint32_t bertc_st_crc32_bitwise(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return ~crc;
}

/* Little-endian by shifts: the same on any host. */
static uint32_t load_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One byte: the register's low byte meets the data byte, the table gives the
 * effect of the eight bit steps on the rest. */
static uint32_t crc_byte(uint32_t crc, uint8_t byte)
{
    return crc_tables[0][(crc ^ byte) & 0xFF] ^ (crc >> 8);
}

/* Eight bytes at once: CRC is linear, so the register after bytes b0..b7 is
 * the xor of each byte's effect pushed through the zero bytes that follow it,
 * which crc_tables[7 - i] holds for byte i (b0..b3 first xored with the
 * register, as in crc_byte). */
static uint32_t crc_8bytes(uint32_t crc, const uint8_t *p)
{
    uint32_t lo = crc ^ load_u32le(p), hi = load_u32le(p + 4);
    return crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^
           crc_tables[5][(lo >> 16) & 0xFF] ^ crc_tables[4][lo >> 24] ^
           crc_tables[3][hi & 0xFF] ^ crc_tables[2][(hi >> 8) & 0xFF] ^
           crc_tables[1][(hi >> 16) & 0xFF] ^ crc_tables[0][hi >> 24];
}

uint32_t bertc_st_crc32(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    crc = ~crc;
    for (; n >= 8; p += 8, n -= 8)
        crc = crc_8bytes(crc, p);
    for (; n > 0; p++, n--)
        crc = crc_byte(crc, *p);
    return ~crc;
}
