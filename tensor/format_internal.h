/*
 * tensor/format_internal.h — private to the library's own .c files, never
 * included by a public header nor installed. In a FREESTANDING build the
 * snprintf and vsnprintf calls of the file that includes it become bertc's
 * own (tensor/format.c), so the bare-metal core references no stdio function
 * (newlib's printf can malloc; tools/cross_test.sh checks with nm). Hosted
 * builds keep the C library's. Every library file that formats text and is
 * part of the FREESTANDING core includes it.
 */
#ifndef BERTC_FORMAT_INTERNAL_H
#define BERTC_FORMAT_INTERNAL_H

#include "tensor/tensor.h" /* and <stdio.h>, first: its declarations keep their names */

#if defined(BERTC_FREESTANDING)
#define snprintf bertc_snprintf
#define vsnprintf bertc_vsnprintf
#endif

#endif /* BERTC_FORMAT_INTERNAL_H */
