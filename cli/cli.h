/* cli/cli.h — subcommands of `bertc` that live in their own files. */
#ifndef BERTC_CLI_H
#define BERTC_CLI_H

/* bertc attention ...: argv[0] is "attention". Returns the exit status. */
int cmd_attention(int argc, char **argv);

#endif
