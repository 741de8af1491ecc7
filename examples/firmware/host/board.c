/* host/board.c — board.h on a PC, so main.c and the exported model run on
 * the host too and print the lines the firmware must print: a host build of
 * the same sources is the reference a firmware's logits are compared with
 * (docs/porting.md). The host counts no ticks and measures no RAM. */
#include "board.h"

const uint32_t board_tick_hz = 0;

uint32_t board_ticks(void)
{
    return 0;
}

void board_spin(uint32_t n)
{
    for (volatile uint32_t i = n; i != 0; i--)
        ;
}

size_t board_stack_used(void)
{
    return 0;
}

size_t board_heap_used(void)
{
    return 0;
}

size_t board_static_bytes(void)
{
    return 0;
}
