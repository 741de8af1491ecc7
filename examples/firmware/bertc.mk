# bertc.mk — bertc's core compiled with your toolchain and CPU flags, for a
# firmware's Makefile to include (docs/porting.md). The host's libbertc.a is
# no use on a microcontroller, so `make install` puts the freestanding core's
# sources (no stdio, no heap, no threads: docs/embedded.md) next to this
# file, in src/. Include it after setting CC, AR and CFLAGS:
#
#     CC     = arm-none-eabi-gcc
#     AR     = arm-none-eabi-ar
#     CFLAGS = -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2 \
#              -ffunction-sections -fdata-sections
#     include $(PREFIX)/share/bertc/firmware/bertc.mk
#
#     firmware.elf: main.c model.c model_data.c $(BERTC_LIB)
#             $(CC) $(BERTC_CFLAGS) $(CFLAGS) ... $^ -lm -o $@
#
# It defines
#   BERTC_CFLAGS  the language and defines the core needs and -I to its
#                 headers (bertc.h): compile your files that include them
#                 with these too
#   BERTC_LIB     the core as a static library, built in BERTC_BUILD
#                 (default build/bertc) by `make $(BERTC_LIB)`
# and takes BERTC_WARN (default -Wall -Wextra) for the warnings. Its rules
# are targets too: name your default target before the include (as
# cortex-m4f/Makefile does) or set .DEFAULT_GOAL.

BERTC_FIRMWARE := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
BERTC_SRC   ?= $(BERTC_FIRMWARE)/src
BERTC_BUILD ?= build/bertc
BERTC_WARN  ?= -Wall -Wextra
# -std=c11, not gnu11: ISO mode never contracts a*b+c into a fused
# multiply-add, so the firmware computes what the host computes.
BERTC_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -DBERTC_FREESTANDING -DBERTC_NO_THREADS \
                $(BERTC_WARN) -I$(BERTC_SRC)

BERTC_CORE_SRC := $(wildcard $(BERTC_SRC)/tensor/*.c $(BERTC_SRC)/autograd/*.c \
                             $(BERTC_SRC)/nn/*.c $(BERTC_SRC)/zoo/*/*.c)
BERTC_CORE_OBJ := $(BERTC_CORE_SRC:$(BERTC_SRC)/%.c=$(BERTC_BUILD)/%.o)
BERTC_LIB      := $(BERTC_BUILD)/libbertc.a

ifeq ($(BERTC_CORE_SRC),)
  $(error bertc.mk: no core sources under $(BERTC_SRC); is this an installed bertc (make install)?)
endif

# -MMD: each object lists the headers it read (a .d file), so a newer
# install rebuilds what changed.
$(BERTC_BUILD)/%.o: $(BERTC_SRC)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BERTC_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(BERTC_CORE_OBJ:.o=.d)

$(BERTC_LIB): $(BERTC_CORE_OBJ)
	rm -f $@
	$(AR) rcs $@ $^
