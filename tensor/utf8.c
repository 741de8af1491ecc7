/* tensor/utf8.c — UTF-8, once for the whole library: the strict decoder the
 * tokenizer, the vocabulary trainer and the JSON parser read text with, the
 * validator of whole strings (JSON, safetensors names, --input lines,
 * dataset cells), the encoder (JSON \u escapes, normalised text) and the
 * byte order mark the text readers skip. Strict means RFC 3629 as Python's
 * decoder reads it: no overlong forms, no surrogates, nothing past U+10FFFF. */
#include "tensor/tensor.h"

#include <string.h>

static bool cont(const uint8_t *s, size_t len, size_t i)
{
    return i < len && (s[i] & 0xC0) == 0x80;
}

int bertc_utf8_decode(const uint8_t *s, size_t len, size_t i, uint32_t *cp)
{
    uint8_t b = s[i];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    /* The second byte's allowed range excludes overlong forms (E0, F0),
     * surrogates (ED) and code points past U+10FFFF (F4): RFC 3629 table
     * 3-7. C0, C1 and F5..FF start nothing. */
    int n = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (n == 0 || !cont(s, len, i + 1))
        return 0;
    uint8_t b1 = s[i + 1];
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 > 0x9F) || (b == 0xF0 && b1 < 0x90) ||
        (b == 0xF4 && b1 > 0x8F))
        return 0;
    uint32_t c = b & (0xFF >> (n + 1));
    for (int k = 1; k < n; k++) {
        if (!cont(s, len, i + (size_t)k))
            return 0;
        c = (c << 6) | (s[i + (size_t)k] & 0x3F);
    }
    *cp = c;
    return n;
}

bool bertc_utf8_valid(const char *s, size_t len)
{
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        int n = bertc_utf8_decode((const uint8_t *)s, len, i, &cp);
        if (n == 0)
            return false;
        i += (size_t)n;
    }
    return true;
}

int bertc_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    static const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (int k = n - 1; k > 0; k--) {   /* six bits a byte, the last ones first */
        out[k] = (char)(0x80 | (cp & 0x3F));
        cp >>= 6;
    }
    out[0] = (char)(lead[n] | cp);
    return n;
}

size_t bertc_utf8_bom(const char *s, size_t len)
{
    return len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}
